// Package launcher finds Chrome, starts it on a profile's user-data-dir (or
// an incognito temp dir) through chromedp with the flags DESIGN.md requires,
// closes it gracefully through CDP Browser.close so that cookies reach the
// disk, or attaches to a browser that is already running (--cdp-url).
//
// It also owns the knowledge of Chrome's runtime files in a user-data-dir:
// ProfileInUse tells whether a live Chrome holds a profile (its
// SingletonLock), and CleanRuntimeFiles removes the stale ones a crash leaves
// behind, with the socket directory in /tmp that they point to; Close runs
// it once Chrome has exited, so a killed Chrome leaves nothing behind. Other
// packages (profiles, session) build on these; launcher imports nothing of
// the project but errcode.
//
// # Process ownership
//
// Launch starts Chrome itself with --remote-debugging-pipe and hands the
// pipe to chromedp (NewPipeConn, NewBrowserTransport, and an allocator that
// only attaches). chromedp's ExecAllocator is not used because it kills
// Chrome whenever the connection drops without chromedp.Cancel, and Chrome
// drops the pipe just before it exits when a person closes the last window:
// that kill would interrupt the orderly shutdown that writes cookies. Close
// sends CDP Browser.close, waits for the process (Options.CloseTimeout,
// default 10 s), and only then kills it, logging a warning; Killed reports
// it. On Linux Chrome gets SIGTERM (an orderly shutdown) if director dies, and
// runs in a process group of its own, so that a terminal's Ctrl-C or hangup
// reaches director, which closes it through CDP, and not Chrome's helpers.
//
// # Session-only cookies (DESIGN.md Chrome fact 8, issue 3 item 7)
//
// Measured with Debian Chromium 156: cookies without an expiry are gone
// after a graceful close and relaunch by default, and survive when the
// profile's Default/Preferences has "session": {"restore_on_startup": 1}
// ("continue where you left off") before the browser that receives them
// starts. Chrome then writes them to the cookie database and restores them
// at the next start, so they also survive snapshot, wipe and restore.
// Options.KeepSessionCookies sets that preference (keeping every other one)
// and, unless Options.RestoreTabs, removes Default/Sessions so that the
// relaunch opens one blank tab rather than the last session's pages; the
// cookie decision follows the preference alone. Both are tested against real
// Chromium (TestSessionCookieSurvival has the default-drops control case).
//
// On Linux the cookie database is Default/Cookies (Default/Network/Cookies
// is the Windows layout).
//
// # Host resolver rules
//
// Options.HostResolverRules (a session's domain policy) and any
// --host-resolver-rules in ExtraFlags become one flag, the caller's rules
// first, since Chrome keeps only the last of repeated flags and takes the
// first MAP rule that matches. Rules that refuse names could cut Chrome off
// its proxy, whose host it resolves through the same rules, so the proxy
// hosts of the environment and of --proxy-server get an EXCLUDE (measured
// with Debian Chromium: TestResolverRulesKeepTheProxy fails with
// ERR_PROXY_CONNECTION_FAILED without it).
package launcher
