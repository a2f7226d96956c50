//go:build linux || darwin || freebsd

package snapshot

import (
	"io/fs"
	"syscall"
)

// statStamp identifies one version of a file: a write changes its ctime even
// when the writer resets the mtime.
type statStamp struct {
	ino                 uint64
	mtimeSec, mtimeNsec int64
	ctimeSec, ctimeNsec int64
}

func stampOf(fi fs.FileInfo) statStamp {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statStamp{mtimeNsec: fi.ModTime().UnixNano()}
	}
	mt, ct := statTimes(s)
	return statStamp{ino: uint64(s.Ino), mtimeSec: mt.Sec, mtimeNsec: mt.Nsec, ctimeSec: ct.Sec, ctimeNsec: ct.Nsec}
}
