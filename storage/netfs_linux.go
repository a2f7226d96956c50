package storage

import "os"

// networkMount is the mount point and type of the network file system
// that holds dir (absolute; it or its nearest existing parent, symlinks
// resolved), "" and "" when it is a local one or mountinfo cannot be read.
func networkMount(dir string) (mount, fsType string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	return networkMountIn(string(b), resolvePath(dir))
}
