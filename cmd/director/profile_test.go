package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"director/catalog"
	"director/errcode"
	"director/internal/shellquote"
	"director/profiles"
)

// cliEnv isolates a test from the caller's director settings: they are
// set empty, which is unset, and HOME is a temporary directory, so that a
// command run without --home acts on a default home ($HOME/.director) that
// the test owns, never on the real ~/.director. It returns a home for
// --home.
func cliEnv(t *testing.T) string {
	t.Helper()
	for _, k := range []string{"DIRECTOR_HOME", "DIRECTOR_STORE", "DIRECTOR_AGE_RECIPIENTS", "DIRECTOR_AGE_IDENTITY", "DIRECTOR_MAX_SIZE", "DIRECTOR_MAX_UNPACKED"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
	return filepath.Join(t.TempDir(), "home")
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, s)
	}
	return m
}

func TestProfileCommandsEndToEnd(t *testing.T) {
	home := cliEnv(t)
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home}, args...)...)
	}
	if code, _, errOut := d("profile", "create", "work"); code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	prefs := filepath.Join(home, "browser-profiles", "work", "Default", "Preferences")
	os.MkdirAll(filepath.Dir(prefs), 0o700)
	os.WriteFile(prefs, []byte(`{"v":1}`), 0o600)

	// Flags after the positional argument, and a global flag at the end.
	code, out, errOut := d("profile", "snapshot", "work", "--note", "after login", "--json")
	if code != 0 {
		t.Fatalf("snapshot: %d %s %s", code, out, errOut)
	}
	snap := decodeJSON(t, out)["snapshot"].(map[string]any)
	id := snap["id"].(string)
	if !strings.HasPrefix(id, "work-") || snap["file_count"].(float64) != 1 {
		t.Fatalf("snapshot output %v", snap)
	}

	code, out, _ = d("--json", "profile", "snapshots", "work")
	snaps := decodeJSON(t, out)["snapshots"].([]any)
	if code != 0 || len(snaps) != 1 || snaps[0].(map[string]any)["note"] != "after login" {
		t.Fatalf("snapshots: %d %s", code, out)
	}

	code, out, _ = d("--json", "profile", "list")
	list := decodeJSON(t, out)["profiles"].([]any)
	if code != 0 || len(list) != 1 || list[0].(map[string]any)["last_snapshot"] != id {
		t.Fatalf("list: %s", out)
	}

	os.WriteFile(prefs, []byte(`{"v":2}`), 0o600)
	if code, _, errOut := d("profile", "restore", "work", "latest"); code != 0 {
		t.Fatalf("restore: %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(prefs); string(b) != `{"v":1}` {
		t.Fatalf("restored Preferences = %s", b)
	}
	if code, out, _ := d("--json", "profile", "verify", "work", id); code != 0 || decodeJSON(t, out)["verify"].(map[string]any)["ok"] != true {
		t.Fatalf("verify: %d %s", code, out)
	}
	if code, out, _ := d("profile", "path", "work"); code != 0 || strings.TrimSpace(out) != filepath.Join(home, "browser-profiles", "work") {
		t.Fatalf("path: %s", out)
	}
	// A lost catalog comes back from the store.
	os.Remove(filepath.Join(home, "director.db"))
	code, out, _ = d("--json", "catalog", "rebuild")
	if code != 0 || len(decodeJSON(t, out)["rebuild"].(map[string]any)["added"].([]any)) != 1 {
		t.Fatalf("rebuild: %d %s", code, out)
	}
	if code, _, errOut := d("profile", "delete", "work", "--with-snapshots"); code != 0 {
		t.Fatalf("delete: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "browser-profiles", "work")); !os.IsNotExist(err) {
		t.Fatal("profile dir still there after delete")
	}
}

func TestErrorsExitCodesAndJSON(t *testing.T) {
	home := cliEnv(t)
	tests := []struct {
		name string
		args []string
		exit int
		code string
	}{
		{"bad name", []string{"profile", "create", "Bad"}, 2, "invalid_input"},
		{"missing arg", []string{"profile", "snapshot"}, 2, "invalid_input"},
		{"unknown flag", []string{"profile", "list", "--nope"}, 2, "invalid_input"},
		{"unknown command", []string{"bogus"}, 2, "invalid_input"},
		{"missing profile", []string{"profile", "snapshot", "ghost"}, 1, "profile_not_found"},
		{"no snapshot", []string{"profile", "restore", "ghost"}, 1, "snapshot_not_found"},
		{"path of a missing profile", []string{"profile", "path", "ghost"}, 1, "profile_not_found"},
		{"path of a bad name", []string{"profile", "path", "Bad"}, 2, "invalid_input"},
		{"prune keep-last 0", []string{"profile", "prune", "ghost", "--keep-last", "0"}, 2, "invalid_input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, _ := runDirector(t, append([]string{"--home", home, "--json"}, tt.args...)...)
			if code != tt.exit {
				t.Errorf("exit %d, want %d (%s)", code, tt.exit, out)
			}
			m := decodeJSON(t, out)
			e, _ := m["error"].(map[string]any)
			if m["status"] != "error" || e["code"] != tt.code {
				t.Errorf("got %s, want code %s", out, tt.code)
			}
		})
	}
	// Text mode: nothing on stdout for a missing profile's path, one line on
	// stderr saying how to create it.
	code, out, errOut := runDirector(t, "--home", home, "profile", "path", "ghost")
	if code != 1 || out != "" || !strings.Contains(errOut, "[profile_not_found]") || !strings.Contains(errOut, "`director --home "+shellquote.Quote(home)+" profile create ghost`") {
		t.Errorf("path of a missing profile: %d %q %q", code, out, errOut)
	}
	// Text mode: one line with the code, and a hint.
	code, _, errOut = runDirector(t, "--home", home, "profile", "restore", "ghost")
	if code != 1 || !strings.Contains(errOut, "[snapshot_not_found]") || !strings.Contains(errOut, "hint:") {
		t.Errorf("text error: %d %q", code, errOut)
	}
}

