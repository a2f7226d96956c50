package proc

import (
	"fmt"
	"os"
)

// Process names one process of one host well enough to tell later whether
// it still runs.
type Process struct {
	Host string // os.Hostname of the machine it runs on
	PID  int
	// Start tells this process from a later one given the same pid: on
	// Linux "<boot id>:<pid namespace>:<start time in clock ticks since
	// boot>"; "" where the system does not say.
	Start string
}

// Self is the calling process.
func Self() (Process, error) {
	host, err := os.Hostname()
	if err != nil {
		return Process{}, fmt.Errorf("reading this machine's hostname: %w", err)
	}
	p := Process{Host: host, PID: os.Getpid()}
	p.Start, _ = start(p.PID)
	return p, nil
}

// Alive reports whether p, a process of this host, still runs. A pid that
// now belongs to another process (its start differs, or the machine has
// rebooted since) and a zombie (exited, not yet reaped) are not alive. A
// pid recorded in another pid namespace (a container that shares the
// hostname) cannot be looked up here and counts as alive, and so does one
// of which nothing can be read but that it exists (a recorded Start cannot
// be compared, or none was recorded): only a process proven gone is
// reported dead.
func Alive(p Process) bool {
	if p.PID <= 0 {
		return true // not a pid: nothing proves it gone
	}
	if p.Start != "" {
		if alive, decided := judge(p.Start); decided {
			return alive
		}
		if cur, ok := start(p.PID); ok {
			return cur == p.Start && !zombie(p.PID)
		}
	}
	return exists(p.PID)
}
