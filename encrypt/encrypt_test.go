package encrypt

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"director/errcode"
)

// newIdentity generates an identity file in a temp dir and returns its path
// and public key.
func newIdentity(t *testing.T) (path, recipient string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "keys", "age-identity.txt")
	r, err := Generate(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, r
}

func encryptBytes(t *testing.T, plain []byte, rs []age.Recipient) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := Encrypt(&buf, rs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decryptBytes(ct []byte, ids []age.Identity) ([]byte, error) {
	r, err := Decrypt(bytes.NewReader(ct), ids)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func mustRecipients(t *testing.T, s string) []age.Recipient {
	t.Helper()
	rs, err := ParseRecipients(s)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func mustIdentities(t *testing.T, path string) []age.Identity {
	t.Helper()
	ids, err := LoadIdentities(path)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func TestRoundTrip(t *testing.T) {
	idA, rA := newIdentity(t)
	idB, rB := newIdentity(t)
	for _, size := range []int{0, 1, 64 << 10, 64<<10 + 1, 300 << 10} {
		plain := randomBytes(size)
		ct := encryptBytes(t, plain, mustRecipients(t, rA+","+rB))
		if !IsEncrypted(ct) {
			t.Fatalf("size %d: ciphertext does not start with the age header", size)
		}
		if size > 64 && bytes.Contains(ct, plain[:64]) {
			t.Fatalf("size %d: plaintext visible in the ciphertext", size)
		}
		for _, id := range []string{idA, idB} { // each recipient can decrypt
			got, err := decryptBytes(ct, mustIdentities(t, id))
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("size %d: round trip changed the data", size)
			}
		}
	}
}

func TestWrongOrMissingKey(t *testing.T) {
	idPath, r := newIdentity(t)
	other, _ := newIdentity(t)
	ct := encryptBytes(t, []byte("cookies"), mustRecipients(t, r))

	_, err := decryptBytes(ct, mustIdentities(t, other))
	if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(errcode.HintOf(err), EnvIdentity) ||
		!strings.Contains(errcode.HintOf(err), FlagIdentity) {
		t.Errorf("wrong identity: %v [%s] hint %q", err, errcode.Of(err), errcode.HintOf(err))
	}
	if !WrongKey(err) {
		t.Errorf("wrong identity: WrongKey(%v) = false", err)
	}
	if strings.Contains(errcode.HintOf(err), "key generate") {
		t.Errorf("wrong identity: hint %q suggests a new key, which cannot decrypt the snapshot", errcode.HintOf(err))
	}
	_, err = decryptBytes(ct, nil)
	if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(errcode.HintOf(err), EnvIdentity) {
		t.Errorf("no identity: %v [%s] hint %q", err, errcode.Of(err), errcode.HintOf(err))
	}
	if !WrongKey(err) {
		t.Errorf("no identity: WrongKey(%v) = false", err)
	}
	if strings.Contains(errcode.HintOf(err), "key generate") {
		t.Errorf("no identity: hint %q suggests a new key, which cannot decrypt the snapshot", errcode.HintOf(err))
	}
	// Damage is not a key problem.
	bad := append([]byte(nil), ct...)
	bad[len(bad)-1] ^= 1
	if _, err = decryptBytes(bad, mustIdentities(t, idPath)); errcode.Of(err) != errcode.DecryptFailed || WrongKey(err) {
		t.Errorf("damaged ciphertext: %v [%s], WrongKey %v; want decrypt_failed, not a key problem", err, errcode.Of(err), WrongKey(err))
	}
}

// A snapshot-only host has the public key alone: it can encrypt, and
// nothing it holds decrypts.
func TestRecipientsOnlyCannotDecrypt(t *testing.T) {
	_, r := newIdentity(t)
	pub := filepath.Join(t.TempDir(), "recipients.txt")
	if err := os.WriteFile(pub, []byte("# the cron host\n"+r+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ct := encryptBytes(t, []byte("secret profile"), mustRecipients(t, pub))
	if !IsEncrypted(ct) {
		t.Fatal("not encrypted")
	}
	_, err := LoadIdentities(pub)
	if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(errcode.HintOf(err), "only public keys") {
		t.Errorf("LoadIdentities(recipients file) = %v, hint %q", err, errcode.HintOf(err))
	}
	if _, err := decryptBytes(ct, nil); errcode.Of(err) != errcode.DecryptFailed {
		t.Errorf("decrypt without identity: %v", err)
	}
}

func TestTamperingDetected(t *testing.T) {
	id, r := newIdentity(t)
	ids := mustIdentities(t, id)
	plain := randomBytes(200 << 10) // several 64 KiB STREAM chunks
	ct := encryptBytes(t, plain, mustRecipients(t, r))
	hdrEnd := bytes.Index(ct, []byte("\n---")) // the header MAC line
	if hdrEnd < 0 {
		t.Fatal("no header end")
	}
	flip := func(i int) func([]byte) []byte {
		return func(b []byte) []byte { b[i] ^= 0x01; return b }
	}
	cases := []struct {
		name string
		mut  func([]byte) []byte
	}{
		{"flipped byte in the magic", flip(3)},
		{"flipped byte in the recipient stanza", flip(hdrEnd / 2)},
		{"flipped byte in the header MAC", flip(hdrEnd + 6)},
		{"flipped byte in the nonce", flip(bytes.IndexByte(ct[hdrEnd+1:], '\n') + hdrEnd + 2)},
		{"flipped byte in the first chunk", flip(len(ct) - 150<<10)},
		{"flipped byte in the last chunk", flip(len(ct) - 10)},
		{"truncated in the header", func(b []byte) []byte { return b[:hdrEnd/2] }},
		{"truncated mid-body", func(b []byte) []byte { return b[:len(b)/2] }},
		{"truncated at a chunk boundary", func(b []byte) []byte { return b[:len(b)-(8<<10+16)] /* the final chunk */ }},
		{"last byte missing", func(b []byte) []byte { return b[:len(b)-1] }},
		{"trailing garbage", func(b []byte) []byte { return append(b, 0) }},
		{"empty", func(b []byte) []byte { return nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := c.mut(bytes.Clone(ct))
			got, err := decryptBytes(bad, ids)
			if err == nil {
				t.Fatalf("tampering not detected (got %d bytes)", len(got))
			}
			if errcode.Of(err) != errcode.DecryptFailed || errcode.HintOf(err) == "" {
				t.Errorf("error %v has code %s, hint %q; want decrypt_failed with a hint", err, errcode.Of(err), errcode.HintOf(err))
			}
		})
	}
	// The untouched ciphertext still decrypts: the cases above were real.
	if got, err := decryptBytes(ct, ids); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("pristine ciphertext: %v", err)
	}
}

// failingReader returns data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// A store failing midway is not tampering: its own code survives.
func TestSourceErrorsKeepTheirCode(t *testing.T) {
	id, r := newIdentity(t)
	ct := encryptBytes(t, randomBytes(200<<10), mustRecipients(t, r))
	storeErr := errcode.New(errcode.StorageUnavailable, "connection reset").WithHint("retry")
	for _, cut := range []int{10, len(ct) / 2} {
		dr, err := Decrypt(&failingReader{data: ct[:cut], err: storeErr}, mustIdentities(t, id))
		if err == nil {
			_, err = io.ReadAll(dr)
		}
		if errcode.Of(err) != errcode.StorageUnavailable {
			t.Errorf("cut %d: error %v has code %s, want storage_unavailable", cut, err, errcode.Of(err))
		}
	}
}

func TestParseRecipients(t *testing.T) {
	_, r1 := newIdentity(t)
	_, r2 := newIdentity(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "recipients.txt")
	if err := os.WriteFile(file, []byte("# team\n"+r1+"\n\n"+r2+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pq, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	pqKey := pq.Recipient().String()
	secretFile, _ := newIdentity(t)
	secret, _ := os.ReadFile(secretFile)
	secretKey := strings.TrimSpace(string(secret[bytes.Index(secret, []byte("AGE-SECRET")):]))

	for _, c := range []struct {
		name string
		in   string
		n    int
		code errcode.Code
	}{
		{"one key", r1, 1, ""},
		{"comma separated", r1 + "," + r2, 2, ""},
		{"spaces and newlines", " " + r1 + "\n\t" + r2 + " \n", 2, ""},
		{"comma and space", r1 + ", " + r2, 2, ""},
		{"file", file, 2, ""},
		{"file and key", file + "," + r1, 3, ""},
		{"empty", " , ", 0, errcode.InvalidInput},
		{"bad key", "age1notakey", 0, errcode.InvalidInput},
		{"missing file", filepath.Join(dir, "nope"), 0, errcode.InvalidInput},
		{"secret key", secretKey, 0, errcode.InvalidInput},
		{"identity file", secretFile, 0, errcode.InvalidInput},
		{"post-quantum keys", pqKey + "," + pqKey, 2, ""},
		// age takes them apart but refuses to encrypt to them together
		{"post-quantum beside classic", r1 + "," + pqKey, 0, errcode.InvalidInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := ParseRecipients(c.in)
			if errcode.Of(err) != c.code {
				t.Fatalf("error %v, want code %q", err, c.code)
			}
			if err != nil {
				if errcode.HintOf(err) == "" {
					t.Errorf("no hint in %v", err)
				}
				if strings.Contains(err.Error()+errcode.HintOf(err), "AGE-SECRET-KEY-1") {
					t.Errorf("error echoes the secret key: %v", err)
				}
				return
			}
			if len(rs) != c.n {
				t.Errorf("%d recipients, want %d", len(rs), c.n)
			}
		})
	}
}

func TestLoadIdentitiesPermissions(t *testing.T) {
	path, r := newIdentity(t)
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o640, false}, {0o604, false}, {0o666, false}} {
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		ids, err := LoadIdentities(path)
		if c.ok {
			if err != nil {
				t.Errorf("mode %o: %v", c.mode, err)
			} else if rs := IdentityRecipients(ids); len(rs) != 1 || rs[0].(*age.X25519Recipient).String() != r {
				t.Errorf("mode %o: recipients %v, want %s", c.mode, rs, r)
			}
			continue
		}
		if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(errcode.HintOf(err), "chmod 600 "+path) {
			t.Errorf("mode %o: %v, hint %q; want a refusal that says chmod 600", c.mode, err, errcode.HintOf(err))
		}
	}
	for _, p := range []string{"", filepath.Join(t.TempDir(), "missing.txt")} {
		_, err := LoadIdentities(p)
		if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(errcode.HintOf(err), EnvIdentity) {
			t.Errorf("LoadIdentities(%q) = %v, hint %q", p, err, errcode.HintOf(err))
		}
	}
	garbage := filepath.Join(t.TempDir(), "garbage.txt")
	os.WriteFile(garbage, []byte("hello\n"), 0o600)
	if _, err := LoadIdentities(garbage); errcode.Of(err) != errcode.DecryptFailed {
		t.Errorf("garbage identity file: %v", err)
	}
}

func TestGenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "id.txt")
	r, err := Generate(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r, "age1") {
		t.Errorf("recipient %q", r)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("identity mode %o, want 600", st.Mode().Perm())
	}
	dst, _ := os.Stat(dir)
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %o, want 700", dst.Mode().Perm())
	}
	content, _ := os.ReadFile(path)
	if !strings.Contains(string(content), "# public key: "+r) {
		t.Errorf("identity file lacks its public key line:\n%s", content)
	}

	_, err = Generate(path)
	if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Generate = %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, content) {
		t.Error("Generate changed an existing identity file")
	}
	// The generated pair works end to end.
	ct := encryptBytes(t, []byte("x"), mustRecipients(t, r))
	if got, err := decryptBytes(ct, mustIdentities(t, path)); err != nil || string(got) != "x" {
		t.Errorf("generated pair: %q, %v", got, err)
	}
}

