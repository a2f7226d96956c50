package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/huff0"
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

// zblock is one block of a zstd frame: where its header sits, its type
// (0 raw, 1 RLE, 2 compressed) and how many bytes follow its header.
type zblock struct{ at, typ, size int }

// oneFrame checks that b is exactly one zstd frame with a content checksum
// and returns its window and its blocks, reading only headers (RFC 8878,
// 3.1.1).
func oneFrame(t testing.TB, b []byte) (window int, blocks []zblock) {
	t.Helper()
	if sizes := zstdFrames(t, b); len(sizes) != 1 {
		t.Fatalf("stream of %d bytes is %d zstd frames, want 1", len(b), len(sizes))
	}
	fhd := b[4]
	if fhd&fhdChecksum == 0 || fhd&fhdSingleSeg != 0 || fhd&3 != 0 {
		t.Fatalf("frame header descriptor %#x: want a checksum, a window descriptor and no dictionary", fhd)
	}
	wd := int(b[5])
	window = 1<<(10+wd>>3) + (1<<(10+wd>>3))/8*(wd&7)
	n, err := frameHeaderLen(b)
	must(t, err)
	for last := false; !last; {
		blk := zblock{at: n}
		blk.typ, last, n, _ = blockAt(b, n)
		blk.size = n - blk.at - 3
		blocks = append(blocks, blk)
	}
	return window, blocks
}

// frameOf runs data through a frameWriter with the given chunk size,
// encoder level and workers, and returns the stream it wrote.
func frameOf(t testing.TB, data []byte, chunk int, level zstd.EncoderLevel, workers int) []byte {
	t.Helper()
	var out bytes.Buffer
	fw, err := newFrameWriter(context.Background(), &out, level, chunk, workers)
	must(t, err)
	defer fw.abort()
	// Uneven writes, as tar makes them.
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+len(rest)%7919)
		if _, err := fw.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	must(t, fw.Close())
	return out.Bytes()
}

// decodeBoth decodes stream with klauspost's decoder and with `zstd -d`
// (which also checks the checksum) and fails unless both give want.
func decodeBoth(t testing.TB, stream, want []byte) {
	t.Helper()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(decoderMaxWindow))
	must(t, err)
	defer dec.Close()
	got, err := dec.DecodeAll(stream, nil)
	if err != nil {
		t.Fatalf("klauspost decoder: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("klauspost decoded %d bytes, not the %d written", len(got), len(want))
	}
	_, err = exec.LookPath("zstd")
	testenv.Require(t, "the zstd binary", err)
	f := filepath.Join(t.TempDir(), "s.zst")
	must(t, os.WriteFile(f, stream, 0o600))
	out, err := exec.Command("zstd", "-d", "-c", "-q", f).Output()
	if err != nil {
		t.Fatalf("zstd -d: %v", err)
	}
	if !bytes.Equal(out, want) {
		t.Fatalf("zstd -d decoded %d bytes, want %d", len(out), len(want))
	}
}

// boundaryBait is data that invites every shortcut that would break a
// chunk spliced after another: it has runs (offset 1), 4- and 8-byte
// periods (the offsets a fresh frame's repeat codes stand for), text that
// repeats across chunk boundaries, random stretches, and at every chunk
// boundary a run right after the boundary.
func boundaryBait(chunk, chunks int) []byte {
	b := make([]byte, 0, chunk*chunks)
	text := textBytes(200 << 10)
	for i := 0; len(b) < chunk*chunks; i++ {
		switch i % 6 {
		case 0:
			b = append(b, bytes.Repeat([]byte{byte(i)}, 300+i%500)...)
		case 1:
			b = append(b, bytes.Repeat([]byte("abcd"), 100+i%300)...)
		case 2:
			b = append(b, bytes.Repeat([]byte("01234567"), 50+i%200)...)
		case 3:
			off := (i * 7919) % (len(text) - 5000)
			b = append(b, text[off:off+1000+i%4000]...)
		case 4:
			b = append(b, randomBytes(uint64(i), 200+i%3000)...)
		case 5:
			b = append(b, byte(i), byte(i>>8))
		}
	}
	b = b[:chunk*chunks]
	for k := 1; k < chunks; k++ {
		// Literals, then a run: offset 1, the first repeat code of a
		// fresh frame; the same with a period of 4 and of 8.
		at := k * chunk
		copy(b[at:], "xyz")
		clear(b[at+3 : at+200])
		copy(b[at+200:], "q")
		copy(b[at+201:], bytes.Repeat([]byte("wxyz"), 40))
		copy(b[at+361:], "r")
		copy(b[at+362:], bytes.Repeat([]byte("stuvwxyz"), 40))
	}
	return b
}

