package progress

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Enabled reports whether a progress bar should be drawn on stderr: not
// under --quiet or --json, not on a dumb terminal, and only when stderr is a
// terminal.
func Enabled(stderr *os.File, quiet, json bool) bool {
	if quiet || json || stderr == nil || os.Getenv("TERM") == "dumb" {
		return false
	}
	return term.IsTerminal(int(stderr.Fd()))
}

// Bar counts bytes flowing through a reader or writer and, when enabled,
// draws them on its writer. A nil or disabled *Bar counts nothing, draws
// nothing and passes readers and writers through unchanged. It is safe for
// use from several goroutines.
type Bar struct {
	pb    *progressbar.ProgressBar
	w     io.Writer
	total int64

	mu   sync.Mutex
	done int64
	once sync.Once
}

// New returns a bar for total bytes (-1 when unknown: a spinner with bytes
// and rate) labelled label, drawn on w when enabled is true. Call Finish when
// the transfer ends, successfully or not.
func New(w io.Writer, total int64, label string, enabled bool) *Bar {
	if !enabled || w == nil {
		return nil
	}
	if total <= 0 {
		total = -1 // progressbar cannot draw a zero-length bar
	}
	pb := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionUseIECUnits(true), // MiB, as the rest of the output
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		// No ticker goroutine: the spinner moves when bytes do, and
		// nothing is left running if a caller forgets Finish.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(w, "\n") }),
	)
	return &Bar{pb: pb, w: w, total: total}
}

// Add counts n more bytes.
func (b *Bar) Add(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.done += n
	b.mu.Unlock()
	// Counting past the total (a size that grew) is not worth failing a
	// transfer for: drawing errors are ignored.
	_ = b.pb.Add64(n)
}

// Reader returns r counting the bytes read through it.
func (b *Bar) Reader(r io.Reader) io.Reader {
	if b == nil {
		return r
	}
	return &reader{r: r, b: b}
}

// Writer returns w counting the bytes written through it.
func (b *Bar) Writer(w io.Writer) io.Writer {
	if b == nil {
		return w
	}
	return &writer{w: w, b: b}
}

// Finish ends the bar: full when every byte of a known total went through,
// left where it stopped otherwise (a failed transfer), then a newline. It may
// be called more than once.
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.once.Do(func() {
		b.mu.Lock()
		complete := b.total < 0 || b.done >= b.total
		b.mu.Unlock()
		if complete {
			_ = b.pb.Finish() // draws the final state, then the newline
			return
		}
		_ = b.pb.Exit()
	})
}

// Status ends the bar (as Finish does) and prints phase on a line of its
// own, indented under it, for work that follows the transfer and moves no
// bytes: "syncing to disk" after a download whose bar stands at 100%.
func (b *Bar) Status(phase string) {
	if b == nil {
		return
	}
	b.Finish()
	b.mu.Lock()
	defer b.mu.Unlock()
	_, _ = io.WriteString(b.w, "  "+phase+"...\n")
}

type reader struct {
	r io.Reader
	b *Bar
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.b.Add(int64(n))
	return n, err
}

type writer struct {
	w io.Writer
	b *Bar
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.b.Add(int64(n))
	return n, err
}
