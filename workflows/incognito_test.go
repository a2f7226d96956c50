package workflows

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// The profile of an incognito run that died without removing it (kill -9,
// a second Ctrl-C) is removed by the next incognito run: its lock is free,
// as the kernel frees a dead process's flock. A live run's is kept, and so
// is a directory without the lock file (a run between making it and
// locking it).
func TestIncognitoLeftoversSwept(t *testing.T) {
	base := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	live, err := newIncognitoDir(base, log)
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	dead, err := newIncognitoDir(base, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead.path, "Cookies"), []byte("sid=secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = dead.lock.Unlock() // the run died: its directory stays
	unlocked := filepath.Join(base, incognitoPrefix+"starting")
	if err := os.Mkdir(unlocked, 0o700); err != nil {
		t.Fatal(err)
	}
	next, err := newIncognitoDir(base, log)
	if err != nil {
		t.Fatal(err)
	}
	defer next.remove()
	if _, err := os.Stat(dead.path); !os.IsNotExist(err) {
		t.Errorf("the dead run's profile %s is still there (%v)", dead.path, err)
	}
	for _, keep := range []string{live.path, unlocked, next.path} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	if st, err := os.Stat(next.path); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("new incognito profile: %v %v, want a 0700 directory", st, err)
	}
}

// Runs starting while another sweeps: no run's directory is removed under
// it, and none fails to lock its own (flock creates the file before it
// locks it; the lock file a sweep can see is locked already).
func TestIncognitoSweepRacesNewRuns(t *testing.T) {
	base := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				sweepIncognito(base, log)
			}
		}
	}()
	var dirs []*incognitoDir
	for range 300 {
		d, err := newIncognitoDir(base, log)
		if err != nil {
			close(stop)
			<-done
			t.Fatalf("a run could not make its directory: %v", err)
		}
		dirs = append(dirs, d)
	}
	close(stop)
	<-done
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d.path, incognitoLock)); err != nil {
			t.Errorf("%s was removed under its run: %v", d.path, err)
		}
		d.remove()
	}
}
