package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"director/errcode"
	"director/internal/s3test"
)

// These tests hold the store's deadlines: a store that stops answering, or
// stops sending or reading a body, fails the call with storage_unavailable
// after CallTimeout or IdleTimeout, and a caller's cancellation is
// interrupted. Timeouts are small and only outcomes are asserted; each test
// context's deadline is a hang guard, and every failure must come before it
// (ctx.Err() is nil after the call), so that the guard firing never passes
// for the store's own bound.

const hangGuard = 30 * time.Second

func guardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// wantStoreBound checks that err is the store's own timeout or stall
// (storage_unavailable, problem timeout, with hintHas in the hint) and
// not the hang guard.
func wantStoreBound(t *testing.T, ctx context.Context, call string, err error, hintHas string) {
	t.Helper()
	if ctx.Err() != nil {
		t.Fatalf("%s: still hanging when the %s hang guard fired: %v", call, hangGuard, err)
	}
	if errcode.Of(err) != errcode.StorageUnavailable || ProblemOf(err) != ProblemTimeout || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("%s = %v (code %s, problem %q), want storage_unavailable, timeout", call, err, errcode.Of(err), ProblemOf(err))
	}
	if hint := errcode.HintOf(err); !strings.Contains(hint, hintHas) {
		t.Errorf("%s: hint %q lacks %q", call, hint, hintHas)
	}
}

// stopServer sends SIGSTOP to srv's versitygw, as a hung server; the kernel
// still accepts connections on its port, but nothing answers. The test's
// cleanup lets it run again so that it can be stopped.
func stopServer(t *testing.T, srv *s3test.Server) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("finds the server's process in /proc")
	}
	pid := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cl, []byte("versitygw")) && bytes.Contains(cl, []byte("\x00"+srv.Endpoint+"\x00")) {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				pid = n
				break
			}
		}
	}
	if pid == 0 {
		t.Fatalf("no versitygw process for %s in /proc", srv.Endpoint)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	// The signal takes effect asynchronously: wait for state T.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if i := bytes.LastIndexByte(st, ')'); err == nil && i >= 0 && bytes.HasPrefix(st[i+1:], []byte(" T")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw (pid %d) did not stop: %s", pid, st)
		}
	}
}

// TestS3StoppedServerFailsWithinCallTimeout: with versitygw stopped, every
// call, opening a Get included, fails after one CallTimeout. IdleTimeout is
// long so that only CallTimeout can end the calls.
func TestS3StoppedServerFailsWithinCallTimeout(t *testing.T) {
	srv := s3test.Start(t)
	opts := s3opts(srv)
	opts.CallTimeout = 300 * time.Millisecond
	opts.IdleTimeout = time.Hour
	s := mustOpen(t, srv.StoreURL("stopped"), opts)
	put(t, s, "obj", "content")
	stopServer(t, srv)

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Get", func(ctx context.Context) error {
			rc, _, err := s.Get(ctx, "obj")
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"Stat", func(ctx context.Context) error { _, err := s.Stat(ctx, "obj"); return err }},
		{"List", func(ctx context.Context) error { _, err := s.List(ctx, ""); return err }},
		{"Delete", func(ctx context.Context) error { return s.Delete(ctx, "obj") }},
		{"Put", func(ctx context.Context) error { return s.Put(ctx, "new", strings.NewReader("x"), 1) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			ctx := guardCtx(t)
			wantStoreBound(t, ctx, c.name, c.call(ctx), "did not answer within")
		})
	}

	t.Run("cancelled Get", func(t *testing.T) {
		opts := opts
		opts.CallTimeout = time.Hour
		s := mustOpen(t, srv.StoreURL("stopped"), opts)
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		time.AfterFunc(200*time.Millisecond, cancel)
		_, _, err := s.Get(ctx, "obj")
		if errcode.Of(err) != errcode.Interrupted {
			t.Fatalf("Get cancelled while opening = %v (code %s), want interrupted", err, errcode.Of(err))
		}
	})
}

// stallProxy forwards to a server and, for the requests match selects,
// delays or stops the response body, or stops reading the request body.
type stallProxy struct {
	match func(r *http.Request) bool
	// Responses: after that many bytes of the body nothing more is sent
	// (<0: all of it); each byte waits every when every > 0.
	after int64
	every time.Duration
	// Requests: read that many bytes of the body, then stop reading and
	// never answer (<0: forward normally).
	readUpTo int64

	matched atomic.Int64
	mu      sync.Mutex
	gone    chan struct{} // closed when a client of a stalled request went away
	release chan struct{} // closed to read the rest of stalled request bodies
}

