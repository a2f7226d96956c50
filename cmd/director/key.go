package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"
	"github.com/urfave/cli/v2"

	"director/encrypt"
	"director/errcode"
	"director/internal/shellquote"
)

// encryptionFlags are the age settings, each with its environment variable:
// recipients (public keys) to encrypt archives and manifests to, and the
// identity file (secret key) that decrypts them on restore.
func encryptionFlags() []cli.Flag {
	return []cli.Flag{
		setting(&cli.StringFlag{
			Name:    "age-recipients",
			EnvVars: []string{encrypt.EnvRecipients},
			Usage: "age public `KEYS` (age1…, comma separated) or a recipients file: snapshots are encrypted to them; " +
				"a host that only snapshots needs no secret",
		}),
		setting(&cli.StringFlag{
			Name:    "age-identity",
			EnvVars: []string{encrypt.EnvIdentity},
			Usage: "age identity `FILE` (secret key, mode 0600) that decrypts snapshots on restore, verify, prune and catalog rebuild " +
				"(default <home>/" + identityFileName + ", where key generate writes it, when that file exists)",
		}),
	}
}

// keyUse says which age keys a command uses. newManager loads those, and
// reports what is wrong with their settings, and no others: a command that
// uses no key (profile list, create, snapshots…) works whatever
// --age-recipients / --age-identity hold.
type keyUse uint8

const (
	useRecipients keyUse = 1 << iota // it encrypts: a snapshot
	useIdentity                      // it decrypts: restore, verify, prune, catalog rebuild
	noKeys        keyUse = 0
)

// recipientsIf is useRecipients when on (profile open --snapshot), else
// noKeys.
func recipientsIf(on bool) keyUse {
	if on {
		return useRecipients
	}
	return noKeys
}

// loadKeys reads the keys of use from their settings: the recipients of
// --age-recipients / DIRECTOR_AGE_RECIPIENTS (none when it is not set: a
// plaintext snapshot, which a remote store refuses) and the identity of
// identityPath (none when there is none). unusedDefault is why the default
// identity file, there but unusable, was passed over.
func loadKeys(c *cli.Context, use keyUse) (rs []age.Recipient, ids []age.Identity, unusedDefault, err error) {
	if s := c.String("age-recipients"); use&useRecipients != 0 && s != "" {
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
			if err := tildeErr(flagSource(c, "age-recipients", encrypt.EnvRecipients), f, ""); err != nil {
				return nil, nil, nil, err
			}
		}
		if rs, err = encrypt.ParseRecipients(s); err != nil {
			return nil, nil, nil, err
		}
	}
	if path, isDefault := identityPath(c); use&useIdentity != 0 && path != "" {
		if err := identitySettingErr(c); err != nil {
			return nil, nil, nil, err
		}
		ids, err = loadIdentity(path, isDefault)
		if err != nil && isDefault {
			// Nobody asked for this file: it only stands in for an unset
			// setting. A plaintext snapshot needs no key, so say what is
			// wrong with it and go on; an encrypted one then fails with
			// decrypt_failed, which names this reason too.
			getGlobals(c).Log.Warn("the default age identity is not used: "+oneLine(err.Error()), "hint", errcode.HintOf(err))
			return rs, nil, err, nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return rs, ids, nil, nil
}

// identityFileName is the identity's file in the home: where `key
// generate` writes it, and the identity of every command that decrypts
// (and of key recipient) when --age-identity / DIRECTOR_AGE_IDENTITY is not
// set.
const identityFileName = "age-identity.txt"

// identityPath is the identity file the commands use: the one
// --age-identity / DIRECTOR_AGE_IDENTITY names, or, when that is not set,
// <home>/age-identity.txt if it is there (isDefault); "" when there is
// neither. An identity setting that names a file that is not there is
// returned as it is, for the error to say so: another identity in its
// place could not decrypt what was encrypted to the one it names.
// identitySettingErr is what is wrong with the --age-identity /
// DIRECTOR_AGE_IDENTITY setting itself, before any file is read: a ~ no
// shell expanded. Every command that reads the setting asks it first.
func identitySettingErr(c *cli.Context) error {
	p := c.String("age-identity")
	if p == "" {
		return nil
	}
	return tildeErr(flagSource(c, "age-identity", encrypt.EnvIdentity), p, "")
}

func identityPath(c *cli.Context) (path string, isDefault bool) {
	if p := c.String("age-identity"); p != "" {
		return p, false
	}
	p := filepath.Join(getGlobals(c).Home, identityFileName)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	return p, true
}

// loadIdentity loads the identity file at path, from identityPath; the
// errors of the default one say why that file was read.
func loadIdentity(path string, isDefault bool) ([]age.Identity, error) {
	ids, err := encrypt.LoadIdentities(path)
	if err != nil && isDefault {
		return nil, errcode.Hinted(err, errcode.Of(err), errcode.HintOf(err),
			"%s / %s is not set, so the identity is the default one", encrypt.EnvIdentity, encrypt.FlagIdentity)
	}
	return ids, err
}

// keyResult is the --json output of key commands.
type keyResult struct {
	Status     string            `json:"status"`
	Identity   string            `json:"identity"`
	Recipients []string          `json:"recipients"`
	Env        map[string]string `json:"env,omitempty"`
}

func keyCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "key",
		Usage: "manage the age keys that encrypt snapshots",
		Subcommands: []*cli.Command{
			{
				Name:  "generate",
				Usage: "write a new age identity (secret key, mode 0600) and print its public key",
				Description: "The identity decrypts snapshots: keep it secret, back it up, and copy it (mode 0600) to every\n" +
					"machine that restores. Machines that only snapshot need just the public key, in\n" +
					encrypt.EnvRecipients + ". An existing file is never overwritten.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Usage: "write the identity to `FILE` (default <home>/age-identity.txt); - prints it on stdout, for a secret manager"},
				},
				Action: keyGenerate,
			},
			{
				Name:      "recipient",
				Usage:     "print the public key(s) of an identity file",
				ArgsUsage: "[FILE]",
				Description: "FILE defaults to --age-identity / " + encrypt.EnvIdentity + ", else to <home>/" + identityFileName +
					" (where key generate writes it), the identity the commands that decrypt use. Use it to set " +
					encrypt.EnvRecipients + " on a snapshot-only host.",
				Action: keyRecipient,
			},
		},
	}}
}

