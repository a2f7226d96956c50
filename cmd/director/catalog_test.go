package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// encryptedHome is a director home whose profile "work" has one snapshot
// encrypted to the key in right; wrong is another key, both in keys.
type encryptedHome struct {
	home, keys, right, wrong string
	d                        func(args ...string) (int, string, string) // runs director on home
}

func encryptedWork(t *testing.T) encryptedHome {
	t.Helper()
	e := encryptedHome{home: cliEnv(t), keys: t.TempDir()}
	e.d = func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", e.home}, args...)...)
	}
	gen := func(name string) (string, string) {
		path := filepath.Join(e.keys, name)
		code, out, errOut := e.d("--json", "key", "generate", "--out", path)
		if code != 0 {
			t.Fatalf("key generate: %d %s", code, errOut)
		}
		return path, decodeJSON(t, out)["recipients"].([]any)[0].(string)
	}
	var rcpt string
	e.right, rcpt = gen("right.txt")
	e.wrong, _ = gen("wrong.txt")
	if code, _, errOut := e.d("profile", "create", "work"); code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(e.home, "browser-profiles", "work", "Local State"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := e.d("--age-recipients", rcpt, "profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	return e
}

// catalog rebuild without the identity the snapshots were encrypted to
// fails with decrypt_failed: one line on stderr, or one JSON object that
// also carries what the rebuild did.
func TestCatalogRebuildWithoutTheRightKey(t *testing.T) {
	e := encryptedWork(t)
	home, right, wrong, d := e.home, e.right, e.wrong, e.d

	tests := []struct {
		name string
		key  []string
	}{
		{"no identity", nil},
		{"another identity", []string{"--age-identity", wrong}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(filepath.Join(home, "director.db"))
			code, out, errOut := d(append(tt.key, "catalog", "rebuild")...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != 1 || out != "" || len(lines) != 1 || !strings.Contains(errOut, "[decrypt_failed]") ||
				!strings.Contains(errOut, "1 of 1 manifest(s) could not be decrypted") ||
				!strings.Contains(errOut, "DIRECTOR_AGE_IDENTITY") || strings.Contains(errOut, "key generate") {
				t.Errorf("rebuild: exit %d\nstdout %q\nstderr %q\nwant exit 1, one decrypt_failed line on stderr naming the skipped manifest and the identity to set", code, out, errOut)
			}

			os.Remove(filepath.Join(home, "director.db"))
			code, out, errOut = d(append(tt.key, "--json", "catalog", "rebuild")...)
			m := decodeJSON(t, out)
			e, _ := m["error"].(map[string]any)
			rb, _ := m["rebuild"].(map[string]any)
			if code != 1 || errOut != "" || m["status"] != "error" || e["code"] != "decrypt_failed" || e["hint"] == "" ||
				rb["undecryptable"] != 1.0 || rb["found"] != 1.0 {
				t.Errorf("rebuild --json: exit %d, stderr %q\n%s", code, errOut, out)
			}
		})
	}

	os.Remove(filepath.Join(home, "director.db"))
	code, out, errOut := d("--json", "--age-identity", right, "catalog", "rebuild")
	if rb, _ := decodeJSON(t, out)["rebuild"].(map[string]any); code != 0 || rb["undecryptable"] != 0.0 || len(rb["added"].([]any)) != 1 {
		t.Errorf("rebuild with the right key: exit %d %s %s", code, out, errOut)
	}
}

// A wrong or missing key on existing snapshots is answered with the
// identity they were encrypted to, never with a new key; a new key is
// suggested only where it may be the remedy.
func TestDecryptHintsNeverSuggestANewKeyForExistingSnapshots(t *testing.T) {
	e := encryptedWork(t)
	keys, wrong, d := e.keys, e.wrong, e.d
	tests := []struct {
		name     string
		args     []string
		newKeyOK bool // whether the hint may suggest director key generate
	}{
		{"restore, no identity", []string{"profile", "restore", "work", "latest"}, false},
		{"restore, another identity", []string{"--age-identity", wrong, "profile", "restore", "work", "latest"}, false},
		{"verify, no identity", []string{"profile", "verify", "work"}, false},
		{"verify, another identity", []string{"--age-identity", wrong, "profile", "verify", "work"}, false},
		{"rebuild, another identity", []string{"--age-identity", wrong, "catalog", "rebuild"}, false},
		{"identity file missing", []string{"--age-identity", filepath.Join(keys, "nope.txt"), "profile", "restore", "work", "latest"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, _ := d(append([]string{"--json"}, tt.args...)...)
			e, _ := decodeJSON(t, out)["error"].(map[string]any)
			hint, _ := e["hint"].(string)
			if code != 1 || e["code"] != "decrypt_failed" || !strings.Contains(hint, "DIRECTOR_AGE_IDENTITY") ||
				!strings.Contains(hint, "encrypted to") || strings.Contains(hint, "key generate") != tt.newKeyOK {
				t.Errorf("exit %d, %s\nwant decrypt_failed, a hint naming the identity the snapshots were encrypted to (director key generate suggested: %v)", code, out, tt.newKeyOK)
			}
		})
	}
}

// catalog rebuild names a stray (an archive without its manifest) with the
// prune command that removes it, and that command, pasted with a number
// for N, runs: prune refuses one without --keep-last.
func TestCatalogRebuildStrayGivesAPruneThatRuns(t *testing.T) {
	home := cliEnv(t)
	createWork(t, home, []byte("x"))
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home}, args...)...)
	}
	if code, _, errOut := d("profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	manifests, _ := filepath.Glob(filepath.Join(home, "snapshots", "work", "*.manifest.json"))
	if len(manifests) != 1 {
		t.Fatalf("manifests %v, want one", manifests)
	}
	if err := os.Remove(manifests[0]); err != nil { // a snapshot killed before its manifest
		t.Fatal(err)
	}
	code, out, errOut := d("catalog", "rebuild")
	if code != 0 {
		t.Fatalf("catalog rebuild: %d %s", code, errOut)
	}
	m := regexp.MustCompile("stray [^\n]*`director ([^`]*)`").FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("catalog rebuild names no command for the stray: %s", out)
	}
	args := strings.Fields(strings.ReplaceAll(m[1], " N", " 1"))
	if code, _, errOut := runDirector(t, args...); code != 0 {
		t.Errorf("the stray's command `director %s` fails: %d %s", m[1], code, errOut)
	}
}

