package profiles

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	_ "github.com/mattn/go-sqlite3" // the Cookies database is SQLite
)

// cookieDBNames are where Chrome keeps its cookie database, per profile
// directory: Default/Cookies on Linux and macOS, Default/Network/Cookies on
// Windows and in some builds.
func cookieDBNames() []string { return []string{"Cookies", filepath.Join("Network", "Cookies")} }

// KeyringBoundCookies counts the cookies in a profile whose values are
// encrypted with a key from the desktop keyring ("v11" prefix on Linux)
// rather than Chrome's fixed key ("v10", what --password-store=basic
// gives). Such cookies do not decrypt on another machine (chromium
// components/os_crypt/sync/os_crypt_linux.cc), so a snapshot holding them
// will not carry the login elsewhere. It reads the database read-only and
// never looks at cookie values beyond their 3-byte prefix. Files it cannot
// read as a cookie database are skipped; their errors are returned only
// when no keyring-bound cookie was found.
func KeyringBoundCookies(ctx context.Context, profileDir string) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(profileDir, "*", "Preferences"))
	if err != nil {
		return 0, err
	}
	total := 0
	var firstErr error
	for _, prefs := range dirs {
		for _, name := range cookieDBNames() {
			p := filepath.Join(filepath.Dir(prefs), name)
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			n, err := countV11(ctx, p)
			if err != nil {
				firstErr = errors.Join(firstErr, err)
				continue // not a cookie database we understand; check the rest
			}
			total += n
		}
	}
	if total > 0 {
		return total, nil
	}
	return 0, firstErr
}

func countV11(ctx context.Context, path string) (int, error) {
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM cookies WHERE substr(encrypted_value, 1, 3) = CAST('v11' AS BLOB)`).Scan(&n)
	return n, err
}
