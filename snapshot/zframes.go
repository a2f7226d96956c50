package snapshot

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
)

// frameWriter compresses a byte stream into one zstd frame on several cores,
// as `zstd -T0` does: the stream is cut into chunks of a fixed size, workers
// compress the chunks concurrently (each with an encoder of its own), and
// the chunks' blocks are written to w in order, between one frame header
// and one content checksum.
//
// Each chunk is compressed with the last historySize bytes of the chunk
// before it as history (a raw dictionary), so a match may reach back across
// a chunk boundary: the decoder sees one continuous frame and has those
// bytes in its window. The encoder writes each chunk as a frame of its own;
// the frame writer keeps only its blocks. This is sound because of these
// properties of klauspost's encoders (its own parallel stream encoder,
// WithConcurrentBlocks, relies on the first three too):
//   - a frame's first block carries its own entropy tables (a raw
//     dictionary has none to repeat);
//   - no block uses a repeat offset before it has written three new offsets
//     itself (`canRepeat := len(blk.sequences) > 2` in every encoder), so
//     the decoder's repeat offsets carried over from the chunk before never
//     matter;
//   - no offset is larger than the encoder's window, which the frame header
//     declares;
//   - a block that reuses the previous block's Huffman table follows a block
//     of the same chunk that sent it. An early block end (endBlock) keeps
//     this only if the block it ends is not very short: see minEndedBlock.
//
// TestFrameWriter* check the result with klauspost's decoder and `zstd -d`
// at every encoder level, with data that invites repeat offsets at every
// chunk boundary.
//
// Memory is bounded: slots chunks (input plus output buffer and a copy of
// the history) exist at any time, plus one encoder per worker; a writer
// that runs ahead of the workers waits for a free slot.
type frameWriter struct {
	ctx   context.Context
	w     io.Writer
	chunk int

	cur   *frameJob      // being filled by Write
	tail  []byte         // the end of the last chunk submitted: the next one's history
	free  chan *frameJob // slots ready to be filled
	jobs  chan *frameJob // to the workers
	order chan *frameJob // to the flusher, in stream order
	wg    sync.WaitGroup // workers and flusher

	// Owned by the flusher until the goroutines stop, then by Close.
	started bool           // the frame header is written
	sum     *xxhash.Digest // of the content, for the frame's checksum

	failed  chan struct{} // closed on the first error
	errOnce sync.Once
	err     error        // set once, before failed is closed
	stop    atomic.Bool  // workers skip compressing once set
	closed  bool         // Close or abort ran
	written atomic.Int64 // compressed bytes written to w
}

type frameJob struct {
	in      []byte        // the chunk
	history []byte        // the end of the chunk before it
	out     []byte        // out[start:end] are the chunk's blocks, with room for the frame header before start
	start   int           //
	end     int           //
	last    int           // where the header of the chunk's last block sits in out; -1 for none
	ends    []int         // offsets into in where a block is to end (endBlock)
	err     error         // the encoder's, if it failed
	done    chan struct{} // closed by the worker when out is ready
}

// historySize is how much of the chunk before it a chunk is compressed
// with. zstd -T0 gives each job the last 256 KiB of the one before at
// level 3. Measured on the 150 MB bench tree (go run ./bench -restore=false):
// none 73.41 MiB, 256 KiB 73.20 MiB at the same speed, 1 MiB 73.18 MiB but
// about 15% slower (the encoder indexes its history before every chunk).
const historySize = 256 << 10

// frameHeaderSize is the size of the frame header the frame writer writes:
// magic, frame header descriptor and window descriptor (RFC 8878, 3.1.1.1).
const frameHeaderSize = 6

// newFrameWriter starts workers compressing chunks of chunk bytes at the
// given encoder level into one frame whose window holds a chunk. The caller
// must call Close (success) or abort (failure) to stop the goroutines.
func newFrameWriter(ctx context.Context, w io.Writer, level zstd.EncoderLevel, chunk, workers int) (*frameWriter, error) {
	workers = max(workers, 1)
	slots := workers + 1 // one filling while every worker compresses
	fw := &frameWriter{
		ctx:    ctx,
		w:      w,
		chunk:  chunk,
		free:   make(chan *frameJob, slots),
		jobs:   make(chan *frameJob, slots),
		order:  make(chan *frameJob, slots),
		failed: make(chan struct{}),
		sum:    xxhash.New(),
	}
	encs := make([]*zstd.Encoder, workers)
	for i := range encs {
		enc, err := newChunkEncoder(level, frameWindow(chunk))
		if err != nil {
			return nil, internal(err, "starting zstd encoder")
		}
		encs[i] = enc
	}
	for range slots {
		fw.free <- &frameJob{}
	}
	for _, enc := range encs {
		fw.wg.Add(1)
		go fw.work(enc)
	}
	fw.wg.Add(1)
	go fw.flush()
	return fw, nil
}

