package workflows

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"director/session"
)

// chromePath finds Chromium: the test fails when CI is set and there is
// none, and is skipped otherwise.
func chromePath(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROME_PATH"), "/usr/bin/chromium", "chromium", "google-chrome"} {
		if p == "" {
			continue
		}
		if full, err := exec.LookPath(p); err == nil {
			return full
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is required in CI: install the chromium package or set CHROME_PATH")
	}
	t.Skip("chromium not found; set CHROME_PATH")
	return ""
}

// execBrowser is a Chromium started by chromedp's exec allocator, closed
// gracefully with Browser.close and a wait for the process to exit.
type execBrowser struct {
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	done   chan struct{}
}

func (b *execBrowser) Context() context.Context { return b.ctx }
func (b *execBrowser) Done() <-chan struct{}    { return b.done }

func (b *execBrowser) Close(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		// chromedp.Cancel sends Browser.close and waits for the process
		// to exit, so Chrome flushes cookies and storage to disk.
		cctx, cancel := context.WithTimeout(b.ctx, 15*time.Second) // Cancel needs the chromedp context
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		err = chromedp.Cancel(cctx)
		cancel()
		b.cancel()
	})
	return err
}

// testLauncher launches headless Chromium for the runner with the DESIGN.md
// flags plus extra ones (the test site's host mapping).
func testLauncher(t testing.TB, extra ...string) Launcher {
	path := chromePath(t)
	return func(ctx context.Context, o LaunchOptions) (session.Browser, error) {
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path), chromedp.UserDataDir(o.UserDataDir), chromedp.NoSandbox, chromedp.Headless,
			chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.Flag("password-store", "basic"),
			chromedp.Flag("use-mock-keychain", true), chromedp.Flag("disable-quic", true),
			chromedp.WindowSize(o.Width, o.Height),
		}
		for _, f := range extra {
			name, val, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
			if ok {
				opts = append(opts, chromedp.Flag(name, val))
			} else {
				opts = append(opts, chromedp.Flag(name, true))
			}
		}
		actx, acancel := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil {
			bcancel()
			acancel()
			return nil, err
		}
		b := &execBrowser{ctx: bctx, cancel: func() { bcancel(); acancel() }, done: make(chan struct{})}
		go func() {
			<-bctx.Done()
			close(b.done)
		}()
		return b, nil
	}
}
