package workflows

import (
	"testing"

	"director/internal/testenv"
	"director/launcher"
)

// chromePath finds Chromium: the test fails when CI is set and there is
// none, and is skipped otherwise.
func chromePath(t testing.TB) string {
	t.Helper()
	p, err := launcher.Find("")
	testenv.Require(t, "Chromium", err)
	return p
}