// newChunkEncoder makes an encoder for encodeChunk: synchronous, no
// checksum (the frame writer adds one for the whole frame), and a raw
// dictionary, which every chunk replaces with its history.
//
// Literals are entropy-coded even in blocks where the encoder finds no
// match. klauspost's level 3 leaves that off by default and writes such a
// block's literals raw; libzstd codes them. Snappy-compressed LevelDB
// tables (IndexedDB, Local Storage) are exactly such blocks: they have
// hardly a repeat but a skewed byte distribution. Compressed one by one, the
// .ldb files of the bench's real Chromium profile came out about 1.5% larger
// than `zstd -3` makes them, and with this option smaller; the whole archive
// went from 1.0015x to 1.0010x the size of `tar -I 'zstd -3 -T0'`'s, at no
// CPU cost we could measure (15 alternating runs of `bench child-create`).
// Chunks of random bytes never reach the encoder (encodeChunk stores them),
// so only mixed chunks pay for trying to code their random blocks.
func newChunkEncoder(level zstd.EncoderLevel, window int) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(level),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(window),
		zstd.WithEncoderDictRaw(0, nil),
		zstd.WithAllLitEntropyCompression(true),
		zstd.WithEncoderCRC(false))
}

// frameWindow is the smallest window the encoder accepts (a power of two)
// that holds a whole chunk.
func frameWindow(chunk int) int {
	win := zstd.MinWindowSize
	for win < chunk {
		win <<= 1
	}
	return win
}

// appendFrameHeader appends the header of a frame with the given window (a
// power of two), a content checksum and no content size.
func appendFrameHeader(out []byte, window int) []byte {
	out = binary.LittleEndian.AppendUint32(out, frameMagic)
	exp := 0
	for 1<<(10+exp) < window {
		exp++
	}
	return append(out, fhdChecksum, byte(exp<<3))
}

func (fw *frameWriter) work(enc *zstd.Encoder) {
	defer fw.wg.Done()
	for j := range fw.jobs {
		if !fw.stop.Load() {
			if j.out == nil {
				// Room for the worst case, raw or compressed, so that
				// the buffer never grows (and copies) while it is filled.
				j.out = make([]byte, 0, frameHeaderSize+max(enc.MaxEncodedSize(fw.chunk), fw.chunk+3*(fw.chunk/rawBlock+1)))
			}
			j.out, j.start, j.end, j.last, j.err = encodeChunk(enc, j.history, j.in, j.out[:0], j.ends)
		}
		close(j.done)
	}
}

func (fw *frameWriter) flush() {
	defer fw.wg.Done()
	for j := range fw.order {
		<-j.done
		if !fw.stop.Load() {
			if j.err != nil {
				fw.fail(internal(j.err, "compressing archive"))
			} else if err := fw.ctx.Err(); err != nil {
				fw.fail(ctxErr(err, "snapshot"))
			} else if err := fw.writeChunk(j); err != nil {
				fw.fail(err)
			}
		}
		j.in, j.ends, j.done, j.err = j.in[:0], j.ends[:0], nil, nil
		fw.free <- j // never blocks: there are as many places as slots
	}
}

// writeChunk writes a compressed chunk's blocks, preceded by the frame
// header if it is the first, with the last block no longer marked last.
func (fw *frameWriter) writeChunk(j *frameJob) error {
	fw.sum.Write(j.in)
	if j.last >= 0 {
		j.out[j.last] &^= blockLast
	}
	b := j.out[j.start:j.end]
	if !fw.started {
		fw.started = true
		b = j.out[j.start-frameHeaderSize : j.end]
		appendFrameHeader(b[:0], frameWindow(fw.chunk))
	}
	n, err := fw.w.Write(b)
	fw.written.Add(int64(n))
	if err != nil {
		return internal(err, "writing archive")
	}
	return nil
}

// fail records the first error and stops the workers' compressing.
func (fw *frameWriter) fail(err error) {
	fw.errOnce.Do(func() {
		fw.err = err
		fw.stop.Store(true)
		close(fw.failed)
	})
}

// failure returns the recorded error, if any.
func (fw *frameWriter) failure() error {
	select {
	case <-fw.failed:
		return fw.err
	default:
		return nil
	}
}

// endBlock makes the compressed block being filled end where the stream
// stands now, so that the next block starts with the next bytes written.
// klauspost's encoder Huffman-codes a block's literals only if that saves a
// sixteenth of them (libzstd: about a sixty-fourth), so a 128 KiB block that
// holds the random end of one file and the text start of the next keeps all
// its literals raw. Create's blockEnder says where to end one. Within a
// chunk only: a chunk starts a block anyway.
func (fw *frameWriter) endBlock() {
	if fw.cur != nil && len(fw.cur.in) > 0 {
		fw.cur.ends = append(fw.cur.ends, len(fw.cur.in))
	}
}

