package encrypt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"filippo.io/age"

	"director/errcode"
	"director/internal/shellquote"
)

// Environment variables (and the flags that mirror them) that configure
// encryption.
const (
	EnvRecipients  = "DIRECTOR_AGE_RECIPIENTS"
	EnvIdentity    = "DIRECTOR_AGE_IDENTITY"
	FlagRecipients = "--age-recipients"
	FlagIdentity   = "--age-identity"
)

// Magic is the first line of every age-encrypted file (binary, not armored).
const Magic = "age-encryption.org/v1"

// SniffLen is how many leading bytes IsEncrypted needs.
const SniffLen = len(Magic)

// maxKeyFile bounds a recipients or identity file.
const maxKeyFile = 1 << 20

const secretPrefix = "AGE-SECRET-KEY-"

// identityHint is the next step when existing snapshots cannot be
// decrypted. It never suggests generating a key: a new key cannot decrypt
// what was encrypted to another.
const identityHint = "set " + EnvIdentity + " (or " + FlagIdentity + ") to the identity file whose public key " +
	"the snapshot was encrypted to; a newly generated key cannot decrypt existing snapshots"

// missingIdentityHint is the next step when the identity file named does
// not exist: the right one, or, before any snapshot was encrypted, a new
// one, made in that very file so that the setting that names it works as it
// is.
func missingIdentityHint(path string) string {
	return "point " + EnvIdentity + " (or " + FlagIdentity + ") at the identity file whose public key " +
		"your snapshots are encrypted to (a new key cannot decrypt them); only if none was made yet, create it there with: " +
		generateOut(path)
}

// generateOut is the key generate command that writes a new identity to
// path, in backticks. A path starting with a ~ that no shell expanded gets
// no command: key generate would refuse it (pasted in quotes, as a hint
// quotes it, it would write the secret key under a directory named ~).
func generateOut(path string) string {
	if strings.HasPrefix(path, "~") {
		return fmt.Sprintf("key generate --out with the full path (no shell expanded the ~ of %q)", path)
	}
	return "`director key generate --out " + shellquote.Quote(path) + "`"
}

const recipientsHint = "set " + EnvRecipients + " (or " + FlagRecipients + ") to age1… public keys separated by " +
	"commas, or to a recipients file; `director key generate` prints one"

// IsEncrypted reports whether prefix, the first bytes of a file (at least
// SniffLen of them), starts an age-encrypted file.
func IsEncrypted(prefix []byte) bool {
	return bytes.HasPrefix(prefix, []byte(Magic))
}

// ParseRecipients parses public keys: age1… keys separated by commas, spaces
// or newlines, or paths to recipients files (one key a line, # comments), or
// a mix of both.
func ParseRecipients(s string) ([]age.Recipient, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	if len(fields) == 0 {
		return nil, errcode.New(errcode.InvalidInput, "no age recipients given").WithHint("%s", recipientsHint)
	}
	var out []age.Recipient
	for _, f := range fields {
		rs, err := parseRecipientField(f)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	// age refuses some sets only when it encrypts (post-quantum keys beside
	// classic ones): find that now, before a command changes anything.
	wc, err := age.Encrypt(io.Discard, out...)
	if err != nil {
		return nil, errcode.Hinted(err, errcode.InvalidInput,
			"give recipients of one kind: all post-quantum (age1pq1…) or all classic (age1…, ssh-…); a machine with keys of both kinds decrypts with either",
			"these age recipients cannot be used together")
	}
	_ = wc.Close()
	return out, nil
}

func parseRecipientField(f string) ([]age.Recipient, error) {
	switch {
	case strings.HasPrefix(strings.ToUpper(f), secretPrefix):
		// Never echo it: it is a secret.
		return nil, errcode.New(errcode.InvalidInput, "an age secret key was given where a public key (age1…) is expected").
			WithHint("give the public key instead (the '# public key:' line of the identity file), and keep the secret key out of the environment of snapshot-only hosts")
	case strings.HasPrefix(f, "age1"):
		rs, err := age.ParseRecipients(strings.NewReader(f))
		if err != nil {
			return nil, errcode.Hinted(err, errcode.InvalidInput, recipientsHint, "bad age recipient %q", f)
		}
		return rs, nil
	}
	data, err := readKeyFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errcode.New(errcode.InvalidInput, "age recipient %q is neither an age1… public key nor an existing file", f).
			WithHint("%s", recipientsHint)
	}
	if err != nil {
		return nil, errcode.Hinted(err, errcode.InvalidInput, recipientsHint, "cannot read the recipients file %s", f)
	}
	if bytes.Contains(data, []byte(secretPrefix)) {
		return nil, errcode.New(errcode.InvalidInput, "%s holds an age secret key, not public keys", f).
			WithHint("point %s at a file of age1… public keys, or at the public key itself; the identity file belongs in %s, on hosts that restore", FlagRecipients, EnvIdentity)
	}
	rs, err := age.ParseRecipients(bytes.NewReader(data))
	if err != nil {
		return nil, errcode.Hinted(err, errcode.InvalidInput, recipientsHint, "bad recipients file %s", f)
	}
	return rs, nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxKeyFile)
	}
	return data, nil
}

