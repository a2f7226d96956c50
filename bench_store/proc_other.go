//go:build !linux

package main

import (
	"os"
	"syscall"
)

func childAttr() *syscall.SysProcAttr { return nil }

// usage is only implemented on Linux, where Maxrss is in KiB; elsewhere the
// peak RSS is reported as unknown (-1).
func usage(ps *os.ProcessState) (rssKiB int64, cpuSeconds float64) {
	return -1, (ps.UserTime() + ps.SystemTime()).Seconds()
}