func keyGenerate(c *cli.Context) error {
	if err := identitySettingErr(c); err != nil {
		return err // its message would name the setting's file
	}
	g := getGlobals(c)
	if c.NArg() != 0 {
		return errcode.New(errcode.InvalidInput, "key generate takes no arguments, got %d", c.NArg()).
			WithHint("give the file with --out FILE")
	}
	out := c.String("out")
	if err := tildeErr("--out", out, ""); err != nil {
		return err // it would write the secret key under a directory named ~
	}
	if out == "-" {
		return keyGenerateToStdout(g)
	}
	if out == "" {
		out = filepath.Join(g.Home, identityFileName)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return errcode.Wrap(err, errcode.InvalidInput, "bad --out %q", out)
	}
	rcpt, err := encrypt.Generate(abs)
	if err != nil {
		return err
	}
	res := keyResult{
		Status: "ok", Identity: abs, Recipients: []string{rcpt},
		Env: map[string]string{encrypt.EnvRecipients: rcpt, encrypt.EnvIdentity: abs},
	}
	g.emit(res, func(w io.Writer) {
		fmt.Fprintf(w, "Wrote a new age identity to %s (mode 0600).\n", abs)
		fmt.Fprintf(w, "Keep it secret and back it up: snapshots encrypted to it cannot be restored without it.\n\n")
		fmt.Fprintf(w, "Public key: %s\n\n", rcpt)
		fmt.Fprintf(w, "On every machine that snapshots (no secret needed there):\n")
		fmt.Fprintf(w, "  export %s=%s\n", encrypt.EnvRecipients, rcpt)
		fmt.Fprintf(w, "On every machine that restores (copy the file there, mode 0600):\n")
		fmt.Fprintf(w, "  export %s=%s\n", encrypt.EnvIdentity, shellquote.Quote(abs))
		// Which identity this machine decrypts with now.
		path, isDefault := identityPath(c)
		if path != "" {
			path, _ = filepath.Abs(path)
		}
		switch {
		case path == abs && isDefault:
			fmt.Fprintf(w, "This machine needs no export: with %s not set, director reads <home>/%s.\n", encrypt.EnvIdentity, identityFileName)
		case path != "" && path != abs:
			if _, err := os.Stat(path); err != nil {
				fmt.Fprintf(w, "%s names %s, which does not exist: until it names the new file, this machine cannot decrypt.\n", encrypt.EnvIdentity, path)
				break
			}
			fmt.Fprintf(w, "Until %s names the new file, this machine decrypts with %s.\n", encrypt.EnvIdentity, path)
		}
	})
	return nil
}

