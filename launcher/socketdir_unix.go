//go:build unix

package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// isSocketDirName says whether name is one base::CreateNewTempDirectory
// gives the directory, under the temp dir, that holds a running Chrome's
// SingletonSocket and the second copy of its SingletonCookie: Chromium's
// and Google Chrome's, with and without the leading dot of older versions.
func isSocketDirName(name string) bool {
	for _, p := range []string{"org.chromium.Chromium.", ".org.chromium.Chromium.", "com.google.Chrome.", ".com.google.Chrome."} {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}

// removeSocketDir removes the directory a stale SingletonSocket in the
// user-data-dir dir points into, and returns its path ("" when there is none
// to remove). Chrome deletes that directory when it exits in order, but not
// after a crash, a kill or (headless Chromium 156) a SIGTERM, and a later
// Chrome on the same profile replaces the profile's symlinks without
// deleting the old directory: without this, every killed Chrome leaves one
// behind in /tmp until a reboot or a tmp cleaner removes it.
//
// It removes the directory only when it is provably the one Chrome made for
// this profile: named like Chrome's, a real directory owned by this user
// with mode 0700, holding nothing but SingletonSocket and a SingletonCookie
// whose cookie equals the profile's (Chrome's own proof that the two belong
// together; process_singleton_posix.cc). Anything else is left alone. It is
// best effort: a directory it cannot remove stays where it is, and the
// caller's work goes on. The caller has established that no Chrome runs on
// dir.
func removeSocketDir(dir string) string {
	target, err := os.Readlink(filepath.Join(dir, singletonSocket))
	if err != nil || !filepath.IsAbs(target) || filepath.Base(target) != singletonSocket {
		return ""
	}
	sd := filepath.Dir(target)
	if !isSocketDirName(filepath.Base(sd)) {
		return ""
	}
	cookie, err := os.Readlink(filepath.Join(dir, singletonCookie))
	if err != nil || cookie == "" {
		return ""
	}
	fi, err := os.Lstat(sd)
	if err != nil {
		return "" // already gone (a reboot cleans the temp dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ok || int(st.Uid) != os.Geteuid() {
		return ""
	}
	root, err := os.OpenRoot(sd)
	if err != nil {
		return ""
	}
	defer root.Close()
	if rfi, err := root.Stat("."); err != nil || !os.SameFile(fi, rfi) {
		return "" // replaced since the Lstat
	}
	if c, err := root.Readlink(singletonCookie); err != nil || c != cookie {
		return ""
	}
	d, err := root.Open(".")
	if err != nil {
		return ""
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return ""
	}
	for _, n := range names {
		if n != singletonSocket && n != singletonCookie {
			return ""
		}
	}
	for _, n := range names {
		if err := root.Remove(n); err != nil && !os.IsNotExist(err) {
			return ""
		}
	}
	if err := os.Remove(sd); err != nil { // rmdir: fails if anything appeared meanwhile
		return ""
	}
	return sd
}
