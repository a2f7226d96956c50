package session

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromePath finds Chromium for the tests: it fails the test when CI is set
// and none is found, and skips it otherwise.
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

// testBrowser is a plain chromedp browser on a temp profile, enough for
// the session engine's tests (the launcher package has its own).
type testBrowser struct {
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

func (b *testBrowser) Context() context.Context { return b.ctx }
func (b *testBrowser) Done() <-chan struct{}    { return b.ctx.Done() }
func (b *testBrowser) Close(ctx context.Context) error {
	b.once.Do(func() {
		cctx, cancel := context.WithTimeout(b.ctx, 15*time.Second) // Cancel needs the chromedp context
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		_ = chromedp.Cancel(cctx) // Browser.close, then wait for the exit
		cancel()
		b.cancel()
	})
	return nil
}

// launcherFor returns a LaunchFunc that starts headless Chromium with the
// extra flags, on a fresh temp user-data-dir each time.
func launcherFor(t testing.TB, extra ...string) LaunchFunc {
	path := chromePath(t)
	return func(ctx context.Context) (Browser, error) {
		dir := t.TempDir()
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path), chromedp.UserDataDir(dir), chromedp.NoSandbox, chromedp.Headless,
			chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.Flag("password-store", "basic"),
			chromedp.Flag("use-mock-keychain", true), chromedp.Flag("disable-quic", true),
			chromedp.WindowSize(1280, 800),
		}
		for _, f := range extra {
			name, val, hasVal := cutFlag(f)
			if hasVal {
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
		return &testBrowser{ctx: bctx, cancel: func() { bcancel(); acancel() }}, nil
	}
}

func cutFlag(f string) (name, val string, hasVal bool) {
	for len(f) > 0 && f[0] == '-' {
		f = f[1:]
	}
	for i := 0; i < len(f); i++ {
		if f[i] == '=' {
			return f[:i], f[i+1:], true
		}
	}
	return f, "", false
}