func TestEncryptWithoutRecipients(t *testing.T) {
	_, err := Encrypt(io.Discard, nil)
	if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(errcode.HintOf(err), EnvRecipients) {
		t.Errorf("Encrypt(no recipients) = %v, hint %q", err, errcode.HintOf(err))
	}
}

func TestIsEncrypted(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"age-encryption.org/v1\n-> X25519 abc", true},
		{"age-encryption.org/v1", true},
		{"age-encryption.org/v", false},
		{"\x28\xb5\x2f\xfd zstd frame", false},
		{"-----BEGIN AGE ENCRYPTED FILE-----", false}, // armor is not used
		{"", false},
	} {
		if got := IsEncrypted([]byte(c.in)); got != c.want {
			t.Errorf("IsEncrypted(%q) = %v", c.in, got)
		}
	}
}

func BenchmarkEncrypt(b *testing.B) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	block := randomBytes(1 << 20)
	const blocks = 16
	b.SetBytes(blocks << 20)
	b.ResetTimer()
	for b.Loop() {
		w, err := Encrypt(io.Discard, []age.Recipient{id.Recipient()})
		if err != nil {
			b.Fatal(err)
		}
		for range blocks {
			if _, err := w.Write(block); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecrypt(b *testing.B) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := Encrypt(&buf, []age.Recipient{id.Recipient()})
	w.Write(randomBytes(16 << 20))
	w.Close()
	ct := buf.Bytes()
	b.SetBytes(16 << 20)
	b.ResetTimer()
	for b.Loop() {
		r, err := Decrypt(bytes.NewReader(ct), []age.Identity{id})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// A secret key given where the identity file's path belongs (as in
// DIRECTOR_AGE_IDENTITY="$(cat key.txt)") is refused without echoing it:
// errors go to terminals, cron mail and --json.
func TestSecretKeyGivenAsPathIsNeverEchoed(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	secret := id.String()
	for _, given := range []string{secret, "# created: now\n" + secret + "\n", strings.ToLower(secret)} {
		_, err := LoadIdentities(given)
		if errcode.Of(err) != errcode.DecryptFailed {
			t.Fatalf("LoadIdentities(secret key) = %v, want %s", err, errcode.DecryptFailed)
		}
		key := strings.ToUpper(secret[len(secretPrefix):])
		for _, text := range []string{err.Error(), errcode.HintOf(err)} {
			if strings.Contains(strings.ToUpper(text), key[:16]) {
				t.Errorf("the error shows the secret key: %q", text)
			}
		}
	}
}

// TestLoadIdentitiesReadsTheContentFirst: a file that holds no secret key is
// "not an age identity", whatever its mode, and one of public keys says so;
// only a file with a secret key is held to the mode check.
func TestLoadIdentitiesReadsTheContentFirst(t *testing.T) {
	_, r := newIdentity(t)
	dir := t.TempDir()
	cases := []struct {
		name, content string
		mode          os.FileMode
		msg, hint     string
		noHint        string
	}{
		{"recipients file, world-readable", "# cron host\n" + r + "\n", 0o644, "is not an age identity: it holds age1… public keys", "only public keys", "chmod"},
		{"passwd-like file, world-readable", "root:x:0:0:root:/root:/bin/bash\n", 0o644, "is not an age identity: it holds no AGE-SECRET-KEY-… line", EnvIdentity, "chmod"},
		{"empty file", "", 0o600, "is not an age identity", EnvIdentity, "chmod"},
		{"secret key, world-readable", "", 0o644, "accessible by other users", "chmod 600", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if c.name == "secret key, world-readable" {
				id, _ := newIdentity(t)
				p = id
			} else if err := os.WriteFile(p, []byte(c.content), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, c.mode); err != nil {
				t.Fatal(err)
			}
			_, err := LoadIdentities(p)
			hint := errcode.HintOf(err)
			if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(err.Error(), c.msg) || !strings.Contains(hint, c.hint) ||
				(c.noHint != "" && strings.Contains(hint, c.noHint)) {
				t.Errorf("LoadIdentities = %v [%s], hint %q; want ~%q, hint ~%q without %q", err, errcode.Of(err), hint, c.msg, c.hint, c.noHint)
			}
		})
	}
}

// The chmod hint for an identity file others can read is a command to
// paste: run through a shell, it fixes the file, spaces in the path or not.
func TestChmodHintRunsAsGiven(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "My Keys")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "it's id.txt")
	if err := os.WriteFile(p, []byte(id.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadIdentities(p)
	hint := errcode.HintOf(err)
	_, cmd, ok := strings.Cut(hint, "run ")
	cmd, _, _ = strings.Cut(cmd, " (and consider")
	if !ok || !strings.HasPrefix(cmd, "chmod 600 ") {
		t.Fatalf("hint %q gives no chmod command", hint)
	}
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	if _, err := LoadIdentities(p); err != nil {
		t.Fatalf("after the hint's command: %v", err)
	}
}

// TestLoadIdentityFile: an identity file given as a command's FILE argument
// (key recipient FILE) decrypts nothing, so a file that cannot be used is
// invalid_input, named in the message, with a hint about that file: not
// about DIRECTOR_AGE_IDENTITY or a snapshot's key. A file that does not
// exist gets the command that makes an identity there.
func TestLoadIdentityFile(t *testing.T) {
	good, r := newIdentity(t)
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "new keys", "id.txt")
	cases := []struct {
		name, path string
		msg, hint  string
	}{
		{"does not exist", missing, "does not exist", "`director key generate --out '" + missing + "'`"},
		{"recipients file", write("pub.txt", r+"\n", 0o644), "it holds age1… public keys", "public keys already"},
		{"text file", write("notes.txt", "hello\n", 0o644), "holds no AGE-SECRET-KEY-… line", "give the path of an age identity file"},
		{"directory", dir, "cannot read the age identity file", "give the path of an age identity file"},
		{"readable by others", write("open.txt", string(key), 0o644), "accessible by other users", "chmod 600"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadIdentityFile(c.path)
			hint := errcode.HintOf(err)
			if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.msg) ||
				!strings.Contains(hint, c.hint) || strings.Contains(hint, EnvIdentity) || strings.Contains(hint, "snapshot") {
				t.Errorf("LoadIdentityFile(%s) = %v [%s], hint %q\nwant invalid_input naming the file, ~%q, hint ~%q about the file alone", c.path, err, errcode.Of(err), hint, c.msg, c.hint)
			}
		})
	}
	ids, err := LoadIdentityFile(good)
	if rs := IdentityRecipients(ids); err != nil || len(rs) != 1 || rs[0].(*age.X25519Recipient).String() != r {
		t.Errorf("LoadIdentityFile(an identity) = %v, %v; want its public key %s", rs, err, r)
	}
}