// TestCatalogRebuildOfAStoreThatIsDown: a file:// store on a disk that is
// not mounted lists as empty (its folder gone, or an empty mount point).
// catalog rebuild and profile prune then dropped every row of the store (of
// the profile) and said "ok"; profile delete --with-snapshots said it had
// deleted the snapshots, which were still on the disk when it came back;
// profile snapshot wrote to the folder under the mount point, where the
// snapshot vanished once the disk was mounted.
// They now change nothing and fail with storage_unavailable, and once the
// disk is back the rows are all there. restore and verify said the catalog
// was out of date and to rebuild it; they now say the store holds nothing
// and to mount it. A store that really was emptied (another machine
// deleted the profile with its snapshots) drops its rows with
// --allow-empty-store, as the hint says.
func TestCatalogRebuildOfAStoreThatIsDown(t *testing.T) {
	home := cliEnv(t)
	store := filepath.Join(t.TempDir(), "disk")
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home, "--store", "file://" + store}, args...)...)
	}
	if code, _, errOut := d("profile", "create", "work"); code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(home, "browser-profiles", "work", "Local State"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if code, _, errOut := d("profile", "snapshot", "work"); code != 0 {
			t.Fatalf("snapshot: %d %s", code, errOut)
		}
	}
	rows := func() int {
		t.Helper()
		code, out, errOut := d("--json", "profile", "snapshots", "work")
		if code != 0 {
			t.Fatalf("snapshots: %d %s", code, errOut)
		}
		return len(decodeJSON(t, out)["snapshots"].([]any))
	}
	away := store + ".away"
	for _, down := range []struct {
		name       string
		unmount    func() error
		mountAgain func() error
	}{
		{"folder gone", func() error { return os.Rename(store, away) }, func() error { return os.Rename(away, store) }},
		{"empty mount point", func() error {
			if err := os.Rename(store, away); err != nil {
				return err
			}
			return os.Mkdir(store, 0o700)
		}, func() error {
			if err := os.Remove(store); err != nil {
				return err
			}
			return os.Rename(away, store)
		}},
	} {
		if err := down.unmount(); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range [][]string{{"catalog", "rebuild"}, {"profile", "prune", "work", "--keep-last", "1"},
			{"profile", "restore", "work", "latest", "--force"}, {"profile", "verify", "work"}, {"profile", "delete", "work", "--with-snapshots"},
			{"profile", "snapshot", "work"}} {
			code, out, _ := d(append([]string{"--json"}, cmd...)...)
			e, _ := decodeJSON(t, out)["error"].(map[string]any)
			// Rebuild, prune, delete and snapshot refuse to change
			// anything; restore and verify, which found the catalog's
			// snapshot missing from a store that holds nothing, say it
			// is down, not that the snapshot is gone.
			want := "storage_unavailable"
			if code != 1 || e == nil || e["code"] != want || !strings.Contains(e["hint"].(string), "mount") {
				t.Fatalf("%s: %q exit %d: %s", down.name, cmd, code, out)
			}
		}
		if b, err := os.ReadFile(filepath.Join(home, "browser-profiles", "work", "Local State")); err != nil || string(b) != `{}` {
			t.Fatalf("%s: the profile changed: %q %v", down.name, b, err)
		}
		if left, _ := os.ReadDir(store); len(left) > 0 {
			t.Fatalf("%s: the refused commands wrote to the mount point: %v", down.name, left)
		}
		if err := down.mountAgain(); err != nil {
			t.Fatal(err)
		}
		if n := rows(); n != 2 {
			t.Fatalf("%s: the refused rebuild left %d of 2 rows", down.name, n)
		}
	}
	if code, out, errOut := d("--json", "catalog", "rebuild"); code != 0 || len(decodeJSON(t, out)["rebuild"].(map[string]any)["removed"].([]any)) != 0 {
		t.Fatalf("rebuild with the disk back: %d %s %s", code, out, errOut)
	}

	// Another machine deletes the profile with its snapshots: the store is
	// empty for real.
	other := cliEnv(t)
	if code, _, errOut := runDirector(t, "--home", other, "--store", "file://"+store, "catalog", "rebuild"); code != 0 {
		t.Fatalf("rebuild on the other machine: %d %s", code, errOut)
	}
	if code, _, errOut := runDirector(t, "--home", other, "--store", "file://"+store, "profile", "delete", "work", "--with-snapshots"); code != 0 {
		t.Fatalf("delete on the other machine: %d %s", code, errOut)
	}
	code, _, errOut := d("catalog", "rebuild")
	m := regexp.MustCompile("`(director [^`]*)`").FindStringSubmatch(errOut)
	if code != 1 || m == nil || !strings.Contains(m[1], "--allow-empty-store") {
		t.Fatalf("rebuild from the emptied store: %d %s", code, errOut)
	}
	args := strings.Fields(m[1])[1:] // the hint's command, as a person pastes it
	if code, out, errOut := runDirector(t, append([]string{"--json"}, args...)...); code != 0 || len(decodeJSON(t, out)["rebuild"].(map[string]any)["removed"].([]any)) != 2 {
		t.Fatalf("%q: %d %s %s", args, code, out, errOut)
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d rows left after the emptied store's rebuild", n)
	}
}
