package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Deadlines. Every remote request has one of two bounds, so that a store
// that stops answering (a hung or SIGSTOPped server, a dead NAT mapping, a
// proxy that stalls) fails a command instead of hanging it:
//
//   - a call of bounded size (Stat, List, Delete, bucket checks, and the
//     opening of a Get up to its response headers) runs under
//     Options.CallTimeout; running out is a callTimeoutError, not retried,
//     since a store that did not answer in that time is down or hung and
//     every retry would add the same wait again;
//   - every request, whatever its size, fails once it makes no progress for
//     Options.IdleTimeout (watchTransport): no byte of the response arrives
//     while one is being read, the store stops reading the request body, or
//     the answer does not come. That is a stallError, not retried either. A
//     slow transfer that keeps moving is never cut.

// callTimeoutError is the cause of a context ended by a call's own deadline,
// Options.CallTimeout, as opposed to the caller's.
type callTimeoutError struct{ d time.Duration }

func (e *callTimeoutError) Error() string { return fmt.Sprintf("no answer within %s", e.d) }

func withCallTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, &callTimeoutError{d})
}

// openCtx returns the context of a request whose response body outlives the
// call that opens it, such as a Get: it ends with a callTimeoutError unless
// opened is called within d, and with cancel, which the body's Close calls.
// opened reports false when the deadline had already passed.
func openCtx(ctx context.Context, d time.Duration) (rctx context.Context, cancel context.CancelFunc, opened func() bool) {
	rctx, cancelCause := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() { cancelCause(&callTimeoutError{d}) })
	return rctx, func() { t.Stop(); cancelCause(nil) }, t.Stop
}

// stallError is the error of a request that made no progress for the idle
// timeout.
type stallError struct {
	upload bool // the store stopped reading the request body, or answering it
	idle   time.Duration
}

func (e *stallError) Error() string {
	if e.upload {
		return fmt.Sprintf("the store stopped taking the upload: no progress for %s", e.idle)
	}
	return fmt.Sprintf("the store stopped sending data: no byte for %s", e.idle)
}

func (e *stallError) hint() string {
	if e.upload {
		return fmt.Sprintf("the store stopped reading the upload (no progress for %s): it is hung or overloaded, or the network dropped; run the command again once `director store check` passes", e.idle)
	}
	return fmt.Sprintf("the store stopped sending data (no byte for %s): it is hung or overloaded, or the network dropped; retry once `director store check` passes", e.idle)
}

// deadlineErr returns the coded error of a call that ran into one of the
// store's own bounds (a stallError or callTimeoutError in err's chain), or
// nil.
func deadlineErr(store Store, what string, err error) error {
	if err == nil {
		return nil
	}
	var se *stallError
	if errors.As(err, &se) {
		return fail(store, what, ProblemTimeout, false, se.hint(), err)
	}
	var ce *callTimeoutError
	if errors.As(err, &ce) {
		return fail(store, what, ProblemTimeout, false,
			fmt.Sprintf("the store did not answer within %s: it is down, hung or overloaded, or the network dropped; check it with: `director store check`", ce.d), err)
	}
	return nil
}

// stallHookKey carries, in a request's context, the cancel function of the
// store call the request belongs to. The watchdog calls it when the request
// stalls, so that minio-go, which retries failed requests while their
// context lives, gives up at once.
type stallHookKey struct{}

// abortOnStall returns a context that ends, with the stallError as its
// cause, when a request made under it stalls.
func abortOnStall(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	return context.WithValue(ctx, stallHookKey{}, cancel), func() { cancel(nil) }
}

// watchTransport fails requests that make no progress for idle; see the
// comment at the top of this file. Time spent inside the request body's
// Read (the caller producing data) and between the caller's reads of the
// response body (the caller consuming it) never counts.
type watchTransport struct {
	next http.RoundTripper
	idle time.Duration
}

func (t *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{idle: t.idle, cancel: cancel}
	w.hook, _ = req.Context().Value(stallHookKey{}).(context.CancelCauseFunc)
	r := req.WithContext(ctx)
	upload := req.Body != nil && req.Body != http.NoBody
	if upload {
		r.Body = &watchedUpload{ReadCloser: req.Body, w: w}
		if get := req.GetBody; get != nil {
			r.GetBody = func() (io.ReadCloser, error) {
				b, err := get()
				if err != nil || b == nil || b == http.NoBody {
					return b, err
				}
				return &watchedUpload{ReadCloser: b, w: w}, nil
			}
		}
	}
	w.arm(upload)
	resp, err := t.next.RoundTrip(r)
	w.answered()
	if err != nil {
		cancel(nil)
		if se := w.stalled(); se != nil {
			return nil, se
		}
		return nil, err
	}
	resp.Body = &watchedDownload{rc: resp.Body, w: w}
	return resp, nil
}

// watchdog is the idle timer of one request.
type watchdog struct {
	idle   time.Duration
	cancel context.CancelCauseFunc // the request's own context
	hook   context.CancelCauseFunc // the call's (abortOnStall), or nil

	mu       sync.Mutex
	timer    *time.Timer
	armed    bool
	deadline time.Time
	upload   bool // what an expiry would mean
	response bool // RoundTrip returned: request body reads no longer arm
	err      *stallError
}

func (w *watchdog) arm(upload bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.armed, w.upload, w.deadline = true, upload, time.Now().Add(w.idle)
	if w.timer == nil {
		w.timer = time.AfterFunc(w.idle, w.fire)
	} else {
		w.timer.Reset(w.idle)
	}
}

func (w *watchdog) disarm() {
	w.mu.Lock()
	w.armed = false
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
}

// armUpload restarts the timer after a read of the request body, unless
// the response has come.
func (w *watchdog) armUpload() {
	w.mu.Lock()
	response := w.response
	w.mu.Unlock()
	if !response {
		w.arm(true)
	}
}

func (w *watchdog) answered() {
	w.mu.Lock()
	w.response = true
	w.mu.Unlock()
	w.disarm()
}

func (w *watchdog) fire() {
	w.mu.Lock()
	// A timer stopped or reset just as it expired may still run fire.
	if !w.armed || w.err != nil || time.Now().Before(w.deadline) {
		w.mu.Unlock()
		return
	}
	w.err = &stallError{upload: w.upload, idle: w.idle}
	err := w.err
	w.mu.Unlock()
	if w.hook != nil {
		w.hook(err)
	}
	w.cancel(err) // aborts the request and closes its connection
}

func (w *watchdog) stalled() *stallError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// watchedUpload is a request body: the timer runs while the transport is
// away sending what it read, and stops while the body produces more.
type watchedUpload struct {
	io.ReadCloser
	w *watchdog
}

func (b *watchedUpload) Read(p []byte) (int, error) {
	b.w.disarm()
	n, err := b.ReadCloser.Read(p)
	b.w.armUpload()
	return n, err
}

// watchedDownload is a response body: the timer runs while a Read waits for
// bytes.
type watchedDownload struct {
	rc io.ReadCloser
	w  *watchdog
}

func (b *watchedDownload) Read(p []byte) (int, error) {
	if se := b.w.stalled(); se != nil {
		return 0, se
	}
	b.w.arm(false)
	n, err := b.rc.Read(p)
	b.w.disarm()
	if err != nil && err != io.EOF {
		if se := b.w.stalled(); se != nil {
			return n, se
		}
	}
	return n, err
}

func (b *watchedDownload) Close() error {
	b.w.disarm()
	err := b.rc.Close()
	b.w.cancel(nil)
	return err
}
