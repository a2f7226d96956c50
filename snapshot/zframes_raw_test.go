package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"director/errcode"
	"director/internal/testenv"
)

func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func textBytes(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"host_key":".site%d.example.com","name":"sid%d","path":"/","expires_utc":%d},`, i%97, i%13, 13370000000000000+i*7919)
	}
	return b.Bytes()[:n]
}

func newTestEncoder(t testing.TB) *zstd.Encoder {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(frameWindow(frameChunk)), zstd.WithEncoderCRC(true))
	must(t, err)
	return enc
}

// isRawFrame says whether frame is stored: our header and nothing but raw
// blocks (klauspost's encoder also writes single raw blocks it could not
// compress, but never a whole chunk of them: encodeChunk stores those).
func isRawFrame(frame []byte) bool {
	if len(frame) < 12 || frame[4] != fhdFCS4|fhdSingleSeg|fhdChecksum {
		return false
	}
	for n := 9; n+3 <= len(frame); {
		h := int(frame[n]) | int(frame[n+1])<<8 | int(frame[n+2])<<16
		if (h>>1)&3 != 0 {
			return false
		}
		if h&1 != 0 {
			return true
		}
		n += 3 + h>>3
	}
	return false
}

// A stored frame is a valid zstd frame: klauspost's decoder and `zstd -d`
// read it back, alone and between compressed frames, checksum verified.
func TestRawFrameDecodes(t *testing.T) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	must(t, err)
	defer dec.Close()
	enc := newTestEncoder(t)
	var zstdErr error
	if _, zstdErr = exec.LookPath("zstd"); zstdErr != nil {
		testenv.Require(t, "zstd", zstdErr)
	}
	for _, n := range []int{1, 1000, rawBlock - 1, rawBlock, rawBlock + 1, 3*rawBlock + 5, frameChunk} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			content := randomBytes(uint64(n), n)
			frame := appendRawFrame(nil, content)
			if len(frame) > n+rawFrameOverhead(n) {
				t.Errorf("raw frame of %d bytes is %d long, over the bound %d", n, len(frame), n+rawFrameOverhead(n))
			}
			if sizes := zstdFrames(t, frame); len(sizes) != 1 || sizes[0] != len(frame) {
				t.Fatalf("frame headers walk to %v, want one frame of %d bytes", sizes, len(frame))
			}
			got, err := dec.DecodeAll(frame, nil)
			must(t, err)
			if !bytes.Equal(got, content) {
				t.Fatalf("klauspost decoded %d bytes, not the %d stored", len(got), n)
			}
			// Between two compressed frames: one ordinary zstd stream.
			text := textBytes(5000)
			stream := enc.EncodeAll(text, nil)
			stream = append(stream, frame...)
			stream = enc.EncodeAll(text, stream)
			want := append(append(append([]byte{}, text...), content...), text...)
			got, err = dec.DecodeAll(stream, nil)
			must(t, err)
			if !bytes.Equal(got, want) {
				t.Fatal("klauspost decoded the mixed stream wrong")
			}
			f := filepath.Join(t.TempDir(), "s.zst")
			must(t, os.WriteFile(f, stream, 0o600))
			out, err := exec.Command("zstd", "-d", "-c", "-q", f).Output()
			if err != nil {
				t.Fatalf("zstd -d: %v", err)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("zstd -d decoded %d bytes, want %d", len(out), len(want))
			}
		})
	}
}

// A flipped byte in a stored frame fails the content checksum.
func TestRawFrameChecksumCatchesFlip(t *testing.T) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	must(t, err)
	defer dec.Close()
	frame := appendRawFrame(nil, randomBytes(3, 3*rawBlock))
	frame[len(frame)/2] ^= 0x40
	if _, err := dec.DecodeAll(frame, nil); !errors.Is(err, zstd.ErrCRCMismatch) {
		t.Fatalf("decoding a flipped raw frame: %v, want %v", err, zstd.ErrCRCMismatch)
	}
}

func TestEncodeChunkStoresOnlyRandomChunks(t *testing.T) {
	enc := newTestEncoder(t)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	must(t, err)
	defer dec.Close()
	random := randomBytes(9, frameChunk)
	mostlyRandom := append([]byte{}, random...)
	copy(mostlyRandom[frameChunk/2:], textBytes(64<<10))
	withZeros := append([]byte{}, random...)
	clear(withZeros[1000:1412]) // tar padding after a file
	for _, tc := range []struct {
		name   string
		in     []byte
		stored bool
	}{
		{"random", random, true},
		{"random with a tar header's padding", withZeros, true},
		{"short random tail", random[:1000], false}, // too short to judge: compressed
		{"text", textBytes(frameChunk), false},
		{"random with 64 KiB of text", mostlyRandom, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := encodeChunk(enc, tc.in, nil)
			if sizes := zstdFrames(t, out); len(sizes) != 1 {
				t.Fatalf("chunk became %d frames, want 1", len(sizes))
			}
			if got := isRawFrame(out); got != tc.stored {
				t.Errorf("stored raw = %v, want %v (frame of %d bytes for %d in)", got, tc.stored, len(out), len(tc.in))
			}
			got, err := dec.DecodeAll(out, nil)
			must(t, err)
			if !bytes.Equal(got, tc.in) {
				t.Fatal("chunk does not decode to its input")
			}
		})
	}
}

// writeFiles writes n files of size bytes each, random or text.
func writeFiles(t testing.TB, dir string, n, size int, random bool, seed uint64) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "Default"), 0o700))
	for i := range n {
		b := textBytes(size)
		if random {
			b = randomBytes(seed+uint64(i), size)
		}
		must(t, os.WriteFile(filepath.Join(dir, "Default", fmt.Sprintf("%s%03d", map[bool]string{true: "r", false: "t"}[random], i)), b, 0o600))
	}
}

// Trees of only random, only compressible and mixed data round-trip byte
// for byte through Verify, Restore and plain `tar --zstd -xf`, whether
// their chunks went out stored or compressed.
func TestCreateRoundTripStoredAndCompressed(t *testing.T) {
	for _, tc := range []struct {
		name           string
		random, text   int // files of 1 MiB + 100 bytes
		raw, compLeast int // frames at least
	}{
		{"random only", 9, 0, 1, 0},
		{"compressible only", 0, 9, 0, 1},
		{"mixed", 9, 9, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "profile")
			writeFiles(t, src, tc.random, 1<<20+100, true, 100)
			writeFiles(t, src, tc.text, 1<<20+100, false, 0)
			_, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})
			raw, comp := 0, 0
			rest := arc
			for _, n := range zstdFrames(t, arc) {
				if isRawFrame(rest[:n]) {
					raw++
				} else {
					comp++
				}
				rest = rest[n:]
			}
			if raw < tc.raw || comp < tc.compLeast {
				t.Errorf("archive has %d stored and %d compressed frames, want at least %d and %d", raw, comp, tc.raw, tc.compLeast)
			}
			if tc.random == 0 && raw > 0 {
				t.Errorf("compressible-only archive has %d stored frames", raw)
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
				t.Fatalf("restored tree differs from the source")
			}
			_, err := exec.LookPath("zstd")
			testenv.Require(t, "zstd", err)
			f := filepath.Join(t.TempDir(), "a.tar.zst")
			must(t, os.WriteFile(f, arc, 0o600))
			plain := t.TempDir()
			if out, err := exec.Command("tar", "--zstd", "-xf", f, "-C", plain).CombinedOutput(); err != nil {
				t.Fatalf("tar --zstd -xf: %v\n%s", err, out)
			}
			for rel := range want {
				if !strings.HasPrefix(rel, "Default/") {
					continue
				}
				a, err := os.ReadFile(filepath.Join(plain, rel))
				must(t, err)
				b, err := os.ReadFile(filepath.Join(src, rel))
				must(t, err)
				if !bytes.Equal(a, b) {
					t.Fatalf("tar extracted different content for %s", rel)
				}
			}
		})
	}
}

// A flipped byte inside a stored block fails Verify as snapshot_corrupt:
// in a file's content, and in the tar padding after a file, where only the
// frame's content checksum can notice it.
func TestVerifyDetectsFlipInStoredBlock(t *testing.T) {
	src := filepath.Join(t.TempDir(), "profile")
	writeFiles(t, src, 10, 1<<20+100, true, 7)
	_, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	must(t, err)
	defer dec.Close()
	tarStream, err := dec.DecodeAll(arc, nil)
	must(t, err)
	// Where the fifth file's content starts in the tar stream.
	content, err := os.ReadFile(filepath.Join(src, "Default", "r004"))
	must(t, err)
	at := bytes.Index(tarStream, content[:64])
	if at < 0 {
		t.Fatal("file content not found in the tar stream")
	}
	// archiveOffset maps a tar offset inside a stored frame to the archive.
	archiveOffset := func(x int) int {
		k := x / frameChunk
		start := 0
		for i, n := range zstdFrames(t, arc) {
			if i == k {
				break
			}
			start += n
		}
		if !isRawFrame(arc[start:]) {
			t.Fatalf("tar offset %d is in frame %d, which is not stored", x, k)
		}
		r := x - k*frameChunk
		return start + 9 + 3*(r/rawBlock+1) + r
	}
	for _, tc := range []struct {
		name string
		tarx int
	}{
		{"file content", at + 100},
		{"tar padding", at + len(content) + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := append([]byte{}, arc...)
			i := archiveOffset(tc.tarx)
			if bad[i] != tarStream[tc.tarx] {
				t.Fatalf("archive byte %d is not tar byte %d", i, tc.tarx)
			}
			bad[i] ^= 0x01
			_, err := Verify(context.Background(), bytes.NewReader(bad), ExtractOptions{})
			wantCode(t, err, errcode.SnapshotCorrupt)
		})
	}
}
