//go:build !(linux || darwin || freebsd)

package snapshot

import "io/fs"

type statStamp struct{ mtime int64 }

func stampOf(fi fs.FileInfo) statStamp { return statStamp{mtime: fi.ModTime().UnixNano()} }
