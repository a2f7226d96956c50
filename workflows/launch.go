package workflows

import (
	"context"
	"log/slog"
	"time"

	"director/launcher"
	"director/session"
)

// ChromeOptions are the command-line choices for starting Chrome.
type ChromeOptions struct {
	ChromePath string   // --chrome / CHROME_PATH; "" searches
	CDPURL     string   // --cdp-url: attach to a running browser instead
	ExtraFlags []string // added to Chrome's command line
	Log        *slog.Logger
	// CloseTimeout bounds the graceful close before Chrome is killed;
	// 0 is launcher.DefaultCloseTimeout.
	CloseTimeout time.Duration
}

// ChromeLauncher returns a Launcher on the launcher package: Chrome with the
// DESIGN.md flags on the run's user-data-dir, the domain policy's host
// resolver rules, session-only cookies kept across the graceful close (so a
// snapshot holds them), and a bounded graceful close.
func ChromeLauncher(o ChromeOptions) Launcher {
	return func(ctx context.Context, lo LaunchOptions) (session.Browser, error) {
		return session.LaunchWith(launcher.Options{
			ChromePath:         o.ChromePath,
			CDPURL:             o.CDPURL,
			UserDataDir:        lo.UserDataDir,
			Headless:           lo.Headless,
			Viewport:           launcher.Viewport{W: lo.Width, H: lo.Height},
			ExtraFlags:         o.ExtraFlags,
			HostResolverRules:  lo.HostResolverRules,
			KeepSessionCookies: true,
			CloseTimeout:       o.CloseTimeout,
			Log:                o.Log,
		})(ctx)
	}
}
