package snapshot

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// frameWriter compresses a byte stream as a sequence of independent zstd
// frames, like `zstd -T0` or pzstd: the stream is cut into chunks of a fixed
// size, workers compress the chunks concurrently (each with an encoder of its
// own), and the frames are written to w in order. Concatenated frames are a
// valid zstd stream; `zstd -d` and our decoder read them as one.
//
// Memory is bounded: slots chunks (input plus output buffer) exist at any
// time, plus one encoder per worker; a writer that runs ahead of the
// workers waits for a free slot.
type frameWriter struct {
	ctx   context.Context
	w     io.Writer
	chunk int

	cur   *frameJob      // being filled by Write
	free  chan *frameJob // slots ready to be filled
	jobs  chan *frameJob // to the workers
	order chan *frameJob // to the flusher, in stream order
	wg    sync.WaitGroup // workers and flusher

	failed  chan struct{} // closed on the first error
	errOnce sync.Once
	err     error        // set once, before failed is closed
	stop    atomic.Bool  // workers skip compressing once set
	closed  bool         // Close or abort ran
	written atomic.Int64 // compressed bytes written to w
}

type frameJob struct {
	in, out []byte
	done    chan struct{} // closed by the worker when out is ready
}

// newFrameWriter starts workers compressing chunks of chunk bytes at the
// given encoder level, each chunk as one frame with a checksum. The caller
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
	}
	encs := make([]*zstd.Encoder, workers)
	for i := range encs {
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(level),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(frameWindow(chunk)),
			zstd.WithEncoderCRC(true))
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

// frameWindow is the smallest window the encoder accepts (a power of two)
// that holds a whole chunk.
func frameWindow(chunk int) int {
	win := zstd.MinWindowSize
	for win < chunk {
		win <<= 1
	}
	return win
}

func (fw *frameWriter) work(enc *zstd.Encoder) {
	defer fw.wg.Done()
	for j := range fw.jobs {
		if !fw.stop.Load() {
			if j.out == nil {
				j.out = make([]byte, 0, enc.MaxEncodedSize(fw.chunk))
			}
			j.out = encodeChunk(enc, j.in, j.out[:0])
		}
		close(j.done)
	}
}

func (fw *frameWriter) flush() {
	defer fw.wg.Done()
	for j := range fw.order {
		<-j.done
		if !fw.stop.Load() {
			if err := fw.ctx.Err(); err != nil {
				fw.fail(ctxErr(err, "snapshot"))
			} else if n, err := fw.w.Write(j.out); err != nil {
				fw.fail(internal(err, "writing archive"))
			} else {
				fw.written.Add(int64(n))
			}
		}
		j.in, j.done = j.in[:0], nil
		fw.free <- j // never blocks: there are as many places as slots
	}
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

// submit hands the chunk being filled to the workers and the flusher. The
// channels hold as many jobs as there are slots, so it never blocks.
func (fw *frameWriter) submit() {
	j := fw.cur
	fw.cur = nil
	j.done = make(chan struct{})
	fw.order <- j
	fw.jobs <- j
}

// Close compresses what is left, waits for every frame to be written and
// stops the goroutines. It does not close w.
func (fw *frameWriter) Close() error {
	if fw.closed {
		return fw.failure()
	}
	if fw.cur != nil && len(fw.cur.in) > 0 && fw.failure() == nil {
		fw.submit()
	}
	fw.shutdown()
	return fw.failure()
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
