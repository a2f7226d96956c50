package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"director/encrypt"
	"director/errcode"
	"director/internal/testsite"
	"director/workflows"
)

func runDirector(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"director"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestKeyGenerate(t *testing.T) {
	t.Setenv(encrypt.EnvIdentity, "")
	t.Setenv(encrypt.EnvRecipients, "")
	home := filepath.Join(t.TempDir(), "home")

	code, out, errOut := runDirector(t, "--home", home, "key", "generate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	idPath := filepath.Join(home, "age-identity.txt")
	st, err := os.Stat(idPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("identity mode %o, want 600", st.Mode().Perm())
	}
	for _, want := range []string{"export DIRECTOR_AGE_RECIPIENTS=age1", "export DIRECTOR_AGE_IDENTITY=" + idPath} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// The printed recipient is the identity's: what it encrypts, the file decrypts.
	code, out, _ = runDirector(t, "--home", home, "--json", "key", "recipient", idPath)
	var rec keyResult
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || len(rec.Recipients) != 1 {
		t.Fatalf("key recipient: exit %d, %s", code, out)
	}
	rs, err := encrypt.ParseRecipients(rec.Recipients[0])
	if err != nil {
		t.Fatal(err)
	}
	ids, err := encrypt.LoadIdentities(idPath)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := encrypt.Encrypt(&buf, rs)
	w.Write([]byte("hello"))
	w.Close()
	if _, err := encrypt.Decrypt(&buf, ids); err != nil {
		t.Errorf("generated key pair does not work: %v", err)
	}

	// Never overwrites.
	before, _ := os.ReadFile(idPath)
	code, _, errOut = runDirector(t, "--home", home, "key", "generate")
	if code != errcode.ExitUsage || !strings.Contains(errOut, "already exists") || !strings.Contains(errOut, "hint:") {
		t.Errorf("second generate: exit %d, %s", code, errOut)
	}
	if after, _ := os.ReadFile(idPath); !bytes.Equal(before, after) {
		t.Error("second generate changed the identity file")
	}
}

func TestKeyGenerateJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "keys", "id.txt")
	code, stdout, stderr := runDirector(t, "--json", "key", "generate", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var res keyResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	if res.Status != "ok" || res.Identity != out || len(res.Recipients) != 1 ||
		!strings.HasPrefix(res.Recipients[0], "age1") || res.Env[encrypt.EnvRecipients] != res.Recipients[0] ||
		res.Env[encrypt.EnvIdentity] != out {
		t.Errorf("JSON result %+v", res)
	}
	if strings.Contains(stdout, "AGE-SECRET-KEY") || strings.Contains(stderr, "AGE-SECRET-KEY") {
		t.Error("the secret key was printed")
	}

	code, stdout, _ = runDirector(t, "--json", "key", "generate", "--out", out)
	var fail errorJSON
	if code != errcode.ExitUsage || json.Unmarshal([]byte(stdout), &fail) != nil || fail.Error.Hint == "" {
		t.Errorf("overwrite with --json: exit %d, %s", code, stdout)
	}
}

func TestKeyRecipientNeedsIdentity(t *testing.T) {
	t.Setenv(encrypt.EnvIdentity, "")
	code, _, errOut := runDirector(t, "--home", t.TempDir(), "key", "recipient")
	// Nothing failed to decrypt: the command was called without what it needs.
	if code != errcode.ExitUsage || !strings.Contains(errOut, "[invalid_input]") || !strings.Contains(errOut, encrypt.EnvIdentity) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestKeyRecipientOfTheWrongFile: a FILE argument that is not an identity
// is invalid input (exit 2), named as such, with a hint about that file:
// never decrypt_failed with a hint about DIRECTOR_AGE_IDENTITY or the key
// a snapshot was encrypted to (no snapshot is involved), nor a chmod hint,
// whatever its mode.
func TestKeyRecipientOfTheWrongFile(t *testing.T) {
	t.Setenv(encrypt.EnvIdentity, "")
	home := t.TempDir()
	id := filepath.Join(home, "id.txt")
	if code, _, errOut := runDirector(t, "--home", home, "key", "generate", "--out", id); code != 0 {
		t.Fatalf("generate: %d %s", code, errOut)
	}
	_, pub, _ := runDirector(t, "--home", home, "key", "recipient", id)
	recips := filepath.Join(home, "recips.txt")
	if err := os.WriteFile(recips, []byte(pub), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(home, "nope.txt")
	cases := []struct {
		name, file string
		msg, hint  string
	}{
		{"recipients file", recips, "is not an age identity: it holds age1… public keys", "public keys already"},
		{"/etc/passwd", "/etc/passwd", "is not an age identity", "give the path of an age identity file"},
		{"a directory", home, "cannot read the age identity file", "give the path of an age identity file"},
		{"a missing file", missing, "does not exist", "`director --home " + home + " key generate --out " + missing + "`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := runDirector(t, "--home", home, "--json", "key", "recipient", c.file)
			var res errorJSON
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out)
			}
			h := res.Error.Hint
			if code != errcode.ExitUsage || res.Error.Code != errcode.InvalidInput || !strings.Contains(res.Error.Message, c.file) ||
				!strings.Contains(res.Error.Message, c.msg) || !strings.Contains(h, c.hint) ||
				strings.Contains(h, "chmod") || strings.Contains(h, encrypt.EnvIdentity) || strings.Contains(h, "snapshot") {
				t.Errorf("exit %d: %+v; want exit 2, invalid_input naming %s, ~%q, hint ~%q without chmod, %s or snapshots",
					code, res.Error, c.file, c.msg, c.hint, encrypt.EnvIdentity)
			}
		})
	}
}

