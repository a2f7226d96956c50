package workflows

import (
	"os"
	"os/exec"
	"testing"
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
