package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"director/catalog"
	"director/errcode"
	"director/internal/shellquote"
	"director/internal/testsite"
)

// TestMain runs director's main instead of the tests when
// DIRECTOR_TEST_MAIN=1, so that a test can run the real command in a process
// of its own and send it signals.
func TestMain(m *testing.M) {
	if os.Getenv("DIRECTOR_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// mainProc is director's main running in a process of its own: this test
// binary, run again with DIRECTOR_TEST_MAIN=1 (see TestMain).
type mainProc struct {
	*exec.Cmd
	exited chan struct{}
	guard  <-chan time.Time // the hang guard: never reached unless director hangs
	output func() string    // what director printed, for the failure messages
}

// startMain starts cmd (its arguments, stdin and outputs set by the caller)
// as director's main, with env added to the environment, and kills it when
// the test ends.
func startMain(t *testing.T, cmd *exec.Cmd, output func() string, env ...string) *mainProc {
	t.Helper()
	cmd.Env = append(append(os.Environ(), "DIRECTOR_TEST_MAIN=1"), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &mainProc{Cmd: cmd, exited: make(chan struct{}), guard: time.After(2 * time.Minute), output: output}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// waitFor waits for ch, failing the test if director exits or hangs first.
func (p *mainProc) waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-p.exited:
		t.Fatalf("director exited before %s: %s", what, p.output())
	case <-p.guard:
		t.Fatalf("director hangs before %s: %s", what, p.output())
	}
}

// exitCode waits for director to exit after what, failing the test if it
// hangs, and returns its exit code.
func (p *mainProc) exitCode(t *testing.T, after string) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-p.guard:
		t.Fatalf("director still runs after %s", after)
	}
	return p.ProcessState.ExitCode()
}

