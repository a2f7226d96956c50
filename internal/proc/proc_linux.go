package proc

import (
	"os"
	"strconv"
	"strings"
)

// Stat reads the state (field 3: 'R', 'S', 'Z'…) and the start time in
// clock ticks since boot (field 22) from /proc/PID/stat; ok is false when
// pid does not exist or the file cannot be read.
func Stat(pid int) (state byte, startTicks int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself: the fields that follow start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], ticks, true
}

// start is "<boot id>:<pid namespace>:<start ticks>" of pid, which must be
// a pid of this process's namespace: the boot id makes a process of an
// earlier boot differ from any of this one, and the namespace (the inode of
// /proc/self/ns/pid) says where the pid means that process (a container
// with the same hostname has pids of its own).
func start(pid int) (string, bool) {
	boot, ns, ok := bootAndNamespace()
	if !ok {
		return "", false
	}
	_, ticks, ok := Stat(pid)
	if !ok {
		return "", false
	}
	return boot + ":" + ns + ":" + strconv.FormatInt(ticks, 10), true
}

func bootAndNamespace() (boot, ns string, ok bool) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", "", false
	}
	link, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return "", "", false
	}
	return strings.TrimSpace(string(b)), strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]"), true
}

// judge decides from a recorded start alone, when it can: a process of an
// earlier boot is gone (dead), and the pid of another pid namespace cannot
// be looked up from here (not dead).
func judge(recorded string) (alive, decided bool) {
	boot, ns, ok := bootAndNamespace()
	if !ok {
		return false, false
	}
	rboot, rest, _ := strings.Cut(recorded, ":")
	rns, _, _ := strings.Cut(rest, ":")
	switch {
	case rboot != boot:
		return false, true
	case rns != ns:
		return true, true
	}
	return false, false
}
func zombie(pid int) bool {
	state, _, ok := Stat(pid)
	return ok && state == 'Z'
}
