package session

import (
	"context"

	"director/launcher"
)

// launcher.Browser is the Browser the session engine runs on.
var _ Browser = (*launcher.Browser)(nil)

// LaunchWith returns a LaunchFunc that starts Chrome (or attaches to
// o.CDPURL) through the launcher package with options o.
func LaunchWith(o launcher.Options) LaunchFunc {
	return func(ctx context.Context) (Browser, error) {
		b, err := launcher.Launch(ctx, o)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}
