//go:build !linux

package launcher

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

func setProcAttr(*exec.Cmd) {}

// terminate asks the process to shut down in an orderly way; Windows has no
// SIGTERM, so it kills.
func terminate(p *os.Process) error {
	if runtime.GOOS == "windows" {
		return p.Kill()
	}
	return p.Signal(syscall.SIGTERM)
}

func killLeftovers(string) int { return 0 }
