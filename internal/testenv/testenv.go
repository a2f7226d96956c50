// Package testenv holds the one policy every test that needs a real part
// (Chromium, the zstd binary, the versitygw S3 server) follows: when the part
// is missing, the test fails under CI (CI is set) and is skipped elsewhere,
// so that CI can never pass by skipping. It imports nothing of the project.
package testenv

import (
	"os"
	"testing"
)

// Require fails (under CI) or skips (elsewhere) t when err says that the
// part named what is missing.
func Require(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required in CI: %v (.ci/deps installs it)", what, err)
	}
	t.Skipf("%s not found (%v); `bash .ci/deps` installs it", what, err)
}