// TestReadOnlyCommandsCreateNothing: audit, profile list, profile path,
// profile snapshots and profile verify on a home that does not exist report
// empty results (or the error their arguments deserve, or that the store
// has no such snapshot) and create neither the home nor the catalog.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	home := cliEnv(t)
	cases := []struct {
		name    string
		args    []string
		exit    int
		code    string // error code, "" for success
		listKey string // the empty list of a success
	}{
		{"audit", []string{"audit"}, 0, "", "events"},
		{"audit of a profile", []string{"audit", "--profile", "work"}, 0, "", "events"},
		{"audit of a bad profile name", []string{"audit", "--profile", "BAD NAME"}, 2, "invalid_input", ""},
		{"audit of an unknown session", []string{"audit", "--session", "nosuch"}, 1, "session_not_found", ""},
		{"profile list", []string{"profile", "list"}, 0, "", "profiles"},
		{"profile snapshots", []string{"profile", "snapshots"}, 0, "", "snapshots"},
		{"profile snapshots of a profile", []string{"profile", "snapshots", "work"}, 0, "", "snapshots"},
		{"profile snapshots of a bad name", []string{"profile", "snapshots", "BAD NAME"}, 2, "invalid_input", ""},
		{"profile path", []string{"profile", "path", "work"}, 1, "profile_not_found", ""},
		{"profile verify", []string{"profile", "verify", "work"}, 1, "snapshot_not_found", ""},
		{"profile verify latest", []string{"profile", "verify", "work", "latest"}, 1, "snapshot_not_found", ""},
		{"profile verify of an id", []string{"profile", "verify", "work", "work-20261101T000000Z-abcd"}, 1, "snapshot_not_found", ""},
		{"profile verify of a bad name", []string{"profile", "verify", "BAD NAME"}, 2, "invalid_input", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runDirector(t, append([]string{"--home", home, "--json"}, c.args...)...)
			m := decodeJSON(t, out)
			if code != c.exit {
				t.Fatalf("exit %d, want %d: %s %s", code, c.exit, out, errOut)
			}
			if c.code != "" {
				if e, _ := m["error"].(map[string]any); e["code"] != c.code {
					t.Errorf("error %v, want %s", m["error"], c.code)
				}
			} else if l, ok := m[c.listKey].([]any); !ok || len(l) != 0 {
				t.Errorf("%s = %v, want an empty list", c.listKey, m[c.listKey])
			}
			if _, err := os.Stat(home); !os.IsNotExist(err) {
				t.Errorf("the home %s was created (%v)", home, err)
			}
		})
	}
}