func startStallProxy(t *testing.T, target string, p *stallProxy) string {
	p.gone, p.release = make(chan struct{}), make(chan struct{})
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ModifyResponse = func(resp *http.Response) error {
		if p.match(resp.Request) && resp.StatusCode/100 == 2 {
			resp.Body = &stallBody{rc: resp.Body, p: p, ctx: resp.Request.Context(), left: p.after}
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.match(r) {
			rp.ServeHTTP(w, r)
			return
		}
		p.matched.Add(1)
		if p.readUpTo >= 0 {
			_, _ = io.CopyN(io.Discard, r.Body, p.readUpTo)
			// A server that does not read cannot see the client leave;
			// once released, reading the rest fails if the client closed
			// the connection without sending the whole body.
			select {
			case <-p.release:
			case <-r.Context().Done():
			}
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				p.wentAway()
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { p.closeOnce(p.release) }) // runs first: Close waits for handlers
	return srv.URL
}

func (p *stallProxy) wentAway() { p.closeOnce(p.gone) }

// closeOnce closes c unless it is closed.
func (p *stallProxy) closeOnce(c chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

type stallBody struct {
	rc   io.ReadCloser
	p    *stallProxy
	ctx  context.Context
	left int64
}

func (b *stallBody) Read(q []byte) (int, error) {
	if b.left == 0 {
		<-b.ctx.Done()
		b.p.wentAway()
		return 0, b.ctx.Err()
	}
	if b.p.every > 0 {
		select {
		case <-time.After(b.p.every):
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
		q = q[:min(len(q), 1)]
	}
	if b.left > 0 && int64(len(q)) > b.left {
		q = q[:b.left]
	}
	n, err := b.rc.Read(q)
	if b.left > 0 {
		b.left -= int64(n)
	}
	return n, err
}

func (b *stallBody) Close() error { return b.rc.Close() }

// stallBackend is one backend behind a stallProxy.
type stallBackend struct {
	name string
	// open starts a server holding the object "obj" (content) and returns
	// the proxy's store and the key match of the object's requests.
	open func(t *testing.T, p *stallProxy, opts func(*Options), content []byte) Store
}

func stallBackends() []stallBackend {
	return []stallBackend{
		{"s3", func(t *testing.T, p *stallProxy, tune func(*Options), content []byte) Store {
			srv := s3test.Start(t)
			put(t, mustOpen(t, srv.StoreURL("p"), s3opts(srv)), "obj", string(content))
			p.match = func(r *http.Request) bool {
				return (r.Method == http.MethodGet || r.Method == http.MethodPut) && strings.HasSuffix(r.URL.Path, "/p/obj") ||
					r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/p/new")
			}
			ep := strings.TrimPrefix(startStallProxy(t, srv.URL(), p), "http://")
			opts := s3opts(srv)
			tune(&opts)
			return mustOpen(t, "s3://"+srv.Bucket+"/p?endpoint="+ep+"&insecure=true", opts)
		}},
		{"supabase", func(t *testing.T, p *stallProxy, tune func(*Options), content []byte) Store {
			d := newSupabaseDouble(t)
			put(t, mustOpen(t, "supabase://b/p", d.opts()), "obj", string(content))
			p.match = func(r *http.Request) bool {
				return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/object/authenticated/b/p/obj") ||
					r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/object/b/p/new")
			}
			opts := d.opts()
			opts.SupabaseURL = startStallProxy(t, d.srv.URL, p)
			tune(&opts)
			return mustOpen(t, "supabase://b/p", opts)
		}},
	}
}

// TestGetStalledBodyFails: a body that stops after 2 KB fails after
// IdleTimeout with storage_unavailable, and the connection is closed before
// the caller closes the reader.
func TestGetStalledBodyFails(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB
	for _, b := range stallBackends() {
		t.Run(b.name, func(t *testing.T) {
			p := &stallProxy{after: 2048, readUpTo: -1}
			s := b.open(t, p, func(o *Options) { o.IdleTimeout = time.Second; o.CallTimeout = 10 * time.Second }, content)
			ctx := guardCtx(t)
			rc, _, err := s.Get(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			wantStoreBound(t, ctx, "reading the stalled body", err, "stopped sending data")
			if !bytes.Equal(got, content[:2048]) {
				t.Errorf("read %d bytes before the stall, want the 2048 sent", len(got))
			}
			var se *stallError
			if !errors.As(err, &se) {
				t.Errorf("error %v does not carry the stall", err)
			}
			select {
			case <-p.gone:
			case <-ctx.Done():
				t.Fatal("the stalled connection was not closed")
			}
		})
	}
}

// TestGetSlowBodyIsNotCut: a body that trickles in, a byte every 20 ms, is
// read whole although it takes twice IdleTimeout and six times
// CallTimeout. The idle timeout is 75 times the gap between bytes, so that
// a loaded machine's pauses do not pass for a stall (at 10 times, a run
// beside Chromium tests once saw a 500 ms pause).
func TestGetSlowBodyIsNotCut(t *testing.T) {
	content := bytes.Repeat([]byte("slow but steady. "), 9)[:150]
	for _, b := range stallBackends() {
		t.Run(b.name, func(t *testing.T) {
			p := &stallProxy{after: -1, every: 20 * time.Millisecond, readUpTo: -1}
			s := b.open(t, p, func(o *Options) { o.IdleTimeout = 1500 * time.Millisecond; o.CallTimeout = 500 * time.Millisecond }, content)
			ctx := guardCtx(t)
			rc, _, err := s.Get(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("ReadAll = %q, %v; want %q", got, err, content)
			}
		})
	}
}

// TestGetCancelledMidBodyIsInterrupted: the caller's cancellation while a
// read waits is interrupted, not a store failure.
func TestGetCancelledMidBodyIsInterrupted(t *testing.T) {
	content := bytes.Repeat([]byte("x"), 16<<10)
	for _, b := range stallBackends() {
		t.Run(b.name, func(t *testing.T) {
			p := &stallProxy{after: 2048, readUpTo: -1}
			s := b.open(t, p, func(o *Options) { o.IdleTimeout = time.Hour }, content)
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			rc, _, err := s.Get(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if _, err := io.ReadFull(rc, make([]byte, 2048)); err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(100*time.Millisecond, cancel)
			_, err = io.Copy(io.Discard, rc)
			if errcode.Of(err) != errcode.Interrupted {
				t.Fatalf("read after cancel = %v (code %s), want interrupted", err, errcode.Of(err))
			}
		})
	}
}

// TestPutStalledUploadFails: a store that stops reading an upload fails the
// Put after IdleTimeout, without retrying it, and leaves no object; the
// caller's cancellation of such a Put is interrupted.
func TestPutStalledUploadFails(t *testing.T) {
	body := bytes.Repeat([]byte("y"), 24<<20)
	for _, b := range stallBackends() {
		t.Run(b.name, func(t *testing.T) {
			p := &stallProxy{after: -1, readUpTo: 64 << 10}
			s := b.open(t, p, func(o *Options) { o.IdleTimeout = 300 * time.Millisecond; o.PartSize = 32 << 20 }, []byte("old"))
			ctx := guardCtx(t)
			err := s.Put(ctx, "new", bytes.NewReader(body), int64(len(body)))
			wantStoreBound(t, ctx, "Put to a store that stopped reading", err, "stopped reading the upload")
			if n := p.matched.Load(); n != 1 {
				t.Errorf("%d upload requests, want 1 (a stall is not retried)", n)
			}
			p.closeOnce(p.release)
			select {
			case <-p.gone:
			case <-ctx.Done():
				t.Fatal("the stalled connection was not closed")
			}
			if _, err := s.Stat(ctx, "new"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Stat after the failed Put = %v, want not found", err)
			}
		})
		t.Run(b.name+" cancelled", func(t *testing.T) {
			p := &stallProxy{after: -1, readUpTo: 64 << 10}
			s := b.open(t, p, func(o *Options) { o.IdleTimeout = time.Hour; o.PartSize = 32 << 20 }, []byte("old"))
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			time.AfterFunc(300*time.Millisecond, cancel)
			err := s.Put(ctx, "new", bytes.NewReader(body), int64(len(body)))
			if errcode.Of(err) != errcode.Interrupted {
				t.Fatalf("cancelled Put = %v (code %s), want interrupted", err, errcode.Of(err))
			}
		})
	}
}
