package storage

import "os"

// networkMount is the mount point and type of the network file system
// that holds dir (absolute; it or its nearest existing parent, symlinks
// resolved), "" and "" when it is a local one or mountinfo cannot be read.
func networkMount(dir string) (mount, fsType string) {
	return networkMountIn(readMountinfo(), resolvePath(dir))
}

// readMountinfo is the text of /proc/self/mountinfo, "" when it cannot be
// read.
func readMountinfo() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	return string(b)
}
