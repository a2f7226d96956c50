// Package launcher finds Chrome, starts it on a profile's user-data-dir (or
// an incognito temp dir) through chromedp with the flags DESIGN.md requires,
// closes it gracefully through CDP Browser.close so that cookies reach the
// disk, or attaches to a browser that is already running (--cdp-url).
//
// It also owns the knowledge of Chrome's runtime files in a user-data-dir:
// ProfileInUse tells whether a live Chrome holds a profile (its
// SingletonLock), and CleanRuntimeFiles removes the stale ones a crash leaves
// behind. Other packages (profiles, session) build on these; launcher imports
// nothing of the project but errcode.
package launcher
