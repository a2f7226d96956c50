package main

import (
	"fmt"
	"io"
	"path/filepath"

	"filippo.io/age"
	"github.com/urfave/cli/v2"

	"director/encrypt"
	"director/errcode"
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
			Usage:   "age identity `FILE` (secret key, mode 0600) that decrypts snapshots on restore, verify, prune and catalog rebuild",
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
// --age-identity / DIRECTOR_AGE_IDENTITY.
func loadKeys(c *cli.Context, use keyUse) (rs []age.Recipient, ids []age.Identity, err error) {
	if s := c.String("age-recipients"); use&useRecipients != 0 && s != "" {
		if rs, err = encrypt.ParseRecipients(s); err != nil {
			return nil, nil, err
		}
	}
	if p := c.String("age-identity"); use&useIdentity != 0 && p != "" {
		if ids, err = encrypt.LoadIdentities(p); err != nil {
			return nil, nil, err
		}
	}
	return rs, ids, nil
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
				Description: "FILE defaults to --age-identity / " + encrypt.EnvIdentity + ". Use it to set " +
					encrypt.EnvRecipients + " on a snapshot-only host.",
				Action: keyRecipient,
			},
		},
	}}
}

func keyGenerate(c *cli.Context) error {
	g := getGlobals(c)
	if c.NArg() != 0 {
		return errcode.New(errcode.InvalidInput, "key generate takes no arguments, got %d", c.NArg()).
			WithHint("give the file with --out FILE")
	}
	out := c.String("out")
	if out == "-" {
		return keyGenerateToStdout(g)
	}
	if out == "" {
		out = filepath.Join(g.Home, "age-identity.txt")
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
		fmt.Fprintf(w, "  export %s=%s\n", encrypt.EnvIdentity, abs)
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
	path := c.String("age-identity")
	switch c.NArg() {
	case 0:
	case 1:
		path = c.Args().First()
	default:
		return errcode.New(errcode.InvalidInput, "key recipient takes at most one FILE, got %d arguments", c.NArg()).
			WithHint("usage: director key recipient [FILE]")
	}
	if path == "" {
		return errcode.New(errcode.InvalidInput, "key recipient needs an identity file").
			WithHint("give it as FILE, or set DIRECTOR_AGE_IDENTITY (--age-identity); create one with: `director key generate`")
	}
	// A FILE argument is read for its public keys alone: what is wrong
	// with it is invalid input, said of that file. The identity setting
	// is the one every command that decrypts reads: its errors are the
	// same here as there.
	load := encrypt.LoadIdentities
	if c.NArg() == 1 {
		load = encrypt.LoadIdentityFile
	}
	ids, err := load(path)
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