// TestMissingIdentityHintMakesThatFile: the identity setting names a file
// that does not exist; the hint's command makes an identity in that very
// file (not in <home>/age-identity.txt, which the setting does not name),
// after which the setting loads.
func TestMissingIdentityHintMakesThatFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "my keys", "it's id.txt")
	_, err := LoadIdentities(p)
	hint := errcode.HintOf(err)
	_, cmd, ok := strings.Cut(hint, "`director key generate --out ")
	arg, _, closed := strings.Cut(cmd, "`")
	if errcode.Of(err) != errcode.DecryptFailed || !ok || !closed {
		t.Fatalf("LoadIdentities(missing) = %v [%s], hint %q; want decrypt_failed and `director key generate --out FILE`", err, errcode.Of(err), hint)
	}
	out, err := exec.Command("sh", "-c", "printf %s "+arg).Output()
	if err != nil || string(out) != p {
		t.Fatalf("the hint's --out %s is %q to a shell (%v), want %q", arg, out, err, p)
	}
	if _, err := Generate(string(out)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentities(p); err != nil {
		t.Errorf("after the hint's command: %v", err)
	}
}

// TestMissingIdentityHintNeverGivesATildePath: an identity file named
// with a ~ no shell expanded gets no key generate command for that path:
// pasted as the hint quotes it, it wrote a secret key to ./~/k.txt.
func TestMissingIdentityHintNeverGivesATildePath(t *testing.T) {
	for _, load := range []struct {
		name string
		f    func(string) ([]age.Identity, error)
	}{{"LoadIdentities", LoadIdentities}, {"LoadIdentityFile", LoadIdentityFile}} {
		for _, p := range []string{"~/k.txt", "~alice/k.txt", "~"} {
			_, err := load.f(p)
			hint := errcode.HintOf(err)
			if err == nil || strings.Contains(hint, "`") || !strings.Contains(hint, "full path") {
				t.Errorf("%s(%q) = %v, hint %q; want no command in backticks, and the full path asked for", load.name, p, err, hint)
			}
		}
	}
}

