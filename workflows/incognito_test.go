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