// One frame comes out, whatever the input: it decodes with klauspost's
// decoder and with `zstd -d`, at every encoder level and with one or more
// workers, with data that invites repeat offsets at every chunk boundary.
func TestFrameWriterOneFrameEveryLevel(t *testing.T) {
	const chunk = 256 << 10
	data := boundaryBait(chunk, 9)
	mixed := append(append(append([]byte{}, randomBytes(5, 3*chunk)...), textBytes(2*chunk)...), randomBytes(6, chunk+77)...)
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d-workers", level, workers), func(t *testing.T) {
				for _, tc := range []struct {
					name string
					in   []byte
				}{
					{"boundary bait", data},
					{"stored and compressed chunks", mixed},
					{"one byte", []byte{42}},
					{"exactly two chunks", data[:2*chunk]},
				} {
					stream := frameOf(t, tc.in, chunk, level, workers)
					window, _ := oneFrame(t, stream)
					if window != frameWindow(chunk) {
						t.Errorf("%s: frame declares a %d-byte window, want %d", tc.name, window, frameWindow(chunk))
					}
					decodeBoth(t, stream, tc.in)
				}
			})
		}
	}
}

// lettersBytes is n random lowercase letters: no matches to speak of, but
// literals that Huffman coding shrinks by about two fifths.
func lettersBytes(seed uint64, n int) []byte {
	b := randomBytes(seed, n)
	for i := range b {
		b[i] = 'a' + b[i]%26
	}
	return b
}

// A block ends where endBlock was called. klauspost's level 3 keeps the
// literals of a block raw unless coding them saves a sixteenth: a 128 KiB
// block of 112 KiB of random bytes and then 16 KiB of letters codes
// neither; ended between them, the letters are coded. Ends at the start, at
// the same place twice, or after the end are ignored, and every stream
// decodes with both decoders.
func TestFrameWriterEndBlock(t *testing.T) {
	const chunk = 1 << 20
	rnd, text := randomBytes(21, 112<<10), lettersBytes(22, 144<<10)
	data := append(append([]byte{}, rnd...), text...)
	write := func(ends ...int) []byte {
		var out bytes.Buffer
		fw, err := newFrameWriter(context.Background(), &out, zstd.SpeedDefault, chunk, 1)
		must(t, err)
		defer fw.abort()
		at := 0
		for _, e := range append(ends, len(data)) {
			_, err := fw.Write(data[at:max(at, min(e, len(data)))])
			must(t, err)
			at = max(at, min(e, len(data)))
			fw.endBlock()
		}
		must(t, fw.Close())
		decodeBoth(t, out.Bytes(), data)
		return out.Bytes()
	}
	plain := write()
	ended := write(len(rnd))
	if saved := len(plain) - len(ended); saved < 4<<10 {
		t.Errorf("a block end between random bytes and letters saved %d bytes (%d against %d); want the letters' literals coded, over 4 KiB", saved, len(ended), len(plain))
	}
	if odd := write(0, len(rnd), len(rnd), 2*len(data)); !bytes.Equal(odd, ended) {
		t.Errorf("ends at the start, twice at one place or past the end changed the stream")
	}
}

// Block ends a few bytes into every chunk make its first blocks tiny (one
// or two sequences), so that the next block starts with repeat offsets the
// chunk's encoder and the decoder came to differently: every block must
// still write its own three offsets before it repeats one. At every level,
// with boundary bait, both decoders read the stream back.
func TestFrameWriterEndBlockNearChunkStarts(t *testing.T) {
	const chunk, chunks = 256 << 10, 6
	data := boundaryBait(chunk, chunks)
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
		t.Run(level.String(), func(t *testing.T) {
			var out bytes.Buffer
			fw, err := newFrameWriter(context.Background(), &out, level, chunk, 2)
			must(t, err)
			defer fw.abort()
			at := 0
			for c := range chunks {
				for _, off := range []int{5, 13, 100, 4 << 10, chunk - 7} {
					e := c*chunk + off
					_, err := fw.Write(data[at:e])
					must(t, err)
					at = e
					fw.endBlock()
				}
			}
			_, err = fw.Write(data[at:])
			must(t, err)
			must(t, fw.Close())
			decodeBoth(t, out.Bytes(), data)
		})
	}
}

