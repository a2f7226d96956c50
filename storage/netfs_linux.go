package storage

import "os"

// networkFS is the type of the network file system that holds dir
// (absolute; it or its nearest existing parent, symlinks resolved), ""
// when it is a local one or mountinfo cannot be read.
func networkFS(dir string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	return networkFSIn(string(b), resolvePath(dir))
}
