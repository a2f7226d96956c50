package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"director/errcode"
	"director/internal/shellquote"
)

// DefaultCloseTimeout is how long Close waits for Chrome to exit after
// Browser.close before it kills the process.
const DefaultCloseTimeout = 10 * time.Second

// defaultStartTimeout bounds the start when ctx has no deadline.
const defaultStartTimeout = 60 * time.Second

// Viewport is the window size in CSS pixels; zero means Chrome's default.
type Viewport struct {
	W, H int
}

// Options say how to start (or attach to) a browser.
type Options struct {
	// ChromePath is the executable (--chrome); "" searches as Find does
	// (CHROME_PATH, PATH, install paths).
	ChromePath string
	// UserDataDir is the profile directory. "" runs incognito: a fresh temp
	// dir (0700) that Close removes.
	UserDataDir string
	// Headless runs Chrome with --headless=new (and --disable-gpu).
	Headless bool
	// Viewport sets --window-size.
	Viewport Viewport
	// CDPURL attaches to a browser that already runs (ws:// or http://
	// address of its DevTools endpoint) instead of starting one. Close then
	// only closes the tabs this Browser opened and disconnects.
	CDPURL string
	// ExtraFlags are added to the command line as given ("--name=value").
	ExtraFlags []string
	// HostResolverRules are rules of Chrome's --host-resolver-rules ("MAP
	// pattern ~NOTFOUND", "EXCLUDE pattern"), put before any rules that
	// ExtraFlags give: Chrome takes the first MAP rule that matches a host
	// name and only the last --host-resolver-rules flag, so Args merges
	// them into one flag (see resolverRules). Ignored with CDPURL: a
	// running browser keeps its command line.
	HostResolverRules []string
	// NoSandbox adds --no-sandbox; it is added anyway when running as root,
	// where Chrome refuses to start otherwise.
	NoSandbox bool
	// KeepSessionCookies makes session-only cookies survive a graceful
	// close and relaunch: Launch sets the profile's startup preference to
	// "continue where you left off" before starting (see keepSessionCookies).
	// Saved tabs are dropped before the start unless RestoreTabs is set.
	KeepSessionCookies bool
	// RestoreTabs keeps the tabs of the last session (with
	// KeepSessionCookies). Off, an automated run starts on one blank tab.
	RestoreTabs bool
	// CloseTimeout is how long Close waits for Chrome to exit before it
	// kills it; 0 means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Log receives launch and close events and Chrome's own output (debug);
	// nil discards.
	Log *slog.Logger
}

