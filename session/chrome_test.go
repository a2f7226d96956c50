package session

import (
	"testing"

	"director/internal/testenv"
	"director/launcher"
)

// chromePath finds Chromium for the tests: it fails the test when CI is set
// and none is found, and skips it otherwise.
func chromePath(t testing.TB) string {
	t.Helper()
	p, err := launcher.Find("")
	testenv.Require(t, "Chromium", err)
	return p
}

// launcherFor returns a LaunchFunc that starts headless Chromium through
// the launcher package on a fresh incognito dir, with the extra flags.
func launcherFor(t testing.TB, extra ...string) LaunchFunc {
	return launcherWithRules(t, nil, extra...)
}

// launcherWithRules is launcherFor with host resolver rules, as a
// workflow run launches Chrome for a policy (Policy.ResolverRules).
func launcherWithRules(t testing.TB, rules []string, extra ...string) LaunchFunc {
	path := chromePath(t)
	return LaunchWith(launcher.Options{ChromePath: path, Headless: true,
		Viewport: launcher.Viewport{W: 1280, H: 800}, ExtraFlags: extra, HostResolverRules: rules})
}
