package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"director/errcode"
	"director/internal/testenv"
)

// zstdFrames splits a zstd stream into its frames' sizes, reading only the
// frame and block headers (RFC 8878, section 3.1).
func zstdFrames(t testing.TB, b []byte) []int {
	t.Helper()
	var sizes []int
	for len(b) > 0 {
		n, err := frameHeaderLen(b)
		if err != nil {
			t.Fatalf("frame %d: %v", len(sizes), err)
		}
		for last := false; !last; {
			var ok bool
			if _, last, n, ok = blockAt(b, n); !ok {
				t.Fatalf("frame %d: truncated block header", len(sizes))
			}
		}
		if b[4]&fhdChecksum != 0 {
			n += 4 // content checksum
		}
		if n > len(b) {
			t.Fatalf("frame %d: truncated", len(sizes))
		}
		sizes = append(sizes, n)
		b = b[n:]
	}
	return sizes
}

// A tree of several chunks makes an archive of one zstd frame, as
// `zstd -T0` does, with a window that holds a chunk; plain `tar --zstd`,
// Verify and Restore all read it whole.
func TestCreateArchiveIsOneFrame(t *testing.T) {
	src := filepath.Join(t.TempDir(), "profile")
	genTree(t, src, 3*frameChunk+frameChunk/2, 11)
	m, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})
	window, blocks := oneFrame(t, arc)
	if window != frameWindow(frameChunk) {
		t.Errorf("archive declares a %d-byte window, want %d", window, frameWindow(frameChunk))
	}
	if len(blocks) < 3*frameChunk/rawBlock {
		t.Errorf("archive of more than %d bytes of tar has %d blocks", 3*frameChunk, len(blocks))
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	must(t, err)
	defer dec.Close()
	out, err := dec.DecodeAll(arc, nil)
	must(t, err)
	if len(out)%512 != 0 || len(out) < int(m.RawSize) {
		t.Errorf("frame holds %d bytes of tar for %d bytes of files", len(out), m.RawSize)
	}

	if _, err := Verify(context.Background(), bytes.NewReader(arc), ExtractOptions{}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	want := dirState(t, src)
	if got := dirState(t, dst); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restored tree differs from the source (%d entries vs %d)", len(got), len(want))
	}

	_, err = exec.LookPath("zstd")
	testenv.Require(t, "the zstd binary (tar --zstd runs it)", err)
	f := filepath.Join(t.TempDir(), "a.tar.zst")
	must(t, os.WriteFile(f, arc, 0o600))
	plain := t.TempDir()
	if out, err := exec.Command("tar", "--zstd", "-xf", f, "-C", plain).CombinedOutput(); err != nil {
		t.Fatalf("tar --zstd -xf: %v\n%s", err, out)
	}
	must(t, os.RemoveAll(filepath.Join(plain, ".director")))
	// tar keeps the archive's modes; compare contents and types only.
	if got := dirState(t, plain); len(got) != len(want) {
		t.Fatalf("tar extracted %d entries, want %d", len(got), len(want))
	}
	for _, f := range m.Files {
		if f.Type != TypeFile {
			continue
		}
		a, err := os.ReadFile(filepath.Join(plain, filepath.FromSlash(f.Path)))
		must(t, err)
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(f.Path)))
		must(t, err)
		if !bytes.Equal(a, b) {
			t.Fatalf("tar extracted different content for %s", f.Path)
		}
	}
}

// stopWriter stops a Create midway, on its first write: it cancels the
// context (as a caller giving up would), fails (a full disk), or blocks
// until the context's deadline passes (a stalled upload).
type stopWriter struct {
	ctx    context.Context
	cancel func()
	mode   string
	writes int
}

func (w *stopWriter) Write(p []byte) (int, error) {
	w.writes++
	switch w.mode {
	case "cancel":
		w.cancel()
	case "fail":
		return 0, errors.New("disk full")
	case "wait":
		<-w.ctx.Done()
	}
	return len(p), nil
}

// Stopping a Create midway, by its context or by its writer failing, stops
// every worker: no goroutine outlives the call.
func TestCreateStopsWorkersMidway(t *testing.T) {
	src := filepath.Join(t.TempDir(), "profile")
	genTree(t, src, 4*frameChunk, 5)
	for _, tc := range []struct {
		mode string
		code errcode.Code
	}{
		{"cancel", errcode.Interrupted},
		{"fail", errcode.Internal},
		{"wait", errcode.Timeout},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			if tc.mode == "wait" {
				ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
			}
			defer cancel()
			w := &stopWriter{ctx: ctx, cancel: cancel, mode: tc.mode}
			_, err := Create(ctx, src, w, CreateOptions{Excludes: []string{}, Concurrency: 2})
			wantCode(t, err, tc.code)
			if w.writes == 0 {
				t.Fatalf("Create stopped before writing anything: %v", err)
			}
			if w.writes > 2 {
				t.Errorf("Create went on writing %d chunks after it was stopped", w.writes-1)
			}
			// Create waits for its goroutines; allow the runtime a moment
			// for its own bookkeeping.
			for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<16)
				t.Fatalf("%d goroutines after Create, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}