// keyGenerateToStdout is `key generate --out -`: the identity goes to stdout,
// as age-keygen writes it, for a pipe into a secret manager; the public key
// goes to stderr. --json cannot share stdout with the secret.
func keyGenerateToStdout(g *globals) error {
	if g.JSON {
		return errcode.New(errcode.InvalidInput, "--out - prints the secret key on stdout, which --json needs for its result").
			WithHint("drop --json (the public key is printed on stderr), or write the identity to a file with --out FILE")
	}
	rcpt, err := encrypt.GenerateTo(g.Stdout)
	if err != nil {
		return err
	}
	if !g.Quiet {
		fmt.Fprintf(g.Stderr, "Public key: %s\n", rcpt)
	}
	return nil
}

func keyRecipient(c *cli.Context) error {
	g := getGlobals(c)
	if c.NArg() == 0 {
		if err := identitySettingErr(c); err != nil {
			return err
		}
	}
	var path string
	var ids []age.Identity
	var err error
	switch c.NArg() {
	case 0:
		// The identity the commands that decrypt use, with the same
		// errors as there.
		var isDefault bool
		if path, isDefault = identityPath(c); path == "" {
			return errcode.New(errcode.InvalidInput, "key recipient needs an identity file: no FILE, %s (--age-identity) is not set, and there is no %s",
				encrypt.EnvIdentity, filepath.Join(g.Home, identityFileName)).
				WithHint("create one with: `director key generate` (it writes %s, which key recipient and restore then use), or give an identity file as FILE or in %s",
					identityFileName, encrypt.EnvIdentity)
		}
		ids, err = loadIdentity(path, isDefault)
		if err != nil {
			// key recipient decrypts nothing: an identity file it cannot
			// use is invalid input, as a FILE argument is, not
			// decrypt_failed. The hint still speaks of the setting (or
			// the default file) that named it.
			err = &errcode.Error{Code: errcode.InvalidInput, Hint: errcode.HintOf(err), Err: err}
		}
	case 1:
		// A FILE argument is read for its public keys alone: what is
		// wrong with it is invalid input, said of that file.
		path = c.Args().First()
		if err := tildeErr("the FILE argument", path, ""); err != nil {
			return err
		}
		ids, err = encrypt.LoadIdentityFile(path)
	default:
		return errcode.New(errcode.InvalidInput, "key recipient takes at most one FILE, got %d arguments", c.NArg()).
			WithHint("usage: director key recipient [FILE]")
	}
	if err != nil {
		return err
	}
	res := keyResult{Status: "ok", Identity: path}
	for _, r := range encrypt.IdentityRecipients(ids) {
		if s, ok := r.(fmt.Stringer); ok {
			res.Recipients = append(res.Recipients, s.String())
		}
	}
	if len(res.Recipients) == 0 {
		return errcode.New(errcode.InvalidInput, "%s holds no identity with a public key", path).
			WithHint("give an identity file whose AGE-SECRET-KEY-1… (or AGE-SECRET-KEY-PQ-1…) line is not commented out with #")
	}
	g.emit(res, func(w io.Writer) {
		for _, r := range res.Recipients {
			fmt.Fprintln(w, r)
		}
	})
	return nil
}

// flagSource names where the setting flag came from: the variable env
// when it holds the flag's value, else --flag.
func flagSource(c *cli.Context, flag, env string) string {
	if v := c.String(flag); v != "" && os.Getenv(env) == v {
		return env
	}
	return "--" + flag
}
