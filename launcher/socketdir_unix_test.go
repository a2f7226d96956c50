//go:build unix

package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestCleanRuntimeFilesSocketDir: a stale SingletonSocket's temp directory
// goes with the profile's runtime files only when it is provably the one
// Chrome made for this profile; anything else in its place is left alone,
// while the profile's own stale files are removed in every case.
func TestCleanRuntimeFilesSocketDir(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	const cookie = "8771233948230477531"
	tests := []struct {
		name    string
		dirName string
		// arrange changes the socket directory sd (already holding
		// SingletonSocket and a SingletonCookie with the profile's cookie)
		// and returns the SingletonSocket target the profile gets.
		arrange func(t *testing.T, sd string) string
		removed bool
	}{
		{"chrome's own directory", "org.chromium.Chromium.Ab3dE9", nil, true},
		{"google chrome's", ".com.google.Chrome.xY12zq", nil, true},
		{"cookie differs", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			replaceLink(t, filepath.Join(sd, "SingletonCookie"), "1234")
			return filepath.Join(sd, "SingletonSocket")
		}, false},
		{"cookie missing", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			mustRemove(t, filepath.Join(sd, "SingletonCookie"))
			return filepath.Join(sd, "SingletonSocket")
		}, false},
		{"something else inside", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			writeFile(t, filepath.Join(sd, "notes.txt"))
			return filepath.Join(sd, "SingletonSocket")
		}, false},
		{"not a chrome name", "my-sockets", nil, false},
		{"bare prefix", "org.chromium.Chromium.", nil, false},
		{"mode is not 0700", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			if err := os.Chmod(sd, 0o755); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(sd, "SingletonSocket")
		}, false},
		{"directory is a symlink", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			link := filepath.Join(filepath.Dir(sd), "org.chromium.Chromium.Link00")
			if err := os.Symlink(sd, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "SingletonSocket")
		}, false},
		{"relative target", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			return filepath.Join(filepath.Base(sd), "SingletonSocket")
		}, false},
		{"target is not SingletonSocket", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			return filepath.Join(sd, "SingletonCookie")
		}, false},
		{"directory already gone", "org.chromium.Chromium.Ab3dE9", func(t *testing.T, sd string) string {
			if err := os.RemoveAll(sd); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(sd, "SingletonSocket")
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp, profile := t.TempDir(), t.TempDir()
			sd := filepath.Join(tmp, tc.dirName)
			if err := os.Mkdir(sd, 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(sd, "SingletonSocket")) // Chrome's is a socket; the kind does not matter here
			replaceLink(t, filepath.Join(sd, "SingletonCookie"), cookie)
			target := filepath.Join(sd, "SingletonSocket")
			if tc.arrange != nil {
				target = tc.arrange(t, sd)
			}
			replaceLink(t, filepath.Join(profile, "SingletonLock"), host+"-"+strconv.Itoa(deadPID(t)))
			replaceLink(t, filepath.Join(profile, "SingletonSocket"), target)
			replaceLink(t, filepath.Join(profile, "SingletonCookie"), cookie)
			before := listTree(t, tmp)

			removed, err := CleanRuntimeFiles(profile)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"SingletonLock", "SingletonSocket", "SingletonCookie"} {
				if _, err := os.Lstat(filepath.Join(profile, f)); !os.IsNotExist(err) {
					t.Errorf("profile's stale %s not removed: %v", f, err)
				}
			}
			_, statErr := os.Lstat(sd)
			if tc.removed {
				if !os.IsNotExist(statErr) {
					t.Errorf("socket directory still there: %v", statErr)
				}
				if !slices.Contains(removed, sd) {
					t.Errorf("removed %v does not name %s", removed, sd)
				}
				return
			}
			if slices.Contains(removed, sd) {
				t.Errorf("removed %v names %s", removed, sd)
			}
			if after := listTree(t, tmp); !slices.Equal(after, before) {
				t.Errorf("temp dir changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func replaceLink(t *testing.T, p, target string) {
	t.Helper()
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustRemove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// listTree lists every path under dir with its mode.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p+" "+fi.Mode().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