// shortRawLiterals is an n-byte block of skewed capitals whose Huffman
// coding (at the one-sixteenth gain klauspost's level 3 asks for) comes out
// exactly 3 bytes shorter: one that klauspost's encoder stores raw while it
// keeps the table it built as reusable.
func shortRawLiterals(t testing.TB, rng *rand.Rand, n int) []byte {
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for range 1_000_000 {
		k := 6 + rng.IntN(len(alpha)-6)
		b := make([]byte, n)
		for i := range b {
			j := rng.IntN(k)
			if rng.IntN(3) == 0 {
				j = rng.IntN(3)
			}
			b[i] = alpha[j]
		}
		s := huff0.Scratch{WantLogLess: 4}
		if out, _, err := huff0.Compress1X(b, &s); err == nil && len(out) == n-3 {
			return b
		}
	}
	t.Fatal("found no such block")
	return nil
}

// An early block end never leaves a block shorter than minEndedBlock: a
// 32- to 47-byte block without matches, stored raw by klauspost's encoder
// after it built a Huffman table for it, let the next block reuse that table,
// which was never sent, and both decoders failed on about one stream in six
// (found in review). The end is dropped and the short piece joins the next
// block.
func TestEncodeChunkShortEndedBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		tiny := shortRawLiterals(t, rng, 32+rng.IntN(16))
		head := lettersBytes(uint64(i), 8<<10)
		tail := make([]byte, 8<<10)
		for k := range tail {
			tail[k] = tiny[rng.IntN(len(tiny))]
		}
		var out bytes.Buffer
		fw, err := newFrameWriter(context.Background(), &out, zstd.SpeedDefault, 4<<20, 2)
		must(t, err)
		for _, p := range [][]byte{head, tiny, tail} {
			_, err := fw.Write(p)
			must(t, err)
			fw.endBlock()
		}
		must(t, fw.Close())
		decodeBoth(t, out.Bytes(), append(append(append([]byte{}, head...), tiny...), tail...))
	}
	for _, tc := range []struct {
		n    int
		want bool
	}{{0, false}, {1, true}, {63, true}, {64, false}, {encoderBlock, false}, {encoderBlock + 10, true}, {encoderBlock + 64, false}} {
		if got := endedBlockTooShort(tc.n); got != tc.want {
			t.Errorf("endedBlockTooShort(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// An empty stream is still a valid frame: header, empty last block, checksum.
func TestFrameWriterEmpty(t *testing.T) {
	stream := frameOf(t, nil, 64<<10, zstd.SpeedDefault, 2)
	if _, blocks := oneFrame(t, stream); len(blocks) != 1 || blocks[0].size != 0 {
		t.Fatalf("empty stream has blocks %+v, want one empty block", blocks)
	}
	decodeBoth(t, stream, []byte{})
}

// A chunk is compressed with the end of the chunk before it as history:
// random bytes at the end of one chunk, repeated at the start of the next,
// cost almost nothing the second time.
func TestFrameWriterHistoryCrossesChunks(t *testing.T) {
	const chunk = 1 << 20
	rnd := randomBytes(11, historySize/2)
	data := append(randomBytes(12, chunk-len(rnd)), rnd...) // chunk 0: random, its end is rnd
	data = append(data, rnd...)                             // chunk 1: rnd again, then text
	data = append(data, textBytes(chunk-len(rnd))...)
	stream := frameOf(t, data, chunk, zstd.SpeedDefault, 2)
	decodeBoth(t, stream, data)
	text := frameOf(t, textBytes(chunk-len(rnd)), chunk, zstd.SpeedDefault, 1)
	// Without history the second chunk would cost len(rnd) more than text alone.
	if extra := len(stream) - chunk - len(text); extra > len(rnd)/10 {
		t.Errorf("the repeated %d random bytes cost %d bytes in the next chunk; history should make that near 0", len(rnd), extra)
	}
}

// A flipped byte in a raw block fails the frame's content checksum.
func TestFrameChecksumCatchesFlip(t *testing.T) {
	data := randomBytes(3, 3*rawBlock)
	stream := frameOf(t, data, 1<<20, zstd.SpeedDefault, 1)
	at := bytes.Index(stream, data[rawBlock:rawBlock+64])
	if at < 0 {
		t.Fatal("random data was not stored raw")
	}
	stream[at+10] ^= 0x40
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	must(t, err)
	defer dec.Close()
	if _, err := dec.DecodeAll(stream, nil); !errors.Is(err, zstd.ErrCRCMismatch) {
		t.Fatalf("decoding a flipped raw block: %v, want %v", err, zstd.ErrCRCMismatch)
	}
}

func TestEncodeChunkStoresOnlyRandomChunks(t *testing.T) {
	enc, err := newChunkEncoder(zstd.SpeedDefault, frameWindow(frameChunk))
	must(t, err)
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
			out, start, end, last, err := encodeChunk(enc, nil, tc.in, nil, nil)
			must(t, err)
			if start < frameHeaderSize {
				t.Fatalf("blocks start at %d, leaving no room for the frame header", start)
			}
			// Blocks we stored end unmarked; the encoder marks its last.
			stored := last < 0
			for n := start; n < end; {
				typ, isLast, next, _ := blockAt(out, n)
				if stored && typ != 0 {
					t.Fatalf("stored chunk has a block of type %d", typ)
				}
				if isLast && n != last {
					t.Fatalf("block at %d is marked last, want %d", n, last)
				}
				n = next
			}
			if stored != tc.stored {
				t.Errorf("stored raw = %v, want %v (%d bytes of blocks for %d in)", stored, tc.stored, end-start, len(tc.in))
			}
			// The blocks, in a frame of their own, decode to the input.
			frame := appendFrameHeader(nil, frameWindow(frameChunk))
			frame = append(frame, out[start:end]...)
			if last >= 0 {
				frame[len(frame)-(end-last)] &^= blockLast
			}
			frame = append(frame, blockLast, 0, 0)
			frame = binary.LittleEndian.AppendUint32(frame, uint32(xxhash.Sum64(tc.in)))
			decodeBoth(t, frame, tc.in)
		})
	}
}

