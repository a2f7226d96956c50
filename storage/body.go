package storage

import (
	"context"
	"errors"
	"fmt"
	"io"

	"director/errcode"
)

// ErrTooLarge is wrapped by the error of a MaxSize reader whose source holds
// more than its limit.
var ErrTooLarge = errors.New("object larger than the size limit")

// MaxSize returns a reader that yields r's bytes while they stay within n,
// and fails with an invalid_input error wrapping ErrTooLarge as soon as r
// holds byte n+1 — before that byte is handed on, so a Put fed from it
// never sends more than n bytes and, failing, leaves nothing behind. It is
// how --max-size is enforced while streaming.
func MaxSize(r io.Reader, n int64) io.Reader {
	return &maxSizeReader{r: r, left: n, limit: n}
}

type maxSizeReader struct {
	r     io.Reader
	left  int64
	limit int64
	err   error
}

func (m *maxSizeReader) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if m.left <= 0 {
		// At the limit: the source must be at EOF, else it is too large.
		var probe [1]byte
		for {
			n, err := m.r.Read(probe[:])
			if n > 0 {
				m.err = errcode.Hinted(ErrTooLarge, errcode.InvalidInput,
					"raise --max-size, or leave big caches out with --exclude",
					"the archive exceeds the size limit of %d bytes", m.limit)
				return 0, m.err
			}
			if err != nil {
				m.err = err
				return 0, err
			}
		}
	}
	if int64(len(p)) > m.left {
		p = p[:m.left]
	}
	n, err := m.r.Read(p)
	m.left -= int64(n)
	if err != nil {
		m.err = err
	}
	return n, err
}

// bodyReader wraps a Put body: it counts bytes, remembers the first read
// error (so a Put that failed because its body failed reports that error,
// e.g. ErrTooLarge, rather than a network error) and hides the io.Seeker and
// io.ReaderAt methods of the body, so that minio-go never switches to its
// parallel, buffer-per-thread upload paths.
//
// A body longer than its announced size must never reach the server as a
// complete request: net/http sends exactly Content-Length bytes and only
// then reads on to find the extra ones, by which time the server may have
// stored the object and answered. So the read that would complete the
// announced size first probes for one more byte, and on finding one hands
// out nothing and fails.
type bodyReader struct {
	r    io.Reader
	size int64 // the announced size, or -1
	n    int64
	err  error
	eof  bool // the probe after the last byte saw the end
}

func newBody(r io.Reader, size int64) *bodyReader { return &bodyReader{r: r, size: size} }

// errSizeMismatch is wrapped when a body is shorter or longer than the size
// given to Put: a bug in the caller, never sent as a complete object.
var errSizeMismatch = errors.New("the body's length differs from the size given to Put")

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	if b.size >= 0 && int64(len(p)) > b.size-b.n+1 {
		p = p[:b.size-b.n+1]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	switch {
	case b.size >= 0 && b.n > b.size:
		b.err = fmt.Errorf("%w: more than %d bytes", errSizeMismatch, b.size)
		return 0, b.err
	case err == io.EOF && b.size >= 0 && b.n < b.size:
		b.err = fmt.Errorf("%w: %d bytes, not %d", errSizeMismatch, b.n, b.size)
		return 0, b.err
	case err != nil && err != io.EOF:
		b.err = err
		return n, err
	case err == nil && b.size >= 0 && b.n == b.size:
		if perr := b.probeEnd(); perr != nil {
			return 0, perr
		}
	}
	return n, err
}

// probeEnd reads past the announced size: the end (or a reader that keeps
// returning nothing) is fine, a byte is a size mismatch.
func (b *bodyReader) probeEnd() error {
	var one [1]byte
	for try := 0; try < 100; try++ {
		m, err := b.r.Read(one[:])
		switch {
		case m > 0:
			b.err = fmt.Errorf("%w: more than %d bytes", errSizeMismatch, b.size)
			return b.err
		case err == io.EOF:
			b.eof = true
			return nil
		case err != nil:
			b.err = err
			return err
		}
	}
	return nil
}

// bodyFailure returns the error to report when a Put failed and its body
// had failed first, or nil.
func (b *bodyReader) bodyFailure(store Store, key string) error {
	if b.err == nil {
		return nil
	}
	if errcode.Of(b.err) != errcode.Internal {
		return b.err // already coded, e.g. MaxSize's invalid_input
	}
	hint := "the data being uploaded could not be read; see the cause above"
	if errors.Is(b.err, errSizeMismatch) {
		hint = "this is a bug in director; please report it"
	}
	return errcode.Hinted(&storeError{problem: ProblemBody, err: b.err}, errcode.Internal, hint,
		"%s: put %q: reading the upload", store, key)
}

// replayable reports whether r can be rewound for another attempt and, if
// so, returns a function that rewinds it.
func replayable(r io.Reader) (func() error, bool) {
	s, ok := r.(io.Seeker)
	if !ok {
		return nil, false
	}
	start, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, false
	}
	return func() error {
		_, err := s.Seek(start, io.SeekStart)
		if err != nil {
			return fmt.Errorf("rewinding the upload for a retry: %w", err)
		}
		return nil
	}, true
}

// getReader wraps a Get body so that a failure midway through the stream is
// a coded error, not a bare network error: interrupted when the caller
// cancelled, storage_unavailable otherwise (the store stalled for
// IdleTimeout, the connection broke, the body was cut short). A failed
// read closes the body, releasing its connection.
type getReader struct {
	rc     io.ReadCloser
	ctx    context.Context // the request's; nil for none
	cancel context.CancelFunc
	store  Store
	key    string
	n      int64
	size   int64
	obj    Object
}

func (g *getReader) Read(p []byte) (int, error) {
	n, err := g.rc.Read(p)
	g.n += int64(n)
	if err != nil && err != io.EOF && errcode.Of(err) == errcode.Internal {
		what := fmt.Sprintf("get %q: after %d bytes", g.key, g.n)
		var cerr error
		if g.ctx != nil {
			cerr = ctxErr(g.ctx, g.store, what)
		}
		if cerr == nil {
			cerr = deadlineErr(g.store, what, err)
		}
		if cerr == nil {
			p, _, _ := netProblem(err)
			if p == "" {
				p = ProblemServer
			}
			cerr = fail(g.store, what, p, false, "the download broke off; retry", err)
		}
		_ = g.rc.Close()
		err = cerr
	}
	if err == io.EOF && g.size >= 0 && g.n != g.size {
		err = fail(g.store, fmt.Sprintf("get %q", g.key), ProblemServer, false,
			"the download was cut short; retry",
			fmt.Errorf("got %d of %d bytes", g.n, g.size))
	}
	return n, err
}

func (g *getReader) Close() error {
	err := g.rc.Close()
	if g.cancel != nil {
		g.cancel()
	}
	return err
}
