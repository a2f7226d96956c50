package launcher

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"director/errcode"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestProfileInUse(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	tests := []struct {
		name     string
		setup    func(t *testing.T, dir string)
		inUse    bool
		local    bool
		wantHost string
		wantPID  int
		wantPres bool
	}{
		{name: "no lock", setup: func(*testing.T, string) {}},
		{name: "live local pid", setup: func(t *testing.T, dir string) {
			symlink(t, host+"-"+strconv.Itoa(self), dir)
		}, inUse: true, local: true, wantHost: host, wantPID: self, wantPres: true},
		{name: "hyphenated host of another machine", setup: func(t *testing.T, dir string) {
			symlink(t, "build-box-7-4242", dir)
		}, inUse: true, wantHost: "build-box-7", wantPID: 4242, wantPres: true},
		{name: "dead local pid", setup: func(t *testing.T, dir string) {
			symlink(t, host+"-"+strconv.Itoa(deadPID(t)), dir)
		}, local: true, wantHost: host, wantPres: true},
		{name: "pid reused after the lock was written", setup: func(t *testing.T, dir string) {
			p := symlink(t, host+"-"+strconv.Itoa(self), dir)
			old := time.Now().Add(-time.Hour)
			ts := []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}
			if err := unix.Lutimes(p, ts); err != nil {
				t.Fatal(err)
			}
		}, local: true, wantHost: host, wantPID: self, wantPres: true},
		{name: "malformed target", setup: func(t *testing.T, dir string) {
			symlink(t, "garbage", dir)
		}, wantPres: true},
		{name: "regular file", setup: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "SingletonLock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantPres: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			info, inUse, err := ProfileInUse(dir)
			if err != nil {
				t.Fatal(err)
			}
			if inUse != tc.inUse || info.Local != tc.local || info.Present != tc.wantPres {
				t.Errorf("inUse=%v local=%v present=%v, want %v %v %v (%s)", inUse, info.Local, info.Present, tc.inUse, tc.local, tc.wantPres, info.Reason)
			}
			if tc.wantHost != "" && info.Host != tc.wantHost {
				t.Errorf("host %q, want %q", info.Host, tc.wantHost)
			}
			if tc.wantPID != 0 && info.PID != tc.wantPID {
				t.Errorf("pid %d, want %d", info.PID, tc.wantPID)
			}
			if info.Reason == "" {
				t.Error("empty reason")
			}
		})
	}
	t.Run("missing dir", func(t *testing.T) {
		_, inUse, err := ProfileInUse(filepath.Join(t.TempDir(), "nope"))
		if err != nil || inUse {
			t.Fatalf("inUse=%v err=%v", inUse, err)
		}
	})
}

func symlink(t *testing.T, target, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "SingletonLock")
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCleanRuntimeFiles(t *testing.T) {
	host, _ := os.Hostname()
	t.Run("stale files removed, profile data kept", func(t *testing.T) {
		dir := t.TempDir()
		symlink(t, host+"-"+strconv.Itoa(deadPID(t)), dir)
		if err := os.Symlink("/tmp/org.chromium.Chromium.gone/SingletonSocket", filepath.Join(dir, "SingletonSocket")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/tmp/org.chromium.Chromium.gone/SingletonCookie", filepath.Join(dir, "SingletonCookie")); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"DevToolsActivePort", "Local State"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		removed, err := CleanRuntimeFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(removed)
		want := RuntimeFiles()
		slices.Sort(want)
		if !slices.Equal(removed, want) {
			t.Errorf("removed %v, want %v", removed, want)
		}
		for _, f := range RuntimeFiles() {
			if _, err := os.Lstat(filepath.Join(dir, f)); !os.IsNotExist(err) {
				t.Errorf("%s still there: %v", f, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "Local State")); err != nil {
			t.Errorf("Local State removed: %v", err)
		}
	})
	t.Run("in use refused, nothing removed", func(t *testing.T) {
		dir := t.TempDir()
		symlink(t, host+"-"+strconv.Itoa(os.Getpid()), dir)
		port := filepath.Join(dir, "DevToolsActivePort")
		if err := os.WriteFile(port, []byte("9222\n/devtools/browser/x"), 0o600); err != nil {
			t.Fatal(err)
		}
		removed, err := CleanRuntimeFiles(dir)
		if errcode.Of(err) != errcode.ProfileInUse || errcode.HintOf(err) == "" {
			t.Fatalf("err %v (code %s), want profile_in_use with a hint", err, errcode.Of(err))
		}
		if len(removed) != 0 {
			t.Errorf("removed %v", removed)
		}
		if _, err := os.Stat(port); err != nil {
			t.Errorf("DevToolsActivePort removed from a live profile: %v", err)
		}
	})
	t.Run("missing dir", func(t *testing.T) {
		removed, err := CleanRuntimeFiles(filepath.Join(t.TempDir(), "nope"))
		if err != nil || len(removed) != 0 {
			t.Fatalf("removed %v err %v", removed, err)
		}
	})
	t.Run("fresh slice", func(t *testing.T) {
		a := RuntimeFiles()
		a[0] = "changed"
		if RuntimeFiles()[0] == "changed" {
			t.Error("RuntimeFiles shares its slice")
		}
	})
}
