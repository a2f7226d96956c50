//go:build !linux

package testenv

import "testing"

// SmallDisk mounts a small tmpfs on Linux; elsewhere the test is skipped.
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	t.Skip("a small tmpfs to fill needs Linux")
	return ""
}