// TestVerifyWithoutCatalog: profile verify on a machine without a catalog
// (a home that does not exist, or one that holds no director.db) that
// shares the store finds the snapshot from the store's manifests, latest
// or by id, and still creates no catalog; a newest snapshot it cannot
// decrypt fails with decrypt_failed, not with an older one or "none"; one
// it does not find is snapshot_not_found naming the home it has no catalog
// in.
func TestVerifyWithoutCatalog(t *testing.T) {
	e := encryptedWork(t)
	store := "file://" + filepath.Join(e.home, "snapshots")
	code, out, errOut := e.d("--json", "profile", "snapshots", "work")
	if code != 0 {
		t.Fatalf("snapshots: %d %s", code, errOut)
	}
	id := decodeJSON(t, out)["snapshots"].([]any)[0].(map[string]any)["id"].(string)

	cases := []struct {
		name     string
		makeHome bool // the home exists, without a catalog
		args     []string
		exit     int
		code     string // error code, "" for success
	}{
		{"latest, no home", false, []string{"--age-identity", e.right, "profile", "verify", "work"}, 0, ""},
		{"by id, no home", false, []string{"--age-identity", e.right, "profile", "verify", "work", id}, 0, ""},
		{"latest, home without a catalog", true, []string{"--age-identity", e.right, "profile", "verify", "work", "latest"}, 0, ""},
		{"latest without the identity", false, []string{"profile", "verify", "work"}, 1, "decrypt_failed"},
		{"latest with another identity", true, []string{"--age-identity", e.wrong, "profile", "verify", "work"}, 1, "decrypt_failed"},
		{"an id the store lacks", false, []string{"--age-identity", e.right, "profile", "verify", "work", "work-20261101T000000Z-abcd"}, 1, "snapshot_not_found"},
		{"a profile the store lacks", true, []string{"--age-identity", e.right, "profile", "verify", "other"}, 1, "snapshot_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			if c.makeHome {
				if err := os.Mkdir(home, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := runDirector(t, append([]string{"--home", home, "--store", store, "--json"}, c.args...)...)
			if code != c.exit {
				t.Fatalf("exit %d, want %d: %s %s", code, c.exit, out, errOut)
			}
			m := decodeJSON(t, out)
			if c.code == "" {
				if v, _ := m["verify"].(map[string]any); v["ok"] != true || v["id"] != id {
					t.Errorf("verify %v, want ok of %s", m["verify"], id)
				}
			} else if e, _ := m["error"].(map[string]any); e["code"] != c.code {
				t.Errorf("error %v, want %s", m["error"], c.code)
			} else if msg, _ := e["message"].(string); c.code == "snapshot_not_found" && !strings.Contains(msg, "no catalog in "+home+" yet") {
				// A mistyped --home shows in the message.
				t.Errorf("message %q does not name the home %s it found no catalog in", msg, home)
			}
			if _, err := os.Stat(filepath.Join(home, "director.db")); !os.IsNotExist(err) {
				t.Errorf("the catalog was created (%v)", err)
			}
			if _, err := os.Stat(home); !c.makeHome && !os.IsNotExist(err) {
				t.Errorf("the home %s was created (%v)", home, err)
			}
		})
	}
}

// TestAuditFilters: with a catalog, audit refuses an invalid profile name
// like every command does, and names a session that does not exist instead
// of printing "no audit events".
func TestAuditFilters(t *testing.T) {
	home := withProfile(t) // creates the catalog
	cases := []struct {
		name       string
		args       []string
		exit       int
		code       string
		msg, hint  string
		textOutput string // in stdout without --json, for a success
	}{
		{"bad profile name", []string{"--profile", "BAD NAME"}, 2, "invalid_input", `invalid profile name "BAD NAME"`, "lower-case letters", ""},
		{"unknown session", []string{"--session", "nosuch"}, 1, "session_not_found", `no session "nosuch"`, "`director --home " + shellquote.Quote(home) + " audit`", ""},
		{"profile without events", []string{"--profile", "work"}, 0, "", "", "", "no audit events"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := runDirector(t, append([]string{"--home", home, "--json", "audit"}, c.args...)...)
			m := decodeJSON(t, out)
			if code != c.exit {
				t.Fatalf("exit %d, want %d: %s", code, c.exit, out)
			}
			if c.code == "" {
				if _, text, _ := runDirector(t, append([]string{"--home", home, "audit"}, c.args...)...); !strings.Contains(text, c.textOutput) {
					t.Errorf("text output %q, want %q", text, c.textOutput)
				}
				return
			}
			e, _ := m["error"].(map[string]any)
			msg, _ := e["message"].(string)
			hint, _ := e["hint"].(string)
			if e["code"] != c.code || !strings.Contains(msg, c.msg) || !strings.Contains(hint, c.hint) {
				t.Errorf("error %v, want %s ~%q, hint ~%q", e, c.code, c.msg, c.hint)
			}
		})
	}
}

