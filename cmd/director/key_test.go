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

// TestKeyRecipientOfTheWrongFile: a file that is not an identity is named
// as such (decrypt_failed, like every unusable identity), never with a
// chmod hint, whatever its mode.
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
	cases := []struct {
		name, file string
		msg, hint  string
	}{
		{"recipients file", recips, "is not an age identity: it holds age1… public keys", "only public keys"},
		{"/etc/passwd", "/etc/passwd", "is not an age identity", encrypt.EnvIdentity},
		{"a directory", home, "cannot read the age identity file", encrypt.EnvIdentity},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := runDirector(t, "--home", home, "--json", "key", "recipient", c.file)
			var res errorJSON
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out)
			}
			if code != errcode.ExitFailure || res.Error.Code != errcode.DecryptFailed || !strings.Contains(res.Error.Message, c.msg) ||
				!strings.Contains(res.Error.Hint, c.hint) || strings.Contains(res.Error.Hint, "chmod") {
				t.Errorf("exit %d: %+v; want exit 1, decrypt_failed, ~%q, hint ~%q without chmod", code, res.Error, c.msg, c.hint)
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
