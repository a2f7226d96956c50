//go:build linux

package launcher

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// setProcAttr makes the kernel send SIGTERM to Chrome when the thread that
// started it dies (the process dies: startLocked keeps the thread). Chrome
// handles SIGTERM with an orderly shutdown that flushes cookies, which is the
// best a crashed director can still do for the profile.
//
// Chrome also gets a process group of its own, so that the signals a
// terminal sends to its foreground group (SIGINT on Ctrl-C, SIGHUP when the
// terminal closes) reach director alone, which closes Chrome through CDP.
// In director's group, a closed terminal's SIGHUP also reached Chrome's
// helper processes, which die of it: the network service, which holds the
// cookie store, went before the browser could write the last half minute's
// cookies, and `profile open --snapshot` snapshotted a profile without the
// login just made.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	cmd.SysProcAttr.Setpgid = true
}

// terminate asks the process to shut down in an orderly way.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// killLeftovers kills processes whose command line names userDataDir with
// --user-data-dir: the children of a Chrome that was killed (zygote,
// renderers, network service) can outlive it and keep writing into the dir.
// It repeats until a few passes find nothing, for at most two seconds.
func killLeftovers(userDataDir string) int {
	want := []byte("--user-data-dir=" + userDataDir)
	self := os.Getpid()
	total := 0
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n := 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
				if bytes.Equal(arg, want) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					n++
					break
				}
			}
		}
		total += n
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return total
}
