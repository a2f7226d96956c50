package session

import (
	"os"
	"os/exec"
	"testing"

	"director/launcher"
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

// launcherFor returns a LaunchFunc that starts headless Chromium through
// the launcher package on a fresh incognito dir, with the extra flags.
func launcherFor(t testing.TB, extra ...string) LaunchFunc {
	path := chromePath(t)
	return LaunchWith(launcher.Options{ChromePath: path, Headless: true,
		Viewport: launcher.Viewport{W: 1280, H: 800}, ExtraFlags: extra})
}
