//go:build !linux

package storage

// networkMount tells network file systems apart only on Linux.
func networkMount(string) (mount, fsType string) { return "", "" }

// readMountinfo has nothing to read off Linux.
func readMountinfo() string { return "" }