// hungStore listens on 127.0.0.1 and accepts connections but never answers,
// as an S3 server that stopped. It sends on requested when a request
// arrives on a connection, and on closed when the client closes one (a
// cancelled call).
func hungStore(t *testing.T) (addr string, requested, closed <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acc, cls := make(chan struct{}, 64), make(chan struct{}, 64)
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
			go func() {
				if _, err := c.Read(make([]byte, 1)); err == nil {
					acc <- struct{}{}
					_, _ = io.Copy(io.Discard, c)
				}
				cls <- struct{}{}
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String(), acc, cls
}

// A second Ctrl-C (or SIGTERM) quits at once: after the first, a snapshot
// to a store that stopped answering cleans up with calls that hang up to
// their timeouts, and a user who presses Ctrl-C again must not have to wait
// for them. It says so (interrupted, exit 1), once, as text or as the one
// JSON object of --json.
func TestSecondInterruptQuitsAtOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		json bool
	}{
		{"ctrl-c twice", syscall.SIGINT, false},
		{"sigterm twice, json", syscall.SIGTERM, true},
		{"ctrl-c twice, json", syscall.SIGINT, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := withProfile(t)
			addr, requested, closed := hungStore(t)
			store := "s3://bucket/p?endpoint=" + addr + "&insecure=true"
			args := []string{"--home", home, "--store", store,
				"--store-call-timeout", "1h", "--store-idle-timeout", "1h", "--insecure-no-encryption"}
			if c.json {
				args = append(args, "--json")
			}
			cmd := exec.Command(os.Args[0], append(args, "profile", "snapshot", "work")...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			p := startMain(t, cmd, func() string { return stdout.String() + stderr.String() }, "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=secret-key")
			p.waitFor(t, requested, "calling the store")
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			// The first signal cancels the call, which closes its
			// connection; cleaning up then hangs on the store (up to a
			// 30 s bound of its own).
			p.waitFor(t, closed, "the call was cancelled")
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			if code := p.exitCode(t, "a second "+c.sig.String()); code != 1 {
				t.Errorf("exit %d, want 1: %s", code, p.output())
			}
			// Its command names the home and store that were stopped on.
			prune := "`director --home " + shellquote.Quote(home) + " --store " + shellquote.Quote(store) + " profile prune <profile> --keep-last <n>`"
			if out := p.output(); strings.Contains(out, "secret-key") {
				t.Errorf("output shows the key: %q", out)
			}
			if c.json {
				var got errorJSON
				dec := json.NewDecoder(&stdout)
				if err := dec.Decode(&got); err != nil {
					t.Fatalf("stdout is not a JSON object: %v", err)
				}
				if dec.More() {
					t.Errorf("more than one JSON object on stdout")
				}
				if got.Error.Code != errcode.Interrupted || !strings.Contains(got.Error.Message, "interrupted again") || !strings.Contains(got.Error.Hint, prune) {
					t.Errorf("error %+v: want interrupted, \"interrupted again\", a hint with %s", got.Error, prune)
				}
				if stderr.Len() != 0 {
					t.Errorf("stderr under --json: %q", stderr.String())
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "interrupted again") || !strings.Contains(lines[0], "[interrupted]; hint: ") || !strings.Contains(lines[0], prune) {
				t.Errorf("stderr %q: want one line saying interrupted again, with its code and a hint with %s", stderr.String(), prune)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
		})
	}
}

// TestRunQuitKeepsProvenLogin: a refresh whose login check passed and whose
// snapshot a second Ctrl-C or SIGTERM cut short (quit at once, while the
// snapshot cleaned up after a store that stopped answering) leaves the
// profile marked as holding a login that no snapshot has, as a refresh
// whose snapshot failed does: the login is proven and newer than any
// snapshot, and the next restore: latest must not bring an older one back
// over it. The mark was set only once the snapshot had returned.
func TestRunQuitKeepsProvenLogin(t *testing.T) {
	needChrome(t)
	site := testsite.New(t)
	home := withProfile(t)
	wf := writeWF(t, t.TempDir(), "refresh.yaml", `name: refresh
profile: work
restore: none
snapshot: on_success
browser: {headless: true}
login_check:
  url: `+site.At("/cookies")+`
  logged_in_selector: "#cookies"
steps:
  - navigate: `+site.At("/cookies")+`
`)
	addr, requested, closed := hungStore(t)
	cmd := exec.Command(os.Args[0], "--home", home, "--store", "s3://bucket/p?endpoint="+addr+"&insecure=true",
		"--store-call-timeout", "1h", "--store-idle-timeout", "1h", "--insecure-no-encryption", "run", wf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p := startMain(t, cmd, stderr.String, "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=secret-key")
	p.waitFor(t, requested, "the snapshot called the store") // the login check has passed
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, closed, "the call was cancelled")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, "a second SIGTERM"); code != 1 || !strings.Contains(stderr.String(), "interrupted again") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cat, err := catalog.Open(context.Background(), filepath.Join(home, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	row, err := cat.GetProfile(context.Background(), "work")
	if err != nil || row.UnsavedSince.IsZero() {
		t.Errorf("profile row %+v, %v: want the proven login marked as unsaved", row, err)
	}
}

// sigIgnored reports whether process pid ignores sig, from the SigIgn mask
// of /proc/PID/status.
func sigIgnored(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return mask&(1<<(uint(sig)-1)) != 0
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return false
}

// TestProfileOpenSnapshotKeepsIgnoredSignals: `profile open --snapshot`
// started with Ctrl-C ignored (a script's background job) still ignores it
// while it snapshots, as director does everywhere else (stopSignals): the
// snapshot stage listened for SIGINT itself, which undid the ignoring, and
// the script's Ctrl-C stopped the snapshot of the login just made. The
// snapshot waits on a store that does not answer while the test looks.
func TestProfileOpenSnapshotKeepsIgnoredSignals(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the signal masks from /proc")
	}
	needChrome(t)
	home := withProfile(t)
	addr, requested, _ := hungStore(t)
	cmd := exec.Command("/bin/sh", "-c", `trap "" INT; exec "$@"`, "sh", os.Args[0],
		"--home", home, "--store", "s3://bucket/p?endpoint="+addr+"&insecure=true",
		"--store-call-timeout", "1h", "--store-idle-timeout", "1h", "--insecure-no-encryption",
		"profile", "open", "work", "--headless", "--snapshot") // stdin /dev/null: closed at once
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p := startMain(t, cmd, stderr.String, "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=secret-key")
	p.waitFor(t, requested, "it snapshotted") // Chrome is closed
	if !sigIgnored(t, cmd.Process.Pid, syscall.SIGINT) {
		t.Errorf("SIGINT is no longer ignored while profile open snapshots")
	}
}