// TestKeyGenerateToStdout: `--out -` prints the identity on stdout (what a
// pipe into a secret manager reads), the public key on stderr, and writes no
// file named "-"; with --json it is refused, since the result needs stdout.
func TestKeyGenerateToStdout(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errOut := runDirector(t, "--home", filepath.Join(dir, "home"), "key", "generate", "--out", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Error(`wrote a file named "-"`)
	}
	if _, err := os.Lstat(filepath.Join(dir, "home")); err == nil {
		t.Error("created the home")
	}
	// What stdout got is an identity file that works: save it as a user would.
	id := filepath.Join(dir, "id.txt")
	if err := os.WriteFile(id, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	_, pub, _ := runDirector(t, "key", "recipient", id)
	if pub == "" || !strings.Contains(errOut, "Public key: "+strings.TrimSpace(pub)) {
		t.Errorf("stderr %q does not give the identity's public key %q", errOut, pub)
	}

	code, out, errOut = runDirector(t, "--json", "key", "generate", "--out", "-")
	var fail errorJSON
	if code != errcode.ExitUsage || json.Unmarshal([]byte(out), &fail) != nil || fail.Error.Code != errcode.InvalidInput ||
		strings.Contains(out+errOut, "AGE-SECRET-KEY") {
		t.Errorf("--json --out -: exit %d, %s %s", code, out, errOut)
	}
}

// TestKeySettingsStopOnlyCommandsThatUseThem: a bad DIRECTOR_AGE_IDENTITY or
// DIRECTOR_AGE_RECIPIENTS stops the commands that use that key, with its
// code, and no other: profile list failed with decrypt_failed under an
// identity file that did not exist, and with invalid_input under a
// malformed recipient. A snapshot stopped by its recipients stores
// nothing.
func TestKeySettingsStopOnlyCommandsThatUseThem(t *testing.T) {
	home := withProfile(t)
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home, "--json"}, args...)...)
	}
	// A plaintext snapshot: restore, verify, prune and rebuild need no key.
	if code, _, errOut := d("profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	keys := t.TempDir()
	id := filepath.Join(keys, "id.txt")
	if code, _, errOut := d("key", "generate", "--out", id); code != 0 {
		t.Fatalf("key generate: %d %s", code, errOut)
	}
	settings := []struct {
		name, env, value string
		uses             keyUse // the commands it stops
		code             errcode.Code
	}{
		{"identity file missing", encrypt.EnvIdentity, filepath.Join(keys, "nope.txt"), useIdentity, errcode.DecryptFailed},
		{"identity is a directory", encrypt.EnvIdentity, keys, useIdentity, errcode.DecryptFailed},
		{"malformed recipient", encrypt.EnvRecipients, "age1bogus", useRecipients, errcode.InvalidInput},
		{"identity file as recipients", encrypt.EnvRecipients, id, useRecipients, errcode.InvalidInput},
	}
	commands := []struct {
		args []string
		uses keyUse
	}{
		{[]string{"profile", "list"}, noKeys},
		{[]string{"profile", "snapshots"}, noKeys},
		{[]string{"profile", "snapshots", "work"}, noKeys},
		{[]string{"profile", "path", "work"}, noKeys},
		{[]string{"profile", "create", "other"}, noKeys},
		{[]string{"profile", "delete", "other", "--with-snapshots"}, noKeys},
		{[]string{"audit"}, noKeys},
		{[]string{"store", "check"}, noKeys},
		{[]string{"profile", "snapshot", "work"}, useRecipients},
		{[]string{"profile", "restore", "work", "latest"}, useIdentity},
		{[]string{"profile", "verify", "work"}, useIdentity},
		{[]string{"profile", "prune", "work", "--keep-last", "100"}, useIdentity},
		{[]string{"catalog", "rebuild"}, useIdentity},
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			t.Setenv(s.env, s.value)
			for _, c := range commands {
				stored := strings.Join(tree(t, filepath.Join(home, "snapshots")), " ")
				code, out, errOut := d(c.args...)
				if c.uses&s.uses == 0 {
					if code != 0 {
						t.Errorf("%s=%s %q uses no such key: exit %d, %s %s", s.env, s.value, c.args, code, out, errOut)
					}
					continue
				}
				e, _ := decodeJSON(t, out)["error"].(map[string]any)
				if code != errcode.ExitStatus(errcode.New(s.code, "")) || e["code"] != string(s.code) {
					t.Errorf("%s=%s %q: exit %d, %s\nwant %s", s.env, s.value, c.args, code, out, s.code)
				}
				if after := strings.Join(tree(t, filepath.Join(home, "snapshots")), " "); after != stored {
					t.Errorf("%s=%s %q failed but changed the store from [%s] to [%s]", s.env, s.value, c.args, stored, after)
				}
			}
		})
	}
}