// TestDeleteRefusesUnsavedLogin: `profile delete` of a profile that holds a
// login no snapshot has (the mark `profile open` sets) is refused without
// --force, as `profile restore` over it is, and the profile stays; after a
// snapshot, or with --force, it is deleted.
func TestDeleteRefusesUnsavedLogin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snapshot bool
		running  bool // Chrome runs on the profile
		args     []string
		wantCode int
	}{
		{"refused", false, false, nil, errcode.ExitUsage},
		{"refused with snapshots", false, false, []string{"--with-snapshots"}, errcode.ExitUsage},
		{"--force", false, false, []string{"--force"}, 0},
		{"snapshotted first", true, false, nil, 0},
		// In use is said first: the hint to snapshot the profile would
		// fail while Chrome runs on it.
		{"Chrome running", false, true, nil, errcode.ExitFailure},
		{"Chrome running, --force", false, true, []string{"--force"}, errcode.ExitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := cliEnv(t)
			if code, _, errOut := runDirector(t, "--home", home, "profile", "create", "work"); code != 0 {
				t.Fatal(errOut)
			}
			db, err := catalog.Open(context.Background(), filepath.Join(home, "director.db"))
			if err != nil {
				t.Fatal(err)
			}
			err = db.SetUnsaved(context.Background(), "work", time.Now())
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			if tc.snapshot {
				if code, _, errOut := runDirector(t, "--home", home, "profile", "snapshot", "work"); code != 0 {
					t.Fatal(errOut)
				}
			}
			if tc.running {
				host, err := os.Hostname()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(fmt.Sprintf("%s-%d", host, os.Getpid()), filepath.Join(home, "browser-profiles", "work", "SingletonLock")); err != nil {
					t.Fatal(err)
				}
			}
			code, out, _ := runDirector(t, append([]string{"--home", home, "--json", "profile", "delete", "work"}, tc.args...)...)
			_, statErr := os.Stat(filepath.Join(home, "browser-profiles", "work"))
			if code != tc.wantCode || (statErr == nil) != (tc.wantCode != 0) {
				t.Fatalf("exit %d (want %d), profile kept %v: %s", code, tc.wantCode, statErr == nil, out)
			}
			if tc.running {
				if e := decodeJSON(t, out)["error"].(map[string]any); e["code"] != string(errcode.ProfileInUse) {
					t.Errorf("error %v, want profile_in_use", e)
				}
			} else if tc.wantCode != 0 {
				e := decodeJSON(t, out)["error"].(map[string]any)
				if e["code"] != string(errcode.InvalidInput) || !strings.Contains(e["hint"].(string), "profile snapshot work") || !strings.Contains(e["hint"].(string), "--force") {
					t.Errorf("error %v", e)
				}
			}
		})
	}
}

// TestRestoreEmptyArchive: `profile restore NAME --archive ""` (an unset
// shell variable, --archive "$FILE") is refused with invalid_input and
// leaves the profile as it is; read as no --archive, it restored the
// store's latest snapshot over the profile.
func TestRestoreEmptyArchive(t *testing.T) {
	home := cliEnv(t)
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home}, args...)...)
	}
	if code, _, errOut := d("profile", "create", "work"); code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	if code, _, errOut := d("profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	mark := filepath.Join(home, "browser-profiles", "work", "after-the-snapshot")
	if err := os.WriteFile(mark, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--archive", ""}, {"--archive="}} {
		code, out, errOut := d(append([]string{"--json", "profile", "restore", "work"}, args...)...)
		if e, _ := decodeJSON(t, out)["error"].(map[string]any); code != 2 || e["code"] != "invalid_input" {
			t.Errorf("%q: exit %d %s%s, want 2 and invalid_input", args, code, out, errOut)
		}
		if _, err := os.Stat(mark); err != nil {
			t.Fatalf("%q: the profile was replaced: %v", args, err)
		}
	}
}