// LoadIdentities reads the age identity file that decrypts snapshots, the
// one --age-identity / DIRECTOR_AGE_IDENTITY names (the output of director
// key generate or age-keygen). It refuses a file that other users may read
// or write. Its errors are decrypt_failed, with hints that name the
// setting.
func LoadIdentities(path string) ([]age.Identity, error) {
	return loadIdentities(path, forDecryption())
}

// LoadIdentityFile reads an age identity file given as a command's FILE
// argument for its public keys (`director key recipient FILE`), as
// LoadIdentities does. Nothing is decrypted and no setting is involved: its
// errors are invalid_input, and their hints speak of that file alone.
func LoadIdentityFile(path string) ([]age.Identity, error) {
	return loadIdentities(path, forArgument())
}

// identityUse is why an identity file is read, which decides the code of
// the errors of loadIdentities and the next step each one gives.
type identityUse struct {
	code       errcode.Code
	missing    func(path string) string // the file does not exist
	wrong      string                   // it is not an identity, or cannot be read
	recipients string                   // it holds age1… public keys
}

// forDecryption is the identityUse of LoadIdentities.
func forDecryption() identityUse {
	return identityUse{
		code:    errcode.DecryptFailed,
		missing: missingIdentityHint,
		wrong:   identityHint,
		recipients: "it holds only public keys, which encrypt but cannot decrypt: give the identity file (the secret key, from `director key generate`) " +
			"that they belong to; a recipients file goes in " + EnvRecipients,
	}
}

// forArgument is the identityUse of LoadIdentityFile.
func forArgument() identityUse {
	return identityUse{
		code: errcode.InvalidInput,
		missing: func(path string) string {
			return "check the path; to make a new identity in that file: " + generateOut(path)
		},
		wrong: "give the path of an age identity file: one that holds an " + secretPrefix + "… line (key generate and age-keygen write such files)",
		recipients: "these are public keys already, what key recipient would print: use them as they are (in " + EnvRecipients +
			"), or give the identity file they belong to",
	}
}