// TestRunKeys: a run loads the identity only when it restores a snapshot
// and the recipients only when it may snapshot (by its policy or a step).
func TestRunKeys(t *testing.T) {
	cases := []struct {
		name, src string
		want      keyUse
	}{
		{"neither", "restore: none\nsnapshot: never\nsteps:\n  - navigate: http://127.0.0.1:1/\n", noKeys},
		{"restore latest", "snapshot: never\nsteps:\n  - navigate: http://127.0.0.1:1/\n", useIdentity},
		{"restore by id", "restore: work-20261101T000000Z-abcd\nsnapshot: never\nsteps:\n  - navigate: http://127.0.0.1:1/\n", useIdentity},
		{"snapshot on success", "restore: none\nsteps:\n  - navigate: http://127.0.0.1:1/\n", useRecipients},
		{"snapshot step", "restore: none\nsnapshot: never\nsteps:\n  - navigate: http://127.0.0.1:1/\n  - snapshot: {}\n", useRecipients},
		{"both", "steps:\n  - navigate: http://127.0.0.1:1/\n", useIdentity | useRecipients},
		{"incognito", "profile: null\nsteps:\n  - navigate: http://127.0.0.1:1/\n", noKeys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "name: x\n" + c.src
			if !strings.Contains(src, "profile:") {
				src = "name: x\nprofile: work\n" + c.src
			}
			w, err := workflows.Load(writeWF(t, t.TempDir(), "w.yaml", src), workflows.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := runKeys(w); got != c.want {
				t.Errorf("runKeys = %b, want %b", got, c.want)
			}
		})
	}
}

// TestRunKeySettings: a run that neither restores nor snapshots runs
// whatever the key settings hold; one that restores is stopped by a bad
// identity, and one that snapshots by bad recipients, before Chrome starts.
func TestRunKeySettings(t *testing.T) {
	needChrome(t)
	home := cliEnv(t)
	site := testsite.New(t)
	dir := t.TempDir()
	wf := func(name, policy string) string {
		return writeWF(t, dir, name+".yaml", "name: "+name+"\nprofile: "+name+"\n"+policy+"steps:\n  - navigate: "+site.At("/")+"\n")
	}
	missing := filepath.Join(dir, "nope.txt")
	cases := []struct {
		name, file string
		env        map[string]string
		code       errcode.Code // "" for success
	}{
		{"plain", wf("plain", "restore: none\nsnapshot: never\n"),
			map[string]string{encrypt.EnvIdentity: missing, encrypt.EnvRecipients: "age1bogus"}, ""},
		{"restore", wf("restore", "restore: latest\nsnapshot: never\n"),
			map[string]string{encrypt.EnvIdentity: missing}, errcode.DecryptFailed},
		{"snapshot", wf("snapshot", "restore: none\nsnapshot: always\n"),
			map[string]string{encrypt.EnvRecipients: "age1bogus"}, errcode.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runDirector(t, "--home", home, "--json", "run", c.file)
			m := firstJSON(t, out)
			if c.code == "" {
				if code != 0 || m["status"] != "ok" {
					t.Errorf("exit %d: %s %s", code, out, errOut)
				}
				return
			}
			e, _ := m["error"].(map[string]any)
			if code != errcode.ExitStatus(errcode.New(c.code, "")) || e["code"] != string(c.code) {
				t.Errorf("exit %d: %s\nwant %s", code, out, c.code)
			}
			if _, err := os.Stat(filepath.Join(home, "browser-profiles", c.name)); err == nil {
				t.Errorf("the refused run created its profile")
			}
		})
	}
}
