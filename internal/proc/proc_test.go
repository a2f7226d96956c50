package proc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// deadPID is the pid of a child that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestAlive(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PID != os.Getpid() || self.Host == "" {
		t.Fatalf("Self() = %+v", self)
	}
	if runtime.GOOS == "linux" && self.Start == "" {
		t.Fatal("Self() has no start on Linux")
	}
	dead := deadPID(t)
	_, ticks, _ := Stat(self.PID)
	boot, ns, _ := strings.Cut(self.Start, ":")
	ns, _, _ = strings.Cut(ns, ":")
	cases := []struct {
		name      string
		p         Process
		want      bool
		linuxOnly bool // needs the start Linux records
	}{
		{"this process", self, true, false},
		{"this pid, start not recorded", Process{Host: self.Host, PID: self.PID}, true, false},
		{"a dead pid", Process{Host: self.Host, PID: dead, Start: self.Start}, false, false},
		{"a dead pid, start not recorded", Process{Host: self.Host, PID: dead}, false, false},
		{"not a pid", Process{Host: self.Host}, true, false},
		{"this pid reused: another start", Process{Host: self.Host, PID: self.PID, Start: self.Start + "1"}, false, true},
		{"this pid of an earlier boot", Process{Host: self.Host, PID: self.PID, Start: fmt.Sprintf("another-boot:%s:%d", ns, ticks)}, false, true},
		{"a dead pid of an earlier boot", Process{Host: self.Host, PID: dead, Start: fmt.Sprintf("another-boot:%s:%d", ns, ticks)}, false, true},
		{"a dead pid of another pid namespace", Process{Host: self.Host, PID: dead, Start: fmt.Sprintf("%s:1:%d", boot, ticks)}, true, true},
		{"this pid of another pid namespace, another start", Process{Host: self.Host, PID: self.PID, Start: fmt.Sprintf("%s:1:%d", boot, ticks+1)}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.linuxOnly && runtime.GOOS != "linux" {
				t.Skip("only Linux records a process's start")
			}
			if got := Alive(c.p); got != c.want {
				t.Errorf("Alive(%+v) = %v, want %v", c.p, got, c.want)
			}
		})
	}
}