// Write buffers p into chunks and hands every full chunk to the workers.
func (fw *frameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if err := fw.failure(); err != nil {
			return n, err
		}
		if fw.cur == nil {
			select {
			case j := <-fw.free:
				if cap(j.in) < fw.chunk {
					j.in = make([]byte, 0, fw.chunk)
				}
				fw.cur = j
			case <-fw.failed:
				return n, fw.err
			case <-fw.ctx.Done():
				fw.fail(ctxErr(fw.ctx.Err(), "snapshot"))
				return n, fw.err
			}
		}
		c := copy(fw.cur.in[len(fw.cur.in):fw.chunk], p)
		fw.cur.in = fw.cur.in[:len(fw.cur.in)+c]
		n += c
		p = p[c:]
		if len(fw.cur.in) == fw.chunk {
			fw.submit()
		}
	}
	return n, nil
}

// submit hands the chunk being filled to the workers and the flusher, with
// a copy of the previous chunk's end as its history (the previous chunk's
// buffer may be refilled before this one is compressed). The job takes the
// tail buffer and gives its old history buffer, free since its last chunk
// was written, to hold this chunk's end. The channels hold as many jobs as
// there are slots, so it never blocks.
func (fw *frameWriter) submit() {
	j := fw.cur
	fw.cur = nil
	j.history, fw.tail = fw.tail, j.history[:0]
	fw.tail = append(fw.tail, j.in[max(0, len(j.in)-historySize):]...)
	j.done = make(chan struct{})
	fw.order <- j
	fw.jobs <- j
}

// Close compresses what is left, waits for every chunk to be written, stops
// the goroutines and ends the frame: an empty last block and the checksum.
// It does not close w.
func (fw *frameWriter) Close() error {
	if fw.closed {
		return fw.failure()
	}
	if fw.cur != nil && len(fw.cur.in) > 0 && fw.failure() == nil {
		fw.submit()
	}
	fw.shutdown()
	if err := fw.failure(); err != nil {
		return err
	}
	var end []byte
	if !fw.started {
		end = appendFrameHeader(end, frameWindow(fw.chunk))
	}
	end = append(end, blockLast|blockTypeRaw, 0, 0)
	end = binary.LittleEndian.AppendUint32(end, uint32(fw.sum.Sum64()))
	n, err := fw.w.Write(end)
	fw.written.Add(int64(n))
	if err != nil {
		return internal(err, "writing archive")
	}
	return nil
}

// abort stops the goroutines without compressing what is left. It is a
// no-op after Close.
func (fw *frameWriter) abort() {
	if fw.closed {
		return
	}
	fw.stop.Store(true)
	fw.shutdown()
}

func (fw *frameWriter) shutdown() {
	fw.closed = true
	close(fw.jobs)
	close(fw.order)
	fw.wg.Wait()
}

// frameHeaderLen returns the length of the zstd frame header at the start
// of f (RFC 8878, 3.1.1.1).
func frameHeaderLen(f []byte) (int, error) {
	if len(f) < 6 || binary.LittleEndian.Uint32(f) != frameMagic {
		return 0, fmt.Errorf("not a zstd frame")
	}
	fhd := f[4]
	single := fhd&fhdSingleSeg != 0
	n := 5
	if !single {
		n++ // window descriptor
	}
	n += []int{0, 1, 2, 4}[fhd&3] // dictionary id
	fcs := []int{0, 2, 4, 8}[fhd>>6]
	if fcs == 0 && single {
		fcs = 1
	}
	return n + fcs, nil
}

// blockAt reads the block header at f[n]: the block's type (0 raw, 1 RLE,
// 2 compressed), whether it is the frame's last, and where the next one
// starts. ok is false when f ends inside the header.
func blockAt(f []byte, n int) (typ int, last bool, next int, ok bool) {
	if len(f) < n+3 {
		return 0, false, 0, false
	}
	h := int(f[n]) | int(f[n+1])<<8 | int(f[n+2])<<16
	typ, size := (h>>1)&3, h>>3
	if typ == 1 { // RLE: one byte, repeated size times
		size = 1
	}
	return typ, h&blockLast != 0, n + 3 + size, true
}

// frameBlocks finds the blocks of the one zstd frame that f holds: they are
// f[start:end], and the last one's header is at f[last].
func frameBlocks(f []byte) (start, end, last int, err error) {
	start, err = frameHeaderLen(f)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("encoder output: %w", err)
	}
	for n := start; ; {
		_, isLast, next, ok := blockAt(f, n)
		if !ok {
			return 0, 0, 0, fmt.Errorf("encoder output ends inside a block header")
		}
		if isLast {
			if next > len(f) {
				return 0, 0, 0, fmt.Errorf("encoder output ends inside a block")
			}
			return start, next, n, nil
		}
		n = next
	}
}
