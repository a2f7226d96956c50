package profiles

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"director/errcode"
)

// The unlink race, played deterministically: between Lock's flock and its
// path check, the previous holder unlinks the file and another locker
// creates and locks a new one. Lock must notice that it holds a stale inode
// and not report success while the other locker holds the real lock.
func TestLockDetectsAnUnlinkedLockFile(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		relock   bool // another locker holds the new file
		wait     time.Duration
		wantCode errcode.Code
	}{
		{"new file held by another locker", true, -1, errcode.ProfileInUse},
		{"new file held, with a wait", true, 150 * time.Millisecond, errcode.ProfileInUse},
		{"file gone, nobody else", false, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestManager(t)
			var other *flock.Flock
			var once sync.Once
			m.lockTaken = func(path string) {
				once.Do(func() {
					if err := os.Remove(path); err != nil {
						t.Error(err)
					}
					if c.relock {
						other = flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR))
						if ok, err := other.TryLock(); !ok || err != nil {
							t.Errorf("other locker: %v %v", ok, err)
						}
					}
				})
			}
			l, err := m.Lock(ctx, "ghost", c.wait)
			if other != nil {
				defer other.Unlock()
			}
			if errcode.Of(err) != c.wantCode {
				t.Fatalf("Lock = %v, want code %q", err, c.wantCode)
			}
			if err != nil {
				return
			}
			defer l.Unlock()
			held, err := l.fl.Stat()
			if err != nil {
				t.Fatal(err)
			}
			cur, err := os.Stat(filepath.Join(m.Root, ".ghost.lock"))
			if err != nil || !os.SameFile(held, cur) {
				t.Errorf("Lock holds a file the path does not name (%v)", err)
			}
		})
	}
}

// lockHelperEnv makes the test binary a locker process (see
// TestLockHelperProcess): "root|iterations".
const lockHelperEnv = "DIRECTOR_TEST_LOCK_HELPER"

// Many lockers, in goroutines and in processes, each doing a
// read-modify-write of a counter under the lock of a profile that does not
// exist, so that every Unlock removes the lock file. No increment may be
// lost, and no lock file may be left.
func TestLockExcludesWhileRemovingTheFile(t *testing.T) {
	cases := []struct {
		name              string
		goroutines, procs int
		iterations        int
	}{
		{"goroutines", 6, 0, 15},
		{"processes and goroutines", 3, 2, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "browser-profiles")
			var wg sync.WaitGroup
			errs := make(chan error, c.goroutines+c.procs)
			for i := 0; i < c.procs; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$", "-test.count=1")
					cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d", lockHelperEnv, root, c.iterations))
					if out, err := cmd.CombinedOutput(); err != nil {
						errs <- fmt.Errorf("helper process: %v\n%s", err, out)
					}
				}()
			}
			for i := 0; i < c.goroutines; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := lockAndCount(root, c.iterations); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(root, "counter"))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.TrimSpace(string(b)), strconv.Itoa((c.goroutines+c.procs)*c.iterations); got != want {
				t.Errorf("counter = %s, want %s: two lockers held the lock at once", got, want)
			}
			if _, err := os.Stat(filepath.Join(root, ".ghost.lock")); !os.IsNotExist(err) {
				t.Errorf("lock file left behind (%v)", err)
			}
		})
	}
}

func TestLockHelperProcess(t *testing.T) {
	spec := os.Getenv(lockHelperEnv)
	if spec == "" {
		t.Skip("run by TestLockExcludesWhileRemovingTheFile")
	}
	root, n, _ := strings.Cut(spec, "|")
	iterations, err := strconv.Atoi(n)
	if err != nil {
		t.Fatal(err)
	}
	if err := lockAndCount(root, iterations); err != nil {
		t.Fatal(err)
	}
}

// lockAndCount increments root/counter iterations times under the lock of
// the missing profile "ghost", slowly enough for a second holder to show.
func lockAndCount(root string, iterations int) error {
	m := &Manager{Root: root, LockWait: time.Minute}
	counter := filepath.Join(root, "counter")
	for i := 0; i < iterations; i++ {
		l, err := m.Lock(context.Background(), "ghost", 0)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(counter)
		if err != nil && !os.IsNotExist(err) {
			l.Unlock()
			return err
		}
		v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(time.Millisecond)
		if err := os.WriteFile(counter, []byte(strconv.Itoa(v+1)), 0o600); err != nil {
			l.Unlock()
			return err
		}
		l.Unlock()
	}
	return nil
}
