package storage

import (
	"path/filepath"
	"strconv"
	"strings"
)

// isNetworkType says whether file systems of type t (as mountinfo names
// it) keep their files on another machine: a file:// store on one leaves
// this machine, and takes encrypted archives only, as a remote store does.
func isNetworkType(t string) bool {
	switch t {
	case "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "afs", "coda", "lustre", "gpfs", "glusterfs",
		"fuse.sshfs", "fuse.rclone", "fuse.s3fs", "fuse.gcsfuse", "fuse.goofys", "fuse.juicefs", "fuse.glusterfs",
		"fuse.cephfs", "fuse.davfs", "fuse.curlftpfs", "fuse.mountpoint-s3", "fuse.blobfuse2":
		return true
	}
	return false
}

// networkFSIn finds, in the text of /proc/self/mountinfo, the mount that
// holds path (absolute, symlinks resolved: the longest mount point that is
// path or a parent of it) and returns its type when it is a network file
// system, "" otherwise.
func networkFSIn(mountinfo, path string) string {
	_, t := networkMountIn(mountinfo, path)
	return t
}

// networkMountIn is networkFSIn with the mount point too ("" and "" for a
// local file system).
func networkMountIn(mountinfo, path string) (mount, fsType string) {
	best, bestType := "", ""
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		mnt := unescapeMount(fields[4])
		if !within(path, mnt) || len(mnt) < len(best) {
			continue
		}
		best, bestType = mnt, fields[sep+1]
	}
	if isNetworkType(bestType) {
		return best, bestType
	}
	return "", ""
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// NetworkMountOf is the mount point of the network file system holding
// path (absolute), "" when it is on a local one: a caller compares it with
// a file store's NetworkMount.
func NetworkMountOf(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // a relative one is the working directory's
	}
	m, _ := networkMount(path)
	return m
}