func loadIdentities(path string, use identityUse) ([]age.Identity, error) {
	if path == "" {
		return nil, errcode.New(use.code, "no age identity given").WithHint("%s", use.wrong)
	}
	if strings.Contains(strings.ToUpper(path), secretPrefix) {
		// A key pasted where a path belongs: never echo it.
		return nil, errcode.New(use.code, "the age identity given is a secret key itself, not the path of a file that holds it").
			WithHint("save the key in a file readable only by you (chmod 600) and give that file's path; the key has been in your command line or environment, so rotate it if that was shared")
	}
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errcode.New(use.code, "age identity file %s does not exist", path).WithHint("%s", use.missing(path))
	}
	if err != nil {
		return nil, errcode.Hinted(err, use.code, use.wrong, "cannot read the age identity file %s", path)
	}
	data, err := readKeyFile(path)
	if err != nil {
		return nil, errcode.Hinted(err, use.code, use.wrong, "cannot read the age identity file %s", path)
	}
	// The content first: a file with no secret key in it (a recipients
	// file, /etc/passwd) is the wrong file, whatever its mode; only a
	// secret key needs the mode check.
	if !bytes.Contains(bytes.ToUpper(data), []byte(secretPrefix)) {
		if _, rerr := age.ParseRecipients(bytes.NewReader(data)); rerr == nil {
			return nil, errcode.New(use.code, "%s is not an age identity: it holds age1… public keys (recipients)", path).
				WithHint("%s", use.recipients)
		}
		return nil, errcode.New(use.code, "%s is not an age identity: it holds no %s… line", path, secretPrefix).
			WithHint("%s", use.wrong)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, errcode.New(use.code, "age identity file %s is accessible by other users (mode %04o)", path, st.Mode().Perm()).
			WithHint("it holds a secret key: run chmod 600 %s (and consider whether the key leaked)", shellquote.Quote(path))
	}
	// age's parser never echoes key material in its errors.
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, errcode.Hinted(err, use.code, use.wrong, "bad age identity file %s", path)
	}
	return ids, nil
}

// Decryptable reports whether a file encrypted to rs could be decrypted
// with ids: whether one of rs is the public key of one of ids. It is true
// when that cannot be told (no identities, or recipients such as ssh keys
// whose identities it cannot compare), so that it only ever flags a sure
// mismatch.
func Decryptable(ids []age.Identity, rs []age.Recipient) bool {
	if len(ids) == 0 || len(rs) == 0 {
		return true
	}
	mine := map[string]bool{}
	for _, r := range IdentityRecipients(ids) {
		if s, ok := r.(fmt.Stringer); ok {
			mine[s.String()] = true
		}
	}
	if len(mine) < len(ids) {
		return true // an identity without a comparable public key
	}
	for _, r := range rs {
		s, ok := r.(fmt.Stringer)
		if !ok {
			return true
		}
		if mine[s.String()] {
			return true
		}
	}
	return false
}

// IdentityRecipients returns the public keys of the identities that have
// one (X25519 and hybrid identities do).
func IdentityRecipients(ids []age.Identity) []age.Recipient {
	var out []age.Recipient
	for _, id := range ids {
		switch i := id.(type) {
		case *age.X25519Identity:
			out = append(out, i.Recipient())
		case *age.HybridIdentity:
			out = append(out, i.Recipient())
		}
	}
	return out
}

// Generate writes a new X25519 identity to path (mode 0600, parent
// directories 0700) and returns its public key. It never overwrites an
// existing file: snapshots encrypted to the old key would be lost.
func Generate(path string) (recipient string, err error) {
	if path == "" {
		return "", errcode.New(errcode.InvalidInput, "no path for the new identity").WithHint("give one with --out FILE")
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", errcode.Wrap(err, errcode.Internal, "cannot generate an age identity")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", errcode.Hinted(err, errcode.InvalidInput, "choose a writable place with --out FILE", "cannot create the directory of %s", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return "", errcode.New(errcode.InvalidInput, "%s already exists; not overwriting it", path).
			WithHint("snapshots encrypted to that key need it to restore: keep it, or choose another file with --out FILE")
	}
	if err != nil {
		return "", errcode.Hinted(err, errcode.InvalidInput, "choose a writable place with --out FILE", "cannot create %s", path)
	}
	rcpt := id.Recipient().String()
	w := bufio.NewWriter(f)
	writeIdentity(w, id)
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", errcode.Hinted(err, errcode.Internal, "check the free space and retry", "cannot write %s", path)
	}
	return rcpt, nil
}

// GenerateTo writes a new age identity to w, in the format Generate writes
// to a file (age-keygen's), and returns its public key. It is for
// `key generate --out -`: the caller owns where the secret goes.
func GenerateTo(w io.Writer) (recipient string, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", errcode.Wrap(err, errcode.Internal, "cannot generate an age identity")
	}
	bw := bufio.NewWriter(w)
	writeIdentity(bw, id)
	if err := bw.Flush(); err != nil {
		return "", errcode.Wrap(err, errcode.Internal, "cannot write the identity")
	}
	return id.Recipient().String(), nil
}

