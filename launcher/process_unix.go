//go:build unix

package launcher

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
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
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: field 3 is the state, field 22 the start time in clock ticks
	// since boot.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
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
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] == 'Z'
}
