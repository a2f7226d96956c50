//go:build darwin || freebsd

package snapshot

import "syscall"

func statTimes(s *syscall.Stat_t) (mtime, ctime syscall.Timespec) { return s.Mtimespec, s.Ctimespec }
