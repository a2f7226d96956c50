package snapshot

import "syscall"

func statTimes(s *syscall.Stat_t) (mtime, ctime syscall.Timespec) { return s.Mtim, s.Ctim }