// TestEncodeChunkEntropyCodesLiterals: bytes with almost no repeats but a
// skewed distribution (what snappy-compressed LevelDB tables and SQLite
// pages full of hex ids look like) are entropy-coded, not stored as raw
// literals. Here 6 bits of entropy per byte must come out near 6/8 of the
// input; klauspost's level-3 default (WithAllLitEntropyCompression off)
// writes a block without matches with its literals raw, at 100%.
func TestEncodeChunkEntropyCodesLiterals(t *testing.T) {
	enc, err := newChunkEncoder(zstd.SpeedDefault, frameWindow(frameChunk))
	must(t, err)
	in := randomBytes(11, frameChunk)
	for i := range in {
		in[i] &= 63
	}
	out, start, end, last, err := encodeChunk(enc, nil, in, nil, nil)
	must(t, err)
	if last < 0 {
		t.Fatalf("a chunk of 6-bit symbols was stored raw")
	}
	if got, limit := end-start, len(in)*78/100; got > limit {
		t.Errorf("%d bytes of 6-bit symbols compressed to %d, want at most %d (78%%)", len(in), got, limit)
	}
	frame := appendFrameHeader(nil, frameWindow(frameChunk))
	frame = append(frame, out[start:end]...)
	frame[len(frame)-(end-last)] &^= blockLast
	frame = append(frame, blockLast, 0, 0)
	frame = binary.LittleEndian.AppendUint32(frame, uint32(xxhash.Sum64(in)))
	decodeBoth(t, frame, in)
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
		raw, compLeast int // blocks at least
	}{
		{"random only", 9, 0, 8, 0},
		{"compressible only", 0, 9, 0, 1},
		{"mixed", 9, 9, 8, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "profile")
			writeFiles(t, src, tc.random, 1<<20+100, true, 100)
			writeFiles(t, src, tc.text, 1<<20+100, false, 0)
			m, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})
			raw, comp := 0, 0
			_, blocks := oneFrame(t, arc)
			for _, b := range blocks[:len(blocks)-1] { // the last is the empty end
				if b.typ == 0 {
					raw++
				} else {
					comp++
				}
			}
			if raw < tc.raw || comp < tc.compLeast {
				t.Errorf("archive has %d stored and %d compressed blocks, want at least %d and %d", raw, comp, tc.raw, tc.compLeast)
			}
			if tc.random == 0 && len(arc) > int(m.RawSize)/4 {
				t.Errorf("compressible-only archive is %d bytes for %d of files: not compressed", len(arc), m.RawSize)
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
	// archiveOffset finds a tar offset inside a stored block in the
	// archive: raw blocks hold the tar bytes as they are.
	archiveOffset := func(x int) int {
		i := bytes.Index(arc, tarStream[x-32:x+32])
		if i < 0 {
			t.Fatalf("tar offset %d is not in a stored block", x)
		}
		return i + 32
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
