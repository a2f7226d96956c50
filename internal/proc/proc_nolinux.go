//go:build !linux

package proc

// Stat is Linux only: ok is always false here.
func Stat(pid int) (state byte, startTicks int64, ok bool) { return 0, 0, false }

// start is unknown outside Linux.
func start(pid int) (string, bool) { return "", false }

func zombie(pid int) bool { return false }

// judge cannot decide anything from a start here.
func judge(recorded string) (alive, decided bool) { return false, false }