// Browser is one running Chrome (or a connection to a remote one).
//
// The session engine builds on: Context (the first tab), NewTab, AttachTab,
// Tabs, Done and Close. Everything else is information.
type Browser struct {
	opts    Options
	log     *slog.Logger
	dir     string
	tempDir bool
	remote  bool

	cmd    *exec.Cmd
	conn   *chromedp.PipeConn
	cdp    *chromedp.Browser
	output *tailBuffer

	allocCtx    context.Context
	allocCancel context.CancelFunc
	tabCtx      context.Context
	tabCancel   context.CancelFunc

	product string

	done    chan struct{} // closed when the process exits (remote: the connection drops)
	exitErr error         // valid after done

	closing   atomic.Bool
	killed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Launch starts Chrome on opts.UserDataDir (or an incognito temp dir), or
// attaches to opts.CDPURL, and returns when the first tab is ready. Stale
// runtime files are removed first; a profile that a live Chrome uses is
// refused with profile_in_use. ctx bounds the start only: the browser lives
// until Close, or until it exits by itself (Done).
func Launch(ctx context.Context, opts Options) (*Browser, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = DefaultCloseTimeout
	}
	if opts.CDPURL != "" {
		return attach(ctx, opts)
	}
	path, err := Find(opts.ChromePath)
	if err != nil {
		return nil, err
	}
	b := &Browser{opts: opts, log: opts.Log, dir: opts.UserDataDir, done: make(chan struct{})}
	if b.dir == "" {
		b.dir, err = os.MkdirTemp("", "director-incognito-")
		if err != nil {
			return nil, errcode.Hinted(err, errcode.BrowserLaunchFailed, "check that the temp dir ($TMPDIR) is writable", "create an incognito profile dir")
		}
		b.tempDir = true
	} else {
		if b.dir, err = filepath.Abs(b.dir); err != nil {
			return nil, errcode.Wrap(err, errcode.InvalidInput, "bad user-data-dir %q", opts.UserDataDir)
		}
		if err := os.MkdirAll(b.dir, 0o700); err != nil {
			return nil, errcode.Hinted(err, errcode.BrowserLaunchFailed, "check the permissions of "+filepath.Dir(b.dir), "create %s", b.dir)
		}
	}
	ok := false
	defer func() {
		if !ok && b.tempDir {
			_ = os.RemoveAll(b.dir)
		}
	}()

	removed, err := CleanRuntimeFiles(b.dir)
	if err != nil {
		return nil, err
	}
	if len(removed) > 0 {
		b.log.Info("removed stale Chrome runtime files", "dir", b.dir, "files", removed)
	}
	if opts.KeepSessionCookies {
		if err := keepSessionCookies(b.dir, !opts.RestoreTabs); err != nil {
			return nil, err
		}
	}

	if _, hasDeadline := ctx.Deadline(); !hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}
	t0 := time.Now()
	args := Args(opts, b.dir)
	// Before the start, so that a Chrome that fails to start can be run by
	// hand with the same flags (the launch error's hint says so). Without
	// --remote-debugging-pipe: run by hand, Chrome finds no pipe and exits
	// with that, not with why it failed.
	b.log.Debug("starting chrome", "command", CommandLine(path, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--remote-debugging-pipe" })))
	if err := b.start(ctx, path, args); err != nil {
		return nil, err
	}
	ok = true
	b.log.Info("chrome started", "pid", b.PID(), "version", b.Version(), "dir", b.dir, "headless", opts.Headless,
		"incognito", b.tempDir, "took", time.Since(t0).Round(time.Millisecond))
	return b, nil
}

// Args returns Chrome's command line for opts and the user-data-dir dir,
// without the executable. It is exported for tests and `--dry-run` style
// reporting.
func Args(opts Options, dir string) []string {
	args := []string{
		"--user-data-dir=" + dir,
		"--remote-debugging-pipe",
		// DESIGN.md Chrome fact 1: cookies encrypted with a fixed key, so a
		// profile restored on another machine still decrypts.
		"--password-store=basic",
		"--use-mock-keychain",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-quic",
		"--disable-breakpad",
		"--disable-client-side-phishing-detection",
		"--disable-default-apps",
		"--disable-dev-shm-usage",
		"--disable-hang-monitor",
		"--disable-prompt-on-repost",
		"--metrics-recording-only",
		// No session-crashed bubble and no "restore pages?" prompt after a
		// kill; and no https-first detour for plain-http test sites.
		"--disable-session-crashed-bubble",
		"--disable-features=Translate,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable",
	}
	if opts.Headless {
		args = append(args, "--headless=new", "--disable-gpu")
	}
	if opts.Viewport.W > 0 && opts.Viewport.H > 0 {
		args = append(args, fmt.Sprintf("--window-size=%d,%d", opts.Viewport.W, opts.Viewport.H))
	}
	if opts.NoSandbox || os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	extra, rules := resolverRules(opts.ExtraFlags, opts.HostResolverRules, os.Getenv)
	if rules != "" {
		args = append(args, "--host-resolver-rules="+rules)
	}
	args = append(args, extra...)
	return append(args, "about:blank")
}

// CommandLine is path and args as one line a shell can run, with the
// credentials of any URL in them (user:password@ of a proxy) replaced by
// "REDACTED", for logs.
func CommandLine(path string, args []string) string {
	parts := make([]string, 0, len(args)+1)
	for _, a := range append([]string{path}, args...) {
		parts = append(parts, shellquote.Quote(urlUserinfoRE.ReplaceAllString(a, "${1}REDACTED@")))
	}
	return strings.Join(parts, " ")
}

// urlUserinfoRE finds the user:password@ of a URL.
var urlUserinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]+@`)

// start runs Chrome with a DevTools pipe and connects chromedp to it.
//
// director starts the process itself rather than through chromedp's
// ExecAllocator: that allocator kills Chrome (SIGKILL through its context)
// whenever the connection drops without chromedp.Cancel, and Chrome drops
// the pipe a moment before it exits when the user closes the last window,
// so `director profile open` would kill the browser in the middle of its
// orderly shutdown, losing the cookies it was writing. Owning the process
// also gives Done, PID, a bounded kill with a warning, and SIGTERM on our
// death.
func (b *Browser) start(ctx context.Context, path string, args []string) error {
	cmdR, parentW, err := os.Pipe()
	if err != nil {
		return errcode.Wrap(err, errcode.BrowserLaunchFailed, "create the DevTools pipe")
	}
	parentR, respW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		parentW.Close()
		return errcode.Wrap(err, errcode.BrowserLaunchFailed, "create the DevTools pipe")
	}
	b.output = newTailBuffer(16<<10, b.log)
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{cmdR, respW} // Chrome reads fd 3, writes fd 4
	cmd.Stdout = b.output
	cmd.Stderr = b.output
	setProcAttr(cmd)
	b.cmd = cmd

	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the starting thread exits, so that thread
		// must live as long as Chrome (go.dev/issue/27505).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		b.exitErr = cmd.Wait()
		close(b.done)
	}()
	err = <-started
	cmdR.Close()
	respW.Close()
	if err != nil {
		parentR.Close()
		parentW.Close()
		return errcode.Hinted(err, errcode.BrowserLaunchFailed, "check that "+path+" is a working Chrome (set --chrome or CHROME_PATH)", "start %s", path)
	}
	b.conn = chromedp.NewPipeConn(parentR, parentW)
	logf := func(format string, a ...any) { b.log.Debug("chromedp: " + fmt.Sprintf(format, a...)) }
	// The connection lives until Close: not bound to the start ctx.
	connCtx := context.WithoutCancel(ctx)
	cb, err := chromedp.NewBrowserTransport(connCtx, b.conn,
		chromedp.WithBrowserLogf(logf), chromedp.WithBrowserErrorf(logf))
	if err != nil {
		b.kill()
		return errcode.Wrap(err, errcode.BrowserLaunchFailed, "connect to Chrome")
	}
	b.cdp = cb

	fail := func(err error, what string) error {
		b.kill()
		<-b.done
		out := strings.TrimSpace(b.output.String())
		if out != "" {
			out = "; Chrome said: " + lastLines(out, 6)
		}
		hint := "rerun with --log-level debug, which logs Chrome's command line (\"starting chrome\"), and run that by hand to see why it exits"
		if ctx.Err() != nil {
			hint = "the start took too long; retry, or give it more time"
		}
		if e := noXServer(b.output.String(), args); e != nil {
			return e
		}
		return errcode.Hinted(err, errcode.BrowserLaunchFailed, hint, "%s%s", what, out)
	}

	v, err := callUntilExit(ctx, b, func(ctx context.Context) (browser.GetVersionResult, error) {
		return cdp.Call(ctx, cb, browser.GetVersion, cdp.Empty{})
	})
	if err != nil {
		return fail(err, "chrome did not answer on its DevTools pipe")
	}
	b.product = v.Product

	// Use the tab Chrome opened on about:blank rather than a second window.
	first, err := callUntilExit(ctx, b, func(ctx context.Context) (target.ID, error) {
		return firstPage(ctx, cb)
	})
	if err != nil {
		return fail(err, "find Chrome's first tab")
	}
	a := &pipeAllocator{b: cb}
	b.allocCtx, b.allocCancel = chromedp.NewAllocatorContext(connCtx, a)
	b.tabCtx, b.tabCancel = chromedp.NewContext(b.allocCtx, chromedp.WithTargetID(first))
	if _, err := callUntilExit(ctx, b, func(context.Context) (struct{}, error) {
		// The first Do attaches to the tab; it runs on tabCtx itself,
		// which lives until Close.
		return struct{}{}, chromedp.Do(b.tabCtx)
	}); err != nil {
		b.tabCancel()
		b.allocCancel()
		return fail(err, "attach to Chrome's first tab")
	}
	return nil
}

// firstPage waits for the first page target of a starting browser.
func firstPage(ctx context.Context, cb *chromedp.Browser) (target.ID, error) {
	for {
		res, err := cdp.Call(ctx, cb, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			return "", err
		}
		for _, t := range res.TargetInfos {
			if t.Type == "page" {
				return t.TargetID, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// callUntilExit runs f, giving up when ctx ends or the process exits.
func callUntilExit[T any](ctx context.Context, b *Browser, f func(context.Context) (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f(ctx)
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-b.done:
		var zero T
		return zero, fmt.Errorf("chrome exited during the start: %v", b.exitErr)
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// pipeAllocator hands chromedp the browser that Launch connected. It is an
// Attacher, so chromedp never owns (or kills) the process.
type pipeAllocator struct{ b *chromedp.Browser }

func (a *pipeAllocator) Allocate(context.Context, ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	return a.b, nil
}
func (a *pipeAllocator) Wait()          {}
func (a *pipeAllocator) Attaches() bool { return true }

// attach connects to a browser that already runs.
func attach(ctx context.Context, opts Options) (*Browser, error) {
	b := &Browser{opts: opts, log: opts.Log, remote: true, done: make(chan struct{})}
	connCtx := context.WithoutCancel(ctx)
	b.allocCtx, b.allocCancel = remote.NewAllocator(connCtx, opts.CDPURL)
	logf := func(format string, a ...any) { b.log.Debug("chromedp: " + fmt.Sprintf(format, a...)) }
	b.tabCtx, b.tabCancel = chromedp.NewContext(b.allocCtx, chromedp.WithLogf(logf), chromedp.WithErrorf(logf))
	if _, hasDeadline := ctx.Deadline(); !hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Do(b.tabCtx) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		b.tabCancel()
		b.allocCancel()
		return nil, errcode.Hinted(err, errcode.BrowserLaunchFailed,
			"check that a browser listens on "+opts.CDPURL+" (its DevTools address, ws:// or http://host:port)", "attach to %s", opts.CDPURL)
	}
	b.cdp = chromedp.FromContext(b.tabCtx).Browser
	if v, err := cdp.Call(ctx, b.cdp, browser.GetVersion, cdp.Empty{}); err == nil {
		b.product = v.Product
	}
	go func() {
		<-b.cdp.LostConnection
		close(b.done)
	}()
	b.log.Info("attached to a running browser", "url", opts.CDPURL, "version", b.Version())
	if len(opts.HostResolverRules) > 0 {
		b.log.Debug("a running browser keeps its command line: the host resolver rules do not apply", "rules", len(opts.HostResolverRules))
	}
	return b, nil
}

// Context is the chromedp context of the first tab. Run actions on it or on
// contexts derived from it; it is cancelled by Close.
func (b *Browser) Context() context.Context { return b.tabCtx }

// CDP is the underlying chromedp browser, for browser-level commands and
// events (cdp.Call(ctx, b.CDP(), target.GetTargets, ...)).
func (b *Browser) CDP() *chromedp.Browser { return b.cdp }

// NewTab opens a new tab on url ("" = about:blank) and returns its chromedp
// context; cancel closes the tab.
func (b *Browser) NewTab(ctx context.Context, url string) (context.Context, context.CancelFunc, error) {
	tctx, cancel := chromedp.NewContext(b.tabCtx)
	errc := make(chan error, 1)
	go func() {
		var err error
		if url == "" || url == "about:blank" {
			err = chromedp.Do(tctx)
		} else {
			err = chromedp.Do(tctx, chromedp.Navigate(url))
		}
		errc <- err
	}()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	case <-b.done:
		err = errors.New("the browser exited")
	}
	if err != nil {
		cancel()
		return nil, nil, errcode.Hinted(err, errcode.Internal, "check the URL, or that the browser is still running", "open a new tab")
	}
	return tctx, cancel, nil
}

// AttachTab returns a chromedp context for an existing tab (for example a
// popup a link opened; see Tabs). Cancelling it closes that tab.
func (b *Browser) AttachTab(id target.ID) (context.Context, context.CancelFunc) {
	return chromedp.NewContext(b.tabCtx, chromedp.WithTargetID(id))
}

// Tabs lists the open page targets (tabs) of the browser.
func (b *Browser) Tabs(ctx context.Context) ([]*target.Info, error) {
	res, err := cdp.Call(ctx, b.cdp, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check that the browser is still running", "list the tabs")
	}
	var out []*target.Info
	for _, t := range res.TargetInfos {
		if t.Type == "page" {
			out = append(out, t)
		}
	}
	return out, nil
}

// Version is Chrome's version number, such as "156.0.8078.79" ("" when
// unknown).
func (b *Browser) Version() string {
	_, v, _ := strings.Cut(b.product, "/")
	return v
}

// Product is Chrome's product string, such as "Chrome/156.0.8078.79".
func (b *Browser) Product() string { return b.product }

// PID is the browser process id; 0 for a remote browser.
func (b *Browser) PID() int {
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// UserDataDir is the profile directory Chrome runs on ("" when remote).
func (b *Browser) UserDataDir() string { return b.dir }

// Incognito is true when the profile is a temp dir that Close removes.
func (b *Browser) Incognito() bool { return b.tempDir }

// Remote is true when the browser was attached through a CDP URL.
func (b *Browser) Remote() bool { return b.remote }

// Done is closed when the browser process exits, whether through Close, a
// crash, or the user closing the last window (for a remote browser: when the
// connection drops).
func (b *Browser) Done() <-chan struct{} { return b.done }

// Closing reports whether Close was called; after Done, false means the
// browser went away by itself (crash, or the window closed by the user).
func (b *Browser) Closing() bool { return b.closing.Load() }

// Killed reports whether Close had to kill the process after the graceful
// close timed out (cookies written since the last flush may be lost).
func (b *Browser) Killed() bool { return b.killed.Load() }

// ExitErr is the process's exit error after Done: nil for a clean exit, an
// *exec.ExitError otherwise (always nil for a remote browser).
func (b *Browser) ExitErr() error {
	select {
	case <-b.done:
		return b.exitErr
	default:
		return nil
	}
}

// Close closes the browser gracefully: CDP Browser.close, then it waits for
// the process to exit (Chrome writes cookies on an orderly shutdown). After
// opts.CloseTimeout it kills the process and logs a warning saying so. A
// cancelled ctx does not shorten the graceful wait (Ctrl-C must still save
// the profile); its deadline does, when earlier. An incognito dir is removed.
// For a remote browser Close only closes this Browser's tabs and
// disconnects. Close is safe to call more than once.
func (b *Browser) Close(ctx context.Context) error {
	b.closeOnce.Do(func() { b.closeErr = b.close(ctx) })
	return b.closeErr
}

func (b *Browser) close(ctx context.Context) error {
	b.closing.Store(true)
	if b.remote {
		b.tabCancel()
		b.allocCancel()
		return nil
	}
	timeout := b.opts.CloseTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), 0)
	}
	start := time.Now()
	select {
	case <-b.done:
		b.log.Info("chrome had already exited", "pid", b.PID(), "exit", b.exitErr)
	default:
		// chromedp refuses Browser.close on its own API (it wants
		// chromedp.Cancel, which only works for browsers it started), so
		// write the command straight onto the pipe. Nobody waits for the
		// answer; the process exit is the answer.
		// The id stays within int32: Chrome rejects larger ones.
		msg := &cdproto.Message{ID: 1<<31 - 1, Method: browser.CommandClose}
		if err := b.conn.Write(ctx, msg); err != nil {
			b.log.Info("could not send Browser.close; sending SIGTERM", "err", err)
			_ = terminate(b.cmd.Process)
		}
		select {
		case <-b.done:
			b.log.Info("chrome closed gracefully", "pid", b.PID(), "took", time.Since(start).Round(time.Millisecond))
		case <-time.After(timeout):
			b.log.Warn("chrome did not exit after Browser.close; killing it: cookies and storage written since its last flush may be lost",
				"pid", b.PID(), "waited", timeout, "dir", b.dir)
			b.killed.Store(true)
			b.kill()
			<-b.done
		}
	}
	b.tabCancel()
	b.allocCancel()
	if b.killed.Load() || b.tempDir {
		killLeftovers(b.dir)
	}
	// Chrome removes its runtime files itself when it exits in order; after
	// a kill or a crash they stay, and so does its socket directory in /tmp,
	// which no later Chrome removes either.
	if removed, err := CleanRuntimeFiles(b.dir); err != nil {
		b.log.Warn("could not remove Chrome's runtime files after it exited", "dir", b.dir, "err", err)
	} else if len(removed) > 0 {
		b.log.Info("removed the runtime files Chrome left behind", "dir", b.dir, "files", removed)
	}
	if b.tempDir {
		if err := removeAllRetry(b.dir, 5*time.Second); err != nil {
			return errcode.Hinted(err, errcode.Internal, "remove "+b.dir+" by hand", "remove the incognito profile")
		}
	}
	return nil
}

// kill kills the browser process (not its leftovers; see killLeftovers).
func (b *Browser) kill() {
	if b.cmd != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Kill()
	}
}

// removeAllRetry removes dir, retrying while a just-exited child process
// still creates files in it.
func removeAllRetry(dir string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := os.RemoveAll(dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tailBuffer keeps the last max bytes of Chrome's output for error messages
// and logs each line at debug level.
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	line []byte
	log  *slog.Logger
}

func newTailBuffer(max int, log *slog.Logger) *tailBuffer { return &tailBuffer{max: max, log: log} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	t.line = append(t.line, p...)
	for {
		i := bytes.IndexByte(t.line, '\n')
		if i < 0 {
			break
		}
		t.log.Debug("chrome output", "line", string(t.line[:i]))
		t.line = t.line[i+1:]
	}
	if len(t.line) > 4096 {
		t.line = t.line[:0]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLines returns the last n lines of s joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// noXServer recognises, in the output of a headed Chrome that exited at its
// start, that it found no X server to open its window on, and says that in
// one line: the whole output was pages of D-Bus and zygote errors around
// "Missing X server or $DISPLAY". nil when that is not why it exited.
func noXServer(output string, args []string) error {
	if !strings.Contains(output, "Missing X server or $DISPLAY") || slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--headless")
	}) {
		return nil
	}
	display := os.Getenv("DISPLAY")
	if display == "" {
		return errcode.New(errcode.BrowserLaunchFailed, "Chrome found no display to open its window on (DISPLAY is unset)").
			WithHint("use --headless, or run it in a desktop session (or over ssh -X); %s", debugLine)
	}
	return errcode.New(errcode.BrowserLaunchFailed, "Chrome could not open a window on DISPLAY=%s: it has no X server, or the server refused the connection (Chrome said \"Missing X server or $DISPLAY\")", display).
		WithHint("use --headless; or set DISPLAY to a running X server's display, and XAUTHORITY to its cookie file if it needs one; %s", debugLine)
}

// debugLine says where to find the Chrome command line to run by hand.
const debugLine = "--log-level debug logs Chrome's command line (\"starting chrome\") to run by hand"
