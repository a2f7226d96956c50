package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"director/internal/testenv"
)

// openPTY opens a pseudo-terminal: the master, to read what is drawn, and
// the terminal a child process writes to.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	testenv.Require(t, "a pseudo-terminal (/dev/ptmx)", err)
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, tty
}

// On a terminal, profile snapshot draws the bytes of the profile archived
// out of their total, with a percentage (it drew a spinner with the
// archive's bytes); under --json or --quiet it draws nothing, and stdout is
// the same either way.
func TestSnapshotProgressOnATerminal(t *testing.T) {
	home := cliEnv(t)
	createWork(t, home, noise(t, 3<<20))
	drawn := regexp.MustCompile(`snapshot work\s+100% \|.*\| \(3\.0/3\.0 MiB`)
	for _, c := range []struct {
		name  string
		flags []string
		bar   bool
	}{
		{"text", nil, true},
		{"json", []string{"--json"}, false},
		{"quiet", []string{"--quiet"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			master, tty := openPTY(t)
			var stdout bytes.Buffer
			cmd := exec.Command(os.Args[0], append(append([]string{"--home", home}, c.flags...), "profile", "snapshot", "work")...)
			cmd.Stdout, cmd.Stderr = &stdout, tty
			screen := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(master) // until the last writer closes the terminal (EIO)
				screen <- string(b)
			}()
			p := startMain(t, cmd, stdout.String, "TERM=xterm")
			tty.Close() // the child holds it now
			if code := p.exitCode(t, "the snapshot"); code != 0 {
				t.Fatalf("exit %d: %s", code, stdout.String())
			}
			drew := <-screen
			switch {
			case c.bar && !drawn.MatchString(drew):
				t.Errorf("the terminal shows %q, want the bytes archived of their total, at 100%%", drew)
			case !c.bar && drew != "":
				t.Errorf("under --%s the terminal shows %q, want nothing", c.name, drew)
			}
			if out := stdout.String(); c.name == "text" && !strings.HasPrefix(out, "snapshot work-") {
				t.Errorf("stdout %q, want the snapshot's report", out)
			}
		})
	}
}
