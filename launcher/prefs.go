package launcher

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"director/errcode"
)

// restoreLastSession is the value of the preference session.restore_on_startup
// that means "continue where you left off" (SessionStartupPref::LAST).
const restoreLastSession = 1

// keepSessionCookies makes Chrome keep session-only cookies across restarts.
//
// Chrome drops cookies without an expiry at exit, unless the profile's
// startup preference is "continue where you left off": then the network
// service persists session cookies to the Cookies database and restores them at
// the next start (ProfileNetworkContextService: persist_session_cookies and
// restore_old_session_cookies follow SessionStartupPref::ShouldRestoreLastSession).
// So this sets Default/Preferences "session.restore_on_startup" to 1, keeping
// every other preference. It must be in place before the browser that
// receives the cookies starts, because Chrome decides at start whether to
// write session cookies to disk at all.
//
// When dropTabs is true it also removes Default/Sessions, so that the next
// start restores no tabs (no stray page loads in an automated run); the
// cookie decision depends on the preference only, not on those files.
func keepSessionCookies(userDataDir string, dropTabs bool) error {
	def := filepath.Join(userDataDir, "Default")
	if err := os.MkdirAll(def, 0o700); err != nil {
		return errcode.Hinted(err, errcode.BrowserLaunchFailed, "check the permissions of "+userDataDir, "create %s", def)
	}
	p := filepath.Join(def, "Preferences")
	prefs := map[string]any{}
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return errcode.Hinted(err, errcode.BrowserLaunchFailed, "check the permissions of "+p, "read %s", p)
	default:
		if err := json.Unmarshal(b, &prefs); err != nil {
			// Chrome itself would reset an unreadable file; do not make
			// things worse by rewriting it.
			return errcode.Hinted(err, errcode.BrowserLaunchFailed,
				"the profile's Preferences file is damaged: restore a snapshot or remove the file", "parse %s", p)
		}
	}
	session, _ := prefs["session"].(map[string]any)
	if session == nil {
		session = map[string]any{}
	}
	if v, ok := session["restore_on_startup"].(float64); !ok || v != restoreLastSession {
		session["restore_on_startup"] = restoreLastSession
		prefs["session"] = session
		out, err := json.Marshal(prefs)
		if err != nil {
			return errcode.Wrap(err, errcode.Internal, "encode %s", p)
		}
		if err := writeFileAtomic(p, out, 0o600); err != nil {
			return errcode.Hinted(err, errcode.BrowserLaunchFailed, "check the free space and permissions of "+def, "write %s", p)
		}
	}
	if dropTabs {
		if err := os.RemoveAll(filepath.Join(def, "Sessions")); err != nil {
			return errcode.Hinted(err, errcode.BrowserLaunchFailed, "check the permissions of "+def, "remove the saved tabs")
		}
	}
	return nil
}

// writeFileAtomic writes data to a temp file beside p, syncs it and renames
// it over p.
func writeFileAtomic(p string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".director-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
