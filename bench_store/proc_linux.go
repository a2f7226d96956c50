package main

import (
	"os"
	"syscall"
)

// childAttr makes a child die with this process, so that neither the server
// nor a measured child outlives a killed benchmark.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// usage returns the peak RSS of a finished child in KiB (getrusage reports
// KiB on Linux) and its CPU time, user plus system, in seconds.
func usage(ps *os.ProcessState) (rssKiB int64, cpuSeconds float64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return -1, -1
	}
	return ru.Maxrss, float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
