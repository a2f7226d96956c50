//go:build !unix

package launcher

// removeSocketDir is a no-op where Chrome keeps no socket directory (Windows
// uses a lock file and a window message instead).
func removeSocketDir(string) string { return "" }