// Decryptable flags only a sure mismatch: recipients none of which is the
// public key of one of the identities.
func TestDecryptable(t *testing.T) {
	a, _ := age.GenerateX25519Identity()
	b, _ := age.GenerateX25519Identity()
	pq, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ids  []age.Identity
		rs   []age.Recipient
		want bool
	}{
		{"own key", []age.Identity{a}, []age.Recipient{a.Recipient()}, true},
		{"own key among others", []age.Identity{a}, []age.Recipient{b.Recipient(), a.Recipient()}, true},
		{"another key only", []age.Identity{a}, []age.Recipient{b.Recipient()}, false},
		{"one of two identities", []age.Identity{a, b}, []age.Recipient{b.Recipient()}, true},
		{"post-quantum", []age.Identity{pq}, []age.Recipient{pq.Recipient()}, true},
		{"post-quantum, another key", []age.Identity{pq}, []age.Recipient{pq.Recipient(), a.Recipient()}[1:], false},
		{"no identity", nil, []age.Recipient{b.Recipient()}, true},
		{"no recipients", []age.Identity{a}, nil, true},
	} {
		if got := Decryptable(c.ids, c.rs); got != c.want {
			t.Errorf("%s: Decryptable = %v, want %v", c.name, got, c.want)
		}
	}
}
