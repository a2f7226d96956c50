//go:build unix

package launcher

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"director/internal/proc"
)

// processAlive reports whether pid is a live process on this host. On Linux
// it also rejects a pid that was reused: a process that started clearly
// after lockTime (unix seconds, 0 = unknown) cannot be the Chrome that wrote
// the lock. why explains a false answer.
func processAlive(pid int, lockTime int64) (alive bool, why string) {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false, "is not running"
	}
	if start, ok := processStart(pid); ok && lockTime > 0 && start > lockTime+5 {
		return false, "was reused by a process started after the lock was written"
	}
	if isZombie(pid) {
		return false, "has exited (zombie)"
	}
	return true, ""
}

// processStart returns the start time of pid in unix seconds from /proc
// (Linux only; ok is false elsewhere).
func processStart(pid int) (int64, bool) {
	_, ticks, ok := proc.Stat(pid)
	if !ok {
		return 0, false
	}
	boot, ok := bootTime()
	if !ok {
		return 0, false
	}
	const clkTck = 100 // USER_HZ on every Linux architecture Chrome supports
	return boot + ticks/clkTck, true
}

func bootTime() (int64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "btime "); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// isZombie reports whether pid has exited but not been reaped (Linux only).
func isZombie(pid int) bool {
	state, _, ok := proc.Stat(pid)
	return ok && state == 'Z'
}
