package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"director/errcode"
)

// The runtime files Chrome keeps in the root of a user-data-dir while it
// runs (DESIGN.md Chrome fact 4).
const (
	singletonLock      = "SingletonLock"
	singletonSocket    = "SingletonSocket"
	singletonCookie    = "SingletonCookie"
	devToolsActivePort = "DevToolsActivePort"
)

// RuntimeFiles returns the names of the files Chrome creates in the root of
// a user-data-dir while it runs. They must never be archived, and stale ones
// must be removed before a launch. The slice is fresh on every call.
func RuntimeFiles() []string {
	return []string{singletonLock, singletonSocket, singletonCookie, devToolsActivePort}
}

// LockInfo describes the SingletonLock of a user-data-dir.
type LockInfo struct {
	// Present is true when a SingletonLock exists.
	Present bool `json:"present"`
	// Target is the raw symlink target, "<hostname>-<pid>".
	Target string `json:"target,omitempty"`
	// Host and PID are parsed from Target.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Local is true when Host is this machine's hostname.
	Local bool `json:"local"`
	// Alive is true when Local and the pid is a live process that started
	// before the lock was written (so not a reused pid).
	Alive bool `json:"alive"`
	// Reason says in words why the profile is or is not in use.
	Reason string `json:"reason"`
}

// ProfileInUse reports whether a Chrome process is running on the
// user-data-dir dir: its SingletonLock symlink (target "<hostname>-<pid>")
// names this host and a live pid. A lock naming another host counts as in
// use too (a profile on a shared disk); info.Reason says so. A missing dir or
// lock is not in use. err is non-nil only when the lock cannot be read.
func ProfileInUse(dir string) (info LockInfo, inUse bool, err error) {
	p := filepath.Join(dir, singletonLock)
	target, err := os.Readlink(p)
	if errors.Is(err, fs.ErrNotExist) {
		info.Reason = "no SingletonLock: no Chrome runs on this profile"
		return info, false, nil
	}
	if err != nil {
		// A SingletonLock that is not a symlink: Windows keeps a plain
		// "lockfile" instead, so this is something odd; look closer.
		st, serr := os.Lstat(p)
		if serr == nil && st.Mode().IsRegular() {
			info.Present = true
			info.Reason = "SingletonLock is a regular file, not Chrome's symlink: treating it as stale"
			return info, false, nil
		}
		return info, false, errcode.Hinted(err, errcode.Internal,
			"check the permissions of "+dir, "read %s", p)
	}
	info.Present = true
	info.Target = target
	i := strings.LastIndexByte(target, '-')
	pid, perr := strconv.Atoi(target[i+1:])
	if i <= 0 || perr != nil || pid <= 0 {
		info.Reason = fmt.Sprintf("SingletonLock target %q is not <hostname>-<pid>: treating it as stale", target)
		return info, false, nil
	}
	info.Host, info.PID = target[:i], pid
	host, herr := os.Hostname()
	if herr != nil {
		return info, false, errcode.Hinted(herr, errcode.Internal, "", "read this machine's hostname")
	}
	if info.Host != host {
		info.Reason = fmt.Sprintf("SingletonLock names another host %q (pid %d): a Chrome there may be using this profile on a shared disk; close it, or remove %s if that Chrome is gone",
			info.Host, info.PID, p)
		return info, true, nil
	}
	info.Local = true
	var lockTime int64
	if st, serr := os.Lstat(p); serr == nil {
		lockTime = st.ModTime().Unix()
	}
	alive, why := processAlive(pid, lockTime)
	info.Alive = alive
	if alive {
		info.Reason = fmt.Sprintf("Chrome (pid %d) is running on this profile", pid)
		return info, true, nil
	}
	info.Reason = fmt.Sprintf("SingletonLock names pid %d, which %s: the lock is stale", pid, why)
	return info, false, nil
}

// CleanRuntimeFiles removes stale SingletonLock, SingletonSocket,
// SingletonCookie and DevToolsActivePort files from the user-data-dir dir
// and returns the names it removed, followed by the path of the temp
// directory the stale SingletonSocket pointed into when it removed that too
// (see removeSocketDir). It refuses with profile_in_use when a Chrome runs
// on the profile (see ProfileInUse). A missing dir is not an error.
func CleanRuntimeFiles(dir string) ([]string, error) {
	info, inUse, err := ProfileInUse(dir)
	if err != nil {
		return nil, err
	}
	if inUse {
		return nil, errcode.New(errcode.ProfileInUse, "profile %s is in use: %s", dir, info.Reason).
			WithHint("close the Chrome window using this profile (or wait for the run to end), then retry")
	}
	socketDir := removeSocketDir(dir) // reads the symlinks removed below
	var removed []string
	for _, name := range RuntimeFiles() {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return removed, errcode.Hinted(err, errcode.Internal, "check the permissions of "+dir, "inspect %s", p)
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, errcode.Hinted(err, errcode.Internal, "remove it by hand and retry", "remove stale %s", p)
		}
		removed = append(removed, name)
	}
	if socketDir != "" {
		removed = append(removed, socketDir)
	}
	return removed, nil
}
