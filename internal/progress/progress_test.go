package progress

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"director/internal/testenv"
)

func payload(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// copyThrough sends data through the bar's reader, or its writer, and
// returns what came out.
func copyThrough(t *testing.T, b *Bar, data []byte, viaWriter bool) []byte {
	t.Helper()
	var out bytes.Buffer
	var err error
	if viaWriter {
		_, err = io.Copy(b.Writer(&out), bytes.NewReader(data))
	} else {
		_, err = io.Copy(&out, b.Reader(bytes.NewReader(data)))
	}
	if err != nil {
		t.Fatal(err)
	}
	b.Finish()
	b.Finish() // idempotent
	return out.Bytes()
}

func TestDisabledDrawsNothing(t *testing.T) {
	data := payload(3 << 20)
	for _, total := range []int64{int64(len(data)), -1} {
		for _, viaWriter := range []bool{false, true} {
			var screen bytes.Buffer
			b := New(&screen, total, "uploading", false)
			if got := copyThrough(t, b, data, viaWriter); !bytes.Equal(got, data) {
				t.Fatalf("total %d: data changed passing through a disabled bar", total)
			}
			if screen.Len() != 0 {
				t.Errorf("total %d: disabled bar wrote %q", total, screen.String())
			}
		}
	}
	var nilBar *Bar
	nilBar.Add(5)
	nilBar.Finish()
	r := bytes.NewReader(nil)
	if nilBar.Reader(r) != io.Reader(r) {
		t.Error("a nil bar wrapped the reader")
	}
}

func TestEnabledDrawsBytes(t *testing.T) {
	data := payload(3 << 20)
	for _, c := range []struct {
		name  string
		total int64
		want  []string
	}{
		{"known size", int64(len(data)), []string{"uploading", "100%", "3.0 MiB", "\n"}},
		{"unknown size", -1, []string{"downloading", "3.0 MiB", "\n"}},
		{"zero size", 0, []string{"downloading"}},
	} {
		for _, viaWriter := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/writer=%v", c.name, viaWriter), func(t *testing.T) {
				var screen bytes.Buffer
				label := c.want[0]
				b := New(&screen, c.total, label, true)
				if got := copyThrough(t, b, data, viaWriter); !bytes.Equal(got, data) {
					t.Fatal("data changed passing through the bar")
				}
				for _, w := range c.want {
					if !strings.Contains(screen.String(), w) {
						t.Errorf("output lacks %q: %q", w, screen.String())
					}
				}
			})
		}
	}
}

// A failed transfer leaves the bar where it stopped, not at 100%.
func TestFailedTransferNotShownComplete(t *testing.T) {
	var screen bytes.Buffer
	b := New(&screen, 10<<20, "uploading", true)
	boom := errors.New("store went away")
	r := io.MultiReader(bytes.NewReader(payload(1<<20)), &errReader{boom})
	if _, err := io.Copy(io.Discard, b.Reader(r)); !errors.Is(err, boom) {
		t.Fatalf("error %v not passed through", err)
	}
	b.Finish()
	if strings.Contains(screen.String(), "100%") {
		t.Errorf("failed transfer drawn as complete: %q", screen.String())
	}
	if !strings.HasSuffix(screen.String(), "\n") {
		t.Errorf("no newline after the bar: %q", screen.String())
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

func TestEnabled(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for _, c := range []struct {
		name        string
		f           *os.File
		quiet, json bool
	}{
		{"file (cron log)", file, false, false},
		{"pipe", pw, false, false},
		{"nil", nil, false, false},
		{"quiet", file, true, false},
		{"json", file, false, true},
	} {
		if Enabled(c.f, c.quiet, c.json) {
			t.Errorf("%s: Enabled = true", c.name)
		}
	}

	// A real terminal: the master side of a pseudo-terminal.
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	testenv.Require(t, "a pseudo-terminal (/dev/ptmx)", err)
	defer tty.Close()
	t.Setenv("TERM", "xterm")
	if !Enabled(tty, false, false) {
		t.Error("terminal: Enabled = false")
	}
	if Enabled(tty, true, false) || Enabled(tty, false, true) {
		t.Error("terminal with --quiet or --json: Enabled = true")
	}
	t.Setenv("TERM", "dumb")
	if Enabled(tty, false, false) {
		t.Error("TERM=dumb: Enabled = true")
	}
}

// Status ends the bar and says, on a line of its own, what follows the
// transfer; a nil (disabled) bar says nothing.
func TestStatusAfterTransfer(t *testing.T) {
	data := payload(1 << 20)
	var screen bytes.Buffer
	b := New(&screen, int64(len(data)), "restore work", true)
	if _, err := io.Copy(io.Discard, b.Reader(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	b.Status("syncing to disk")
	b.Status("removing the old profile")
	b.Finish()
	out := screen.String()
	i := strings.Index(out, "100%")
	j := strings.Index(out, "\n  syncing to disk...\n  removing the old profile...\n")
	if i < 0 || j < i || !strings.HasSuffix(out, "removing the old profile...\n") {
		t.Errorf("output %q: want the full bar, then one line per phase, and nothing after", out)
	}
	var nilBar *Bar
	nilBar.Status("syncing to disk")
}

// A bar counted with Add, as a snapshot counts the files it archives,
// draws the bytes done of the total and a percentage, from the start.
func TestAddDrawsDoneOfTotal(t *testing.T) {
	var screen bytes.Buffer
	b := New(&screen, 3<<20, "snapshot work", true)
	if got := screen.String(); !strings.Contains(got, "snapshot work") || !strings.Contains(got, "0%") || !strings.Contains(got, "0 B/3.0 MiB") {
		t.Errorf("before any byte the bar shows %q, want the label, 0%% and 0 B of 3.0 MiB", got)
	}
	for range 3 {
		b.Add(1 << 20)
	}
	b.Finish()
	if got := screen.String(); !strings.Contains(got, "100%") || !strings.Contains(got, "3.0/3.0 MiB") || !strings.HasSuffix(got, "\n") {
		t.Errorf("the finished bar shows %q, want 100%% and 3.0/3.0 MiB, then a newline", got)
	}
}
