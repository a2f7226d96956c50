//go:build !unix

package proc

// exists cannot tell here: the process counts as alive.
func exists(pid int) bool { return true }