// TestAgesAheadOfTheClock: a snapshot or an unsaved mark whose time is
// ahead of this machine's clock (another machine's, or this one's set
// back) is "in the future (clock skew?)", not "-83021s" nor "unsaved for
// -101s"; less than a second ahead is 0s.
func TestAgesAheadOfTheClock(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ages := []struct {
		d    time.Duration
		want string
	}{
		{-83021 * time.Second, "in the future (clock skew?)"},
		{-time.Second, "in the future (clock skew?)"},
		{-500 * time.Millisecond, "0s"},
		{0, "0s"},
		{59 * time.Second, "59s"},
		{90 * time.Minute, "1h"},
		{72 * time.Hour, "3d"},
	}
	for _, tt := range ages {
		if got := humanAge(tt.d); got != tt.want {
			t.Errorf("humanAge(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	lists := []struct {
		name string
		info profiles.Info
		want []string
	}{
		{"snapshot ahead", profiles.Info{Name: "w", LastSnapshot: "w-1", LastSnapshotAt: at(83021 * time.Second)},
			[]string{"w-1            in the future (clock skew?)  no"}},
		{"unsaved mark ahead", profiles.Info{Name: "w", UnsavedSince: at(101 * time.Second)},
			[]string{"w holds a login no snapshot has (unsaved since " + now.Add(101*time.Second).Local().Format("2006-01-02 15:04:05") + ", in the future (clock skew?))"}},
		{"unsaved mark behind", profiles.Info{Name: "w", UnsavedSince: at(-101 * time.Second)},
			[]string{"(unsaved for 1m)"}},
	}
	for _, tt := range lists {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeProfiles(&b, []profiles.Info{tt.info}, now, invocation{})
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("list does not say %q:\n%s", w, b.String())
				}
			}
			if regexp.MustCompile(`(^|\s)-[0-9]`).MatchString(b.String()) {
				t.Errorf("list prints a negative age:\n%s", b.String())
			}
		})
	}
}

// TestPrintableNotes: a note printed in the snapshots table has its
// control characters escaped, so that a note an older director stored as
// given (or a manifest of another machine) cannot drive the terminal.
func TestPrintableNotes(t *testing.T) {
	for in, want := range map[string]string{
		"plain note":                 "plain note",
		"après ✓":                    "après ✓",
		"x\x1b]0;pwned\a\x1b[31mRED": `x\x1b]0;pwned\a\x1b[31mRED`,
		"two\nlines\r":               `two\nlines\r`,
		"c1 \u009b2J":                `c1 \u009b2J`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDeleteLeavesYoungStraysAndSaysWhy: an archive whose manifest is gone
// and that was stored under an hour ago is left by delete --with-snapshots
// (another machine may be storing that snapshot), and the output says so,
// also naming an interrupted delete of this profile, which leaves the same
// thing, and when running it again removes them.
func TestDeleteLeavesYoungStraysAndSaysWhy(t *testing.T) {
	home := withProfile(t)
	if code, _, errOut := runDirector(t, "--home", home, "profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: exit %d %s", code, errOut)
	}
	manifests, _ := filepath.Glob(filepath.Join(home, "snapshots", "work", "*.manifest.json*"))
	if len(manifests) != 1 {
		t.Fatalf("manifests: %v", manifests)
	}
	// As a delete killed between its manifests and its archives: no row,
	// no manifest, the archive.
	if err := os.Remove(manifests[0]); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := catalog.Open(ctx, filepath.Join(home, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	store := catalog.StoreName("file://" + filepath.Join(home, "snapshots"))
	rows, err := db.ListSnapshots(ctx, store, "work")
	if err == nil && len(rows) != 1 {
		err = fmt.Errorf("rows %v", rows)
	}
	if err == nil {
		err = db.DeleteSnapshot(ctx, store, rows[0].ID)
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runDirector(t, "--home", home, "profile", "delete", "work", "--with-snapshots")
	if code != 0 {
		t.Fatalf("delete: exit %d %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "left 1 object(s)") || !strings.Contains(out, "an interrupted delete of this profile") || !strings.Contains(out, "again in an hour") {
		t.Fatalf("delete output does not say what it left and why:\n%s", out)
	}
}