// writeIdentity writes id as age-keygen does: two comment lines (when, and
// the public key) and the secret key.
func writeIdentity(w io.Writer, id *age.X25519Identity) {
	fmt.Fprintf(w, "# created: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "# public key: %s\n", id.Recipient().String())
	fmt.Fprintf(w, "%s\n", id.String())
}

// Encrypt returns a writer that encrypts to rs what is written to it and
// writes the ciphertext to w. Close it to write the final chunk; it does not
// close w.
func Encrypt(w io.Writer, rs []age.Recipient) (io.WriteCloser, error) {
	if len(rs) == 0 {
		return nil, errcode.New(errcode.InvalidInput, "no age recipients to encrypt to").WithHint("%s", recipientsHint)
	}
	wc, err := age.Encrypt(w, rs...)
	if err != nil {
		return nil, errcode.Hinted(err, errcode.InvalidInput, recipientsHint, "cannot start age encryption")
	}
	return wc, nil
}

// Decrypt reads the age header from r with ids and returns a reader of the
// plaintext. Authentication happens chunk by chunk as the reader is read:
// tampering or truncation surfaces as a DecryptFailed error from Read, so a
// caller must read to EOF before trusting (or swapping in) what it got.
func Decrypt(r io.Reader, ids []age.Identity) (io.Reader, error) {
	if len(ids) == 0 {
		return nil, &errcode.Error{Code: errcode.DecryptFailed, Err: ErrNoIdentity, Hint: identityHint}
	}
	src := &srcReader{r: r}
	pr, err := age.Decrypt(src, ids...)
	if err != nil {
		return nil, src.classify(err, true)
	}
	return &plainReader{r: pr, src: src}, nil
}

// ErrNoIdentity is under the error of Decrypt when it was given no identity.
var ErrNoIdentity = errors.New("the snapshot is encrypted and no age identity was given")

// WrongKey reports whether err is a failure to decrypt because of the key,
// not of the ciphertext: no identity was given (ErrNoIdentity), or none of
// those given is one the file was encrypted to. A damaged or truncated
// ciphertext is not.
func WrongKey(err error) bool {
	var nomatch *age.NoIdentityMatchError
	return errors.Is(err, ErrNoIdentity) || errors.As(err, &nomatch)
}

// srcReader remembers the last error of the ciphertext source so that a
// store failure is not mistaken for tampering.
type srcReader struct {
	r   io.Reader
	err error
}

func (s *srcReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

func (s *srcReader) classify(err error, header bool) error {
	if s.err != nil && errors.Is(err, s.err) {
		// The source failed (a store going away, a cancelled context):
		// not a key or tampering problem; keep the source's own error.
		return s.err
	}
	var nomatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &nomatch):
		return errcode.Hinted(err, errcode.DecryptFailed, identityHint, "the snapshot was encrypted to another key")
	case header:
		return errcode.Hinted(damaged{err}, errcode.DecryptFailed,
			"the snapshot's encryption header is damaged or it is not an age file; restore another snapshot (`director profile snapshots <profile>`)",
			"cannot decrypt the snapshot")
	default:
		return errcode.Hinted(damaged{err}, errcode.DecryptFailed,
			"the encrypted snapshot was modified or truncated; restore another snapshot (`director profile snapshots <profile>`)",
			"the encrypted snapshot is damaged")
	}
}

// ErrDamaged is in the chain of a decryption error that is the
// ciphertext's fault (a damaged header, a chunk that fails to
// authenticate, a truncation), not the key's: a caller that knows where
// the ciphertext came from (a local file) can say so.
var ErrDamaged = errors.New("the encrypted data is damaged")

// damaged is age's error, marked ErrDamaged.
type damaged struct{ err error }

func (d damaged) Error() string        { return d.err.Error() }
func (d damaged) Unwrap() error        { return d.err }
func (d damaged) Is(target error) bool { return target == ErrDamaged }

// plainReader codes every error of age's STREAM reader.
type plainReader struct {
	r   io.Reader
	src *srcReader
}

func (p *plainReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		err = p.src.classify(err, false)
	}
	return n, err
}
