package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"director/errcode"
	"director/storage"
)

// storeFlags are the store credentials, each with its environment variable.
// They are global flags (see newApp), so every command that opens the store
// sees them; prefer the environment variables: flags show up in ps.
func storeFlags() []cli.Flag {
	return []cli.Flag{
		setting(&cli.StringFlag{Name: "aws-access-key-id", EnvVars: []string{"AWS_ACCESS_KEY_ID"}, Usage: "access key `ID` of s3:// stores"}),
		setting(&cli.StringFlag{Name: "aws-secret-access-key", EnvVars: []string{"AWS_SECRET_ACCESS_KEY"}, Usage: "secret `KEY` of s3:// stores (prefer the environment variable)"}),
		setting(&cli.StringFlag{Name: "supabase-url", EnvVars: []string{"SUPABASE_URL"}, Usage: "Supabase project `URL` of supabase:// stores, e.g. https://abcdefgh.supabase.co"}),
		setting(&cli.StringFlag{Name: "supabase-service-key", EnvVars: []string{"SUPABASE_SERVICE_KEY"}, Usage: "Supabase service_role `KEY` of supabase:// stores (prefer the environment variable)"}),
		&cli.DurationFlag{Name: "store-call-timeout", EnvVars: []string{"DIRECTOR_STORE_CALL_TIMEOUT"}, Value: 30 * time.Second,
			Usage: "give up a store call of bounded size (stat, list, delete, opening a download) that has not answered after `DURATION`"},
		&cli.DurationFlag{Name: "store-idle-timeout", EnvVars: []string{"DIRECTOR_STORE_IDLE_TIMEOUT"}, Value: 60 * time.Second,
			Usage: "give up an upload or download to the store that has made no progress for `DURATION` (a slow one that moves is never cut)"},
	}
}

// flagOrEnv reads a store flag, falling back to its environment variable
// for commands whose lineage does not define the flag.
func flagOrEnv(c *cli.Context, name, env string) string {
	if v := c.String(name); v != "" {
		return v
	}
	return os.Getenv(env)
}

// openStore opens the configured store (--store / DIRECTOR_STORE) with the
// credentials of storeFlags.
func openStore(ctx context.Context, c *cli.Context, g *globals) (storage.Store, error) {
	for _, name := range []string{"store-call-timeout", "store-idle-timeout"} {
		if d := c.Duration(name); d <= 0 {
			return nil, errcode.New(errcode.InvalidInput, "--%s must be positive, not %s", name, d).WithHint("for example --%s 2m", name)
		}
	}
	if g.Store == "" {
		// From the path, not a URL: a home holding "?" or "#" is no URL.
		return storage.OpenDir(g.DefaultStoreDir())
	}
	return storage.Open(ctx, g.Store, storage.Options{
		CallTimeout:        c.Duration("store-call-timeout"),
		IdleTimeout:        c.Duration("store-idle-timeout"),
		AWSAccessKeyID:     flagOrEnv(c, "aws-access-key-id", "AWS_ACCESS_KEY_ID"),
		AWSSecretAccessKey: flagOrEnv(c, "aws-secret-access-key", "AWS_SECRET_ACCESS_KEY"),
		SupabaseURL:        flagOrEnv(c, "supabase-url", "SUPABASE_URL"),
		SupabaseServiceKey: flagOrEnv(c, "supabase-service-key", "SUPABASE_SERVICE_KEY"),
		Log:                g.Log,
	})
}

// storeCommands returns `director store check`.
func storeCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "store",
		Usage: "inspect the configured store",
		Subcommands: []*cli.Command{{
			Name:  "check",
			Usage: "put, stat, list, get and delete a small probe object, timing each step and diagnosing failures",
			Description: "Writes a probe under " + storage.CheckPrefix + " in the store given by --store (DIRECTOR_STORE),\n" +
				"reads it back and deletes it. A failure is diagnosed: bad credentials, missing bucket,\n" +
				"unreachable endpoint, clock skew, or a failing server. Exits 1 with storage_unavailable\n" +
				"when any step fails.",
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "give up the whole check after `DURATION`"},
			},
			Action: storeCheck,
		}},
	}}
}

// storeCheckJSON is the --json answer of a passing check.
type storeCheckJSON struct {
	Status string `json:"status"`
	storage.Report
}

func storeCheck(c *cli.Context) error {
	if c.NArg() > 0 {
		return errcode.New(errcode.InvalidInput, "store check takes no arguments").WithHint("choose the store with --store or DIRECTOR_STORE")
	}
	g := getGlobals(c)
	if d := c.Duration("timeout"); d <= 0 {
		return errcode.New(errcode.InvalidInput, "--timeout must be positive, not %s", d).
			WithHint("give the whole check time to run, for example --timeout 2m (the default)")
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	s, err := openStore(ctx, c, g)
	if err != nil {
		return err
	}
	rep := storage.Check(ctx, s)
	rep.Hint = g.hints.hint(rep.Hint)
	if rep.OK {
		g.emit(storeCheckJSON{Status: "ok", Report: rep}, func(w io.Writer) { printCheck(w, rep) })
		return nil
	}
	// On failure --json prints only the error object (one JSON object per
	// command); the error's message names the failing step and diagnosis.
	if !g.JSON && !g.Quiet {
		printCheck(g.Stdout, rep)
	}
	return rep.Err()
}

func printCheck(w io.Writer, rep storage.Report) {
	fmt.Fprintf(w, "store %s\n", rep.Store)
	for _, st := range rep.Steps {
		switch {
		case st.Skipped:
			fmt.Fprintf(w, "  %-7s skipped\n", st.Name)
		case st.OK:
			fmt.Fprintf(w, "  %-7s ok      %8.1f ms\n", st.Name, st.DurationMS)
		default:
			fmt.Fprintf(w, "  %-7s FAILED  %8.1f ms  [%s] %s\n", st.Name, st.DurationMS, st.Code, st.Error)
		}
	}
	if rep.CreatedBucket != "" {
		fmt.Fprintf(w, "note: bucket %q did not exist; the check created it (private). If that name is a typo, delete the bucket and fix the store URL\n", rep.CreatedBucket)
	}
	if rep.OK {
		fmt.Fprintln(w, "ok: the store works")
		return
	}
	fmt.Fprintf(w, "diagnosis: %s\n", rep.Diagnosis)
	if rep.Hint != "" {
		fmt.Fprintf(w, "hint: %s\n", rep.Hint)
	}
}

// closeTimeout is --close-timeout / DIRECTOR_CLOSE_TIMEOUT, refused when it
// is not positive: the launcher would take 0 for its default and say
// nothing.
func closeTimeout(c *cli.Context) (time.Duration, error) {
	d := c.Duration("close-timeout")
	if d <= 0 {
		return 0, errcode.New(errcode.InvalidInput, "--close-timeout must be positive, not %s", d).
			WithHint("for example --close-timeout 30s (DIRECTOR_CLOSE_TIMEOUT sets it too)")
	}
	return d, nil
}
