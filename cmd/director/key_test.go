package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	for _, want := range []string{"export DIRECTOR_AGE_RECIPIENTS=age1", "export DIRECTOR_AGE_IDENTITY=" + idPath, "This machine needs no export"} {
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

// TestKeyGenerateSaysWhichIdentityDecrypts: with DIRECTOR_AGE_IDENTITY
// naming another file, key generate says the machine decrypts with that
// file, or, when it does not exist, that it cannot decrypt at all (it said
// "decrypts with" a file that was not there).
func TestKeyGenerateSaysWhichIdentityDecrypts(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	other := filepath.Join(t.TempDir(), "other.txt")
	t.Setenv(encrypt.EnvIdentity, other)
	code, out, errOut := runDirector(t, "--home", home, "key", "generate")
	if code != 0 || !strings.Contains(out, "names "+other+", which does not exist: until it names the new file, this machine cannot decrypt") {
		t.Fatalf("exit %d, %s %s", code, out, errOut)
	}
	if code, _, errOut := runDirector(t, "--home", home, "key", "generate", "--out", other); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut = runDirector(t, "--home", home, "key", "generate", "--out", filepath.Join(t.TempDir(), "third.txt"))
	if code != 0 || !strings.Contains(out, "this machine decrypts with "+other) {
		t.Fatalf("exit %d, %s %s", code, out, errOut)
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

// TestKeyRecipientCodeIsTheSameWhereverTheFileIsNamed: an identity file
// key recipient cannot use (readable by others, missing, not an identity)
// is invalid_input (exit 2) whether it is given as FILE, in
// DIRECTOR_AGE_IDENTITY or is the default <home>/age-identity.txt. The
// last two were decrypt_failed (exit 1), though nothing is decrypted.
func TestKeyRecipientCodeIsTheSameWhereverTheFileIsNamed(t *testing.T) {
	t.Setenv(encrypt.EnvIdentity, "")
	home := t.TempDir()
	def := filepath.Join(home, "age-identity.txt")
	if code, _, errOut := runDirector(t, "--home", home, "key", "generate"); code != 0 {
		t.Fatalf("generate: %d %s", code, errOut)
	}
	if err := os.Chmod(def, 0o644); err != nil {
		t.Fatal(err)
	}
	recips := filepath.Join(home, "recips.txt")
	if err := os.WriteFile(recips, []byte("age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(home, "nope.txt")
	for _, c := range []struct {
		name string
		env  string // DIRECTOR_AGE_IDENTITY
		args []string
		msg  string
	}{
		{"open FILE", "", []string{"key", "recipient", def}, "accessible by other users"},
		{"open default", "", []string{"key", "recipient"}, "accessible by other users"},
		{"open DIRECTOR_AGE_IDENTITY", def, []string{"key", "recipient"}, "accessible by other users"},
		{"missing DIRECTOR_AGE_IDENTITY", missing, []string{"key", "recipient"}, "does not exist"},
		{"recipients in DIRECTOR_AGE_IDENTITY", recips, []string{"key", "recipient"}, "is not an age identity"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(encrypt.EnvIdentity, c.env)
			code, out, errOut := runDirector(t, append([]string{"--home", home, "--json"}, c.args...)...)
			var res errorJSON
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("not one JSON object: %v\n%s%s", err, out, errOut)
			}
			if code != errcode.ExitUsage || res.Error.Code != errcode.InvalidInput || !strings.Contains(res.Error.Message, c.msg) || res.Error.Hint == "" {
				t.Errorf("exit %d: %+v; want exit 2, invalid_input, ~%q, with a hint", code, res.Error, c.msg)
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
	const check = "login_check: {url: 'http://127.0.0.1:1/account', logged_in_selector: '#me'}\n"
	cases := []struct {
		name, src string
		want      keyUse
	}{
		{"neither", "restore: none\nsnapshot: never\nsteps:\n  - navigate: http://127.0.0.1:1/\n", noKeys},
		{"restore latest", "snapshot: never\nsteps:\n  - navigate: http://127.0.0.1:1/\n", useIdentity},
		{"restore by id", "restore: work-20261101T000000Z-abcd\nsnapshot: never\nsteps:\n  - navigate: http://127.0.0.1:1/\n", useIdentity},
		{"snapshot on success", "restore: none\n" + check + "steps:\n  - navigate: http://127.0.0.1:1/\n", useRecipients},
		{"snapshot step", "restore: none\nsnapshot: never\n" + check + "steps:\n  - navigate: http://127.0.0.1:1/\n  - snapshot: {}\n", useRecipients},
		{"both", check + "steps:\n  - navigate: http://127.0.0.1:1/\n", useIdentity | useRecipients},
		{"no login check: never snapshots", "steps:\n  - navigate: http://127.0.0.1:1/\n", useIdentity},
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
		{"snapshot", wf("snapshot", "restore: none\nsnapshot: always\nlogin_check: {url: '"+site.At("/account")+"', logged_in_selector: '#whoami'}\n"),
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

// pasteHint runs the one director command that hint gives in backticks,
// split into words as sh splits it, as a person pasting it would.
func pasteHint(t *testing.T, hint string) (code int, stdout, stderr string) {
	t.Helper()
	cmds := regexp.MustCompile("`(director [^`]*)`").FindAllStringSubmatch(hint, -1)
	if len(cmds) != 1 {
		t.Fatalf("hint %q gives %d commands, want one to paste", hint, len(cmds))
	}
	out, err := exec.Command("sh", "-c", "set -- "+cmds[0][1]+"; shift; printf '%s\\0' \"$@\"").Output()
	if err != nil {
		t.Fatalf("sh cannot read %s: %v", cmds[0][1], err)
	}
	return runDirector(t, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")...)
}

// TestKeyHintChainsEndInSuccess: the command that key recipient's hint
// gives, pasted as written, makes key recipient work. Without an identity
// it said `director key generate`, which writes <home>/age-identity.txt,
// a file key recipient never read; with DIRECTOR_AGE_IDENTITY or FILE
// naming a file that is not there, it wrote that same file elsewhere. Each
// chain runs with the home and store by default, by flags and by
// environment.
func TestKeyHintChainsEndInSuccess(t *testing.T) {
	cases := []struct {
		name string
		args func(dir string) []string // the command, after setting up in dir
		code errcode.Code
	}{
		{"no identity anywhere", func(string) []string { return []string{"key", "recipient"} }, errcode.InvalidInput},
		{"the identity setting names a missing file", func(dir string) []string {
			t.Setenv(encrypt.EnvIdentity, filepath.Join(dir, "it's keys", "id.txt"))
			return []string{"key", "recipient"}
		}, errcode.InvalidInput}, // key recipient decrypts nothing
		{"FILE does not exist", func(dir string) []string {
			return []string{"key", "recipient", filepath.Join(dir, "my keys", "id.txt")}
		}, errcode.InvalidInput},
	}
	for _, mode := range []hintMode{byDefault, byFlags, byEnv} {
		for _, c := range cases {
			t.Run(mode.String()+"/"+c.name, func(t *testing.T) {
				s := newHintSetup(t, mode, "")
				args := c.args(t.TempDir())
				code, out, _ := s.run(append([]string{"--json"}, args...)...)
				var res errorJSON
				if err := json.Unmarshal([]byte(out), &res); err != nil || code == 0 || res.Error.Code != c.code {
					t.Fatalf("%q: exit %d, %s; want %s", args, code, out, c.code)
				}
				code, out, errOut := pasteHint(t, res.Error.Hint)
				if code != 0 {
					t.Fatalf("the hint's command (%s): exit %d, %s %s", res.Error.Hint, code, out, errOut)
				}
				code, out, errOut = s.run(args...)
				if code != 0 || !strings.HasPrefix(out, "age1") {
					t.Errorf("%q after the hint's command: exit %d, %q %s", args, code, out, errOut)
				}
			})
		}
	}
}

// TestDefaultIdentity: with DIRECTOR_AGE_IDENTITY not set, the commands
// that decrypt use <home>/age-identity.txt, where `key generate` writes
// it, and key recipient prints its public key; an unusable one is
// reported as the default identity; the setting, when set, is the
// identity, even when the default file is there.
func TestDefaultIdentity(t *testing.T) {
	home := withProfile(t)
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home}, args...)...)
	}
	code, out, errOut := d("--json", "key", "generate")
	if code != 0 {
		t.Fatalf("key generate: %d %s", code, errOut)
	}
	rcpt := decodeJSON(t, out)["recipients"].([]any)[0].(string)
	if code, out, _ := d("key", "recipient"); code != 0 || strings.TrimSpace(out) != rcpt {
		t.Errorf("key recipient: exit %d, %q; want %s", code, out, rcpt)
	}
	if code, _, errOut := d("--age-recipients", rcpt, "profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	other := filepath.Join(t.TempDir(), "other.txt")
	if code, _, errOut := d("key", "generate", "--out", other); code != 0 {
		t.Fatalf("key generate --out: %d %s", code, errOut)
	}
	decrypting := [][]string{
		{"profile", "verify", "work"},
		{"profile", "restore", "work", "latest"},
		{"profile", "prune", "work", "--keep-last", "5"},
		{"catalog", "rebuild"},
	}
	for _, args := range decrypting {
		if code, out, errOut := d(args...); code != 0 {
			t.Errorf("%q with the default identity: exit %d, %s %s", args, code, out, errOut)
		}
	}
	t.Run("the setting wins", func(t *testing.T) {
		t.Setenv(encrypt.EnvIdentity, other)
		if code, out, _ := d("--json", "profile", "verify", "work"); code != errcode.ExitFailure || decodeJSON(t, out)["error"].(map[string]any)["code"] != "decrypt_failed" {
			t.Errorf("verify with another identity set: exit %d, %s; want decrypt_failed", code, out)
		}
	})
	t.Run("an unusable default", func(t *testing.T) {
		if err := os.Chmod(filepath.Join(home, "age-identity.txt"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range append(decrypting, []string{"key", "recipient"}) {
			code, _, errOut := d(args...)
			if args[1] == "prune" {
				// Its rows are known: it reads no manifest, and needs
				// no key; the file only gets a warning.
				if code != 0 || !strings.Contains(errOut, "the default age identity is not used") {
					t.Errorf("%q: exit %d, %s; want it done, with a warning", args, code, errOut)
				}
				continue
			}
			if args[0] == "key" {
				// key recipient decrypts nothing: the file is invalid
				// input, as it is given as FILE (README), not
				// decrypt_failed.
				if code != errcode.ExitUsage || !strings.Contains(errOut, "[invalid_input]") || !strings.Contains(errOut, "the default one") ||
					!strings.Contains(errOut, "chmod 600") {
					t.Errorf("%q with a default identity others can read: exit %d, %s; want invalid_input naming the default identity, with chmod 600", args, code, errOut)
				}
				continue
			}
			if code != errcode.ExitFailure || !strings.Contains(errOut, "[decrypt_failed]") || !strings.Contains(errOut, "the default one") ||
				!strings.Contains(errOut, "chmod 600") {
				t.Errorf("%q with a default identity others can read: exit %d, %s; want decrypt_failed naming the default identity, with chmod 600", args, code, errOut)
			}
			// Under --json (cron) the error itself, not only the log
			// line before it, says why the identity was not used.
			_, out, _ := d(append([]string{"--json"}, args...)...)
			e, _ := decodeJSON(t, out)["error"].(map[string]any)
			if msg, hint := fmt.Sprint(e["message"]), fmt.Sprint(e["hint"]); !strings.Contains(msg, "the identity file was not used") ||
				!strings.Contains(msg, "accessible by other users") || !strings.Contains(hint, "chmod 600") {
				t.Errorf("%q --json: %s; want the error to say why the identity file was not used, with chmod 600", args, out)
			}
		}
		if code, _, errOut := d("profile", "list"); code != 0 {
			t.Errorf("profile list: exit %d %s", code, errOut)
		}
		// A plaintext snapshot needs no key: the file nobody named only
		// gets a warning.
		code, out, errOut := d("--json", "profile", "snapshot", "work")
		if code != 0 {
			t.Fatalf("plaintext snapshot: %d %s", code, errOut)
		}
		id := decodeJSON(t, out)["snapshot"].(map[string]any)["id"].(string)
		code, _, errOut = d("profile", "restore", "work", id, "--force")
		if code != 0 || !strings.Contains(errOut, "the default age identity is not used") || !strings.Contains(errOut, "chmod 600") {
			t.Errorf("restore of a plaintext snapshot with a default identity others can read: exit %d, %s; want it restored, with a warning", code, errOut)
		}
	})
}

// The refusal of a plaintext upload to a remote store names a command that
// works on a machine that already has an identity: `key recipient` prints
// the public key to set; `key generate` there only says the file exists.
func TestPlaintextUploadHintPastes(t *testing.T) {
	home := withProfile(t)
	t.Setenv("SUPABASE_URL", "https://abcdefgh.supabase.co")
	t.Setenv("SUPABASE_SERVICE_KEY", "k")
	if code, _, errOut := runDirector(t, "--home", home, "key", "generate"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, _ := runDirector(t, "--home", home, "--store", "supabase://bucket/team", "--json", "profile", "snapshot", "work")
	e, _ := decodeJSON(t, out)["error"].(map[string]any)
	hint, _ := e["hint"].(string)
	m := regexp.MustCompile("`(director [^`]*key recipient)`").FindStringSubmatch(hint)
	if code != errcode.ExitUsage || m == nil {
		t.Fatalf("exit %d, %s: want invalid_input whose hint names key recipient", code, out)
	}
	code, rcpt, errOut := runDirector(t, strings.Fields(strings.TrimPrefix(m[1], "director "))...)
	if code != 0 || !strings.HasPrefix(rcpt, "age1") {
		t.Fatalf("the pasted %q: exit %d, %q %s", m[1], code, rcpt, errOut)
	}
}

// TestArchiveForAnotherKeyCreatesNothing: a restore --archive of a file
// encrypted to a key this machine lacks fails with decrypt_failed before
// anything is made: a fresh home stays absent, as for a store snapshot.
func TestArchiveForAnotherKeyCreatesNothing(t *testing.T) {
	home := withProfile(t)
	keyA, keyB := filepath.Join(t.TempDir(), "a.txt"), filepath.Join(t.TempDir(), "b.txt")
	for _, k := range []string{keyA, keyB} {
		if code, _, errOut := runDirector(t, "--home", home, "key", "generate", "--out", k); code != 0 {
			t.Fatal(errOut)
		}
	}
	_, rcpt, _ := runDirector(t, "--home", home, "key", "recipient", keyA)
	code, out, errOut := runDirector(t, "--home", home, "--json", "--age-recipients", strings.TrimSpace(rcpt), "profile", "snapshot", "work")
	if code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	archive := filepath.Join(home, "snapshots", decodeJSON(t, out)["snapshot"].(map[string]any)["object_key"].(string))
	fresh := filepath.Join(t.TempDir(), "fresh")
	code, out, _ = runDirector(t, "--home", fresh, "--json", "--age-identity", keyB, "profile", "restore", "work", "--archive", archive)
	if e, _ := decodeJSON(t, out)["error"].(map[string]any); code != errcode.ExitFailure || e["code"] != "decrypt_failed" {
		t.Fatalf("exit %d: %s; want decrypt_failed", code, out)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the refused restore made the home: %v", err)
	}
	// With the right key it restores.
	if code, out, errOut := runDirector(t, "--home", fresh, "--age-identity", keyA, "profile", "restore", "work", "--archive", archive); code != 0 {
		t.Fatalf("restore with the right key: %d %s %s", code, out, errOut)
	}
}
