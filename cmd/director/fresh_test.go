package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree lists what is under dir, "-" when dir does not exist.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return []string{"-"}
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFailingCommandsLeaveFreshHome: a command that fails on its input
// (a bad name, a profile or snapshot that is not there, no display, a store
// it cannot list) on a home that does not exist, or exists and is empty,
// leaves it as it was: no home, no director.db, no browser-profiles/.
// profile delete, snapshot, restore and prune created director.db and
// browser-profiles/ (the profile's lock) before they found nothing to act
// on, profile create a bad name's director.db, profile open without a
// display director.db, and catalog rebuild an empty catalog of a store it
// could not list.
func TestFailingCommandsLeaveFreshHome(t *testing.T) {
	cliEnv(t)
	for _, v := range []string{"DISPLAY", "WAYLAND_DISPLAY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "CHROME_PATH"} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	malformed := write("malformed.yaml", "name: x\nprofile: BAD NAME\nsteps: []\n")
	missingID := write("missing-id.yaml", "name: x\nprofile: work\nrestore: work-20261101T000000Z-abcd\nsteps:\n  - navigate: http://127.0.0.1:1/\n")
	missingIDShot := write("missing-id-shot.yaml", "name: x\nprofile: work\nrestore: work-20261101T000000Z-abcd\nsteps:\n  - navigate: http://127.0.0.1:1/\n  - screenshot: x.png\n")
	unreachable := "s3://bucket?endpoint=127.0.0.1:1&insecure=true"

	cases := []struct {
		name string
		args []string
		exit int
	}{
		{"profile create with a bad name", []string{"profile", "create", "BAD!"}, 2},
		{"profile path of a missing profile", []string{"profile", "path", "work"}, 1},
		{"profile delete of a missing profile", []string{"profile", "delete", "work"}, 1},
		{"profile delete --with-snapshots of a missing profile", []string{"profile", "delete", "work", "--with-snapshots"}, 1},
		{"profile delete with a bad name", []string{"profile", "delete", "BAD!"}, 2},
		{"profile snapshot of a missing profile", []string{"profile", "snapshot", "work"}, 1},
		{"profile restore latest without a snapshot", []string{"profile", "restore", "work", "latest"}, 1},
		{"profile restore of a missing id", []string{"profile", "restore", "work", "work-20261101T000000Z-abcd"}, 1},
		{"profile restore of a missing --archive", []string{"profile", "restore", "work", "--archive", filepath.Join(dir, "none.tar.zst")}, 1},
		{"profile restore with an id and --archive", []string{"profile", "restore", "work", "latest", "--archive", malformed}, 2},
		{"profile snapshots with a bad name", []string{"profile", "snapshots", "BAD!"}, 2},
		{"profile verify without a snapshot", []string{"profile", "verify", "work"}, 1},
		{"profile prune of a missing profile", []string{"profile", "prune", "work", "--keep-last", "1"}, 1},
		{"profile prune --keep-last 0", []string{"profile", "prune", "work", "--keep-last", "0"}, 2},
		{"profile open without a display", []string{"profile", "open", "work"}, 1},
		{"profile open with a bad name", []string{"profile", "open", "BAD!", "--headless"}, 2},
		{"profile open with a missing Chrome", []string{"profile", "open", "work", "--headless", "--chrome", filepath.Join(dir, "no-chrome")}, 1},
		// --chrome is a global flag: given before the command, profile open
		// took its own --chrome, unset, and ran the Chrome on PATH.
		{"profile open with a missing Chrome given before the command", []string{"--chrome", filepath.Join(dir, "no-chrome"), "profile", "open", "work", "--headless"}, 1},
		{"catalog rebuild of a store it cannot list", []string{"--store", unreachable, "--aws-access-key-id", "k", "--aws-secret-access-key", "s", "catalog", "rebuild"}, 1},
		{"audit with a bad profile name", []string{"audit", "--profile", "BAD!"}, 2},
		{"audit of a missing session", []string{"audit", "--session", "nosuch"}, 1},
		{"run of a malformed workflow", []string{"run", malformed}, 2},
		{"run restoring a missing snapshot", []string{"run", missingID}, 1},
		{"run restoring a missing snapshot, with a screenshot", []string{"run", missingIDShot}, 1},
		{"key recipient without an identity", []string{"key", "recipient"}, 2},
		{"key recipient of a missing file", []string{"key", "recipient", filepath.Join(dir, "no-key.txt")}, 2},
		{"store check without credentials", []string{"--store", unreachable, "store", "check"}, 2},
	}
	for _, c := range cases {
		for _, exists := range []bool{false, true} {
			kind := "no home"
			if exists {
				kind = "empty home"
			}
			t.Run(c.name+", "+kind, func(t *testing.T) {
				home := filepath.Join(t.TempDir(), "home")
				if exists {
					if err := os.Mkdir(home, 0o700); err != nil {
						t.Fatal(err)
					}
				}
				before := strings.Join(tree(t, home), " ")
				code, _, errOut := runDirector(t, append([]string{"--home", home}, c.args...)...)
				if code != c.exit {
					t.Fatalf("exit %d, want %d: %s", code, c.exit, errOut)
				}
				if after := strings.Join(tree(t, home), " "); after != before {
					t.Errorf("the failing command changed the home from [%s] to [%s] (%s)", before, after, strings.TrimSpace(errOut))
				}
			})
		}
	}
}

// TestNotADirectoryLeavesHome: a browser-profiles that is a file, or a file
// where a profile would be, is refused with invalid_input naming it before
// anything is created; profile create made director.db first and then
// failed with internal_error and a report-it hint.
func TestNotADirectoryLeavesHome(t *testing.T) {
	cliEnv(t)
	for _, v := range []string{"DISPLAY", "WAYLAND_DISPLAY", "CHROME_PATH"} {
		t.Setenv(v, "")
	}
	cases := []struct {
		name string
		file string // under the home, made a regular file
		args []string
	}{
		{"create with browser-profiles a file", "browser-profiles", []string{"profile", "create", "work"}},
		{"open with browser-profiles a file", "browser-profiles", []string{"profile", "open", "work", "--headless"}},
		{"create over a file", "browser-profiles/work", []string{"profile", "create", "work"}},
		{"open of a file", "browser-profiles/work", []string{"profile", "open", "work", "--headless"}},
		{"path of a file", "browser-profiles/work", []string{"profile", "path", "work"}},
		{"restore over a file", "browser-profiles/work", []string{"profile", "restore", "work", "latest"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			p := filepath.Join(home, filepath.FromSlash(c.file))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("notes\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := strings.Join(tree(t, home), " ")
			code, _, errOut := runDirector(t, append([]string{"--home", home}, c.args...)...)
			if code != 2 || !strings.Contains(errOut, "[invalid_input]") || !strings.Contains(errOut, p+" is ") || !strings.Contains(errOut, "`mv "+p+" ") {
				t.Errorf("exit %d, want 2 with invalid_input naming %s and how to move it away: %s", code, p, errOut)
			}
			if after := strings.Join(tree(t, home), " "); after != before {
				t.Errorf("the failing command changed the home from [%s] to [%s]", before, after)
			}
		})
	}
}
