package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"director/errcode"
)

// run builds the app and runs it; it returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	argv, path, err := interspersed(app, args)
	if err == nil {
		err = app.RunContext(ctx, argv)
	} else {
		hintsOfLine(ctx, app, argv)
	}
	if err == nil {
		return errcode.ExitOK
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) && errcode.Of(err) != errcode.Interrupted {
		// Stopped by a signal: say so, whatever layer noticed first.
		err = errcode.Hinted(err, errcode.Interrupted, defaultHints[errcode.Interrupted], "interrupted")
	}
	var exitErr cli.ExitCoder
	if errors.As(err, &exitErr) && errcode.Of(err) == errcode.Internal {
		// urfave/cli's own usage errors: the only one left is "No help
		// topic for 'x'", an unknown command under path.
		msg := strings.TrimSpace(err.Error())
		if name, ok := strings.CutPrefix(msg, "No help topic for '"); ok {
			msg = fmt.Sprintf("unknown command %q for %s", strings.TrimSuffix(name, "'"), path)
		}
		err = errcode.New(errcode.InvalidInput, "%s", msg).WithHint("run `%s --help` for the commands", path)
	}
	// A command that already printed its own result (director run prints
	// one JSON object with the failing step) only sets the exit status.
	var rep interface{ Reported() bool }
	if errors.As(err, &rep) && rep.Reported() {
		return errcode.ExitStatus(err)
	}
	if isUsageError(err) {
		err = errcode.Hinted(err, errcode.InvalidInput, fmt.Sprintf("run `%s --help`", path), "invalid arguments")
	}
	reportError(stdout, stderr, jsonRequested(args), app.Metadata["globals"].(*globals).hints, err)
	return errcode.ExitStatus(err)
}

// hintsOfLine sets up the globals of a line that interspersed refused
// before the app ran, from its program name and global flags, argv, as
// the app's Before does for a line it runs: the hint of a usage error
// (`director --help` after `director --home DIR` alone) names the --home
// and --store given, as that of an unknown command does. A line whose
// global flags Before refuses keeps the default hints.
func hintsOfLine(ctx context.Context, app *cli.App, argv []string) {
	if len(argv) == 0 || app.Before == nil {
		return
	}
	set := flag.NewFlagSet(app.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range app.Flags {
		if err := f.Apply(set); err != nil {
			return
		}
	}
	if err := set.Parse(argv[1:]); err != nil {
		return
	}
	c := cli.NewContext(app, set, nil)
	c.Context = ctx
	_ = app.Before(c)
}

// isUsageError recognises urfave/cli's own flag and argument errors.
func isUsageError(err error) bool {
	if errcode.Of(err) != errcode.Internal {
		return false
	}
	msg := err.Error()
	for _, s := range []string{"flag provided but not defined", "invalid value", "Required flag", "flag needs an argument", "No help topic"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// jsonRequested looks for --json before urfave/cli has parsed anything, so
// that even a flag error is reported as JSON when asked.
func jsonRequested(args []string) bool {
	on := false
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		if name != "--json" && name != "-json" {
			continue
		}
		if !hasVal {
			on = true
		} else if b, err := strconv.ParseBool(val); err == nil {
			on = b // urfave/cli takes every spelling ParseBool takes; the last one wins
		}
	}
	return on
}

// errorJSON is the one JSON object printed on failure.
type errorJSON struct {
	Status string `json:"status"`
	Error  struct {
		Code    errcode.Code `json:"code"`
		Message string       `json:"message"`
		Hint    string       `json:"hint,omitempty"`
	} `json:"error"`
}

// defaultHints say what to do next for an error that carries no hint of
// its own, so that no error reaches the user without one.
var defaultHints = map[errcode.Code]string{
	errcode.DomainBlocked:       "the workflow reached a domain on its blocklist; change the step or the blocklist",
	errcode.SessionNotFound:     "the session has ended; start a new one",
	errcode.TabNotFound:         "use a tab the session opened (t1, t2, ...)",
	errcode.ElementNotFound:     "check the selector against the page, or wait for it first",
	errcode.ElementStale:        "the page changed under the step; retry it or wait for the page to settle",
	errcode.Timeout:             "retry, or give the step more time",
	errcode.BrowserLaunchFailed: "check --chrome / CHROME_PATH; --log-level debug shows the command line",
	errcode.InvalidAction:       "fix the workflow step named in the message",
	errcode.InvalidInput:        "run `director --help`",
	errcode.HumanRequired:       "log in again by hand: `director profile open <profile> --snapshot`",
	errcode.ProfileInUse:        "wait for the other director command or Chrome on this profile to finish, then retry",
	errcode.ProfileNotFound:     "list profiles with `director profile list`, or create one with `director profile create <profile>`",
	errcode.SnapshotNotFound:    "list snapshots with `director profile snapshots <profile>`",
	errcode.SnapshotCorrupt:     "restore another snapshot (see `director profile snapshots <profile>`)",
	errcode.UnsafeArchive:       "the archive is not a safe director snapshot; restore another one",
	errcode.DecryptFailed:       "give the age identity that matches the snapshot's recipients: --age-identity / DIRECTOR_AGE_IDENTITY",
	errcode.StorageUnavailable:  "check the store with `director store check`",
	errcode.Interrupted:         "director was stopped (Ctrl-C or SIGTERM) before it finished; rerun the command when ready",
	errcode.Internal:            "rerun with --log-level debug; if it persists, report it with that output",
}

// hintFor is err's own hint, or its code's default one, its commands
// naming director as inv does.
func hintFor(inv invocation, err error) string {
	if h := errcode.HintOf(err); strings.TrimSpace(h) != "" {
		return inv.hint(h)
	}
	if h, ok := defaultHints[errcode.Of(err)]; ok {
		return inv.hint(h)
	}
	return defaultHints[errcode.Internal]
}

// oneLine joins a multi-line text into one line.
func oneLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "; ")
}

// reportError prints err: one JSON object {"status":"error","error":{code,
// message, hint}} on stdout under --json, else one line on stderr:
// "director: MESSAGE [CODE]; hint: HINT".
func reportError(stdout, stderr io.Writer, asJSON bool, inv invocation, err error) {
	if asJSON {
		writeJSON(stdout, errorObject(inv, err))
		return
	}
	fmt.Fprintf(stderr, "director: %s [%s]; hint: %s\n", oneLine(err.Error()), errcode.Of(err), oneLine(hintFor(inv, err)))
}

// errorObject is err as the JSON object of --json. A command that has more
// to say embeds it in its own object, prints that, and returns
// reportedError.
func errorObject(inv invocation, err error) errorJSON {
	var out errorJSON
	out.Status = "error"
	out.Error.Code = errcode.Of(err)
	out.Error.Message = err.Error()
	out.Error.Hint = hintFor(inv, err)
	return out
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// globals are the values every command shares.
type globals struct {
	Home   string
	Store  string
	JSON   bool
	Quiet  bool
	Stdout io.Writer
	Stderr io.Writer
	Log    *slog.Logger
	// hints names director in the commands hints give (newInvocation).
	hints invocation
}

// ProfilesDir is where local profiles live.
func (g *globals) ProfilesDir() string { return filepath.Join(g.Home, "browser-profiles") }

// CatalogPath is the SQLite catalog.
func (g *globals) CatalogPath() string { return filepath.Join(g.Home, "director.db") }

// DefaultStoreDir is the folder of the default store (no --store),
// <home>/snapshots. It is opened by its path (storage.OpenDir), not as a
// file:// URL glued together: a home holding "?" or "#" made every command
// fail with "bad store URL".
func (g *globals) DefaultStoreDir() string { return filepath.Join(g.Home, "snapshots") }

// emit prints v as one JSON object under --json, or calls text otherwise
// (unless --quiet).
func (g *globals) emit(v any, text func(w io.Writer)) {
	if g.JSON {
		writeJSON(g.Stdout, v)
		return
	}
	if !g.Quiet && text != nil {
		text(g.Stdout)
	}
}

func getGlobals(c *cli.Context) *globals {
	return c.App.Metadata["globals"].(*globals)
}

// defaultHome is ~/.director: under $HOME, or, when HOME is unset or empty
// (a system service, `env -i`), under the user's home directory in the
// password database; "" when there is neither (newApp refuses it). It was
// .director in the working directory.
func defaultHome() string {
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".director")
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return filepath.Join(u.HomeDir, ".director")
	}
	return ""
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return newAppHome(stdout, stderr, defaultHome())
}

// newAppHome is newApp with home as the default home ("" when the user has
// none).
func newAppHome(stdout, stderr io.Writer, home string) *cli.App {
	g := &globals{Stdout: stdout, Stderr: stderr}
	app := &cli.App{
		Name:  "director",
		Usage: "keep browsers logged in: snapshot, store and restore Chrome profiles, and run workflows on them",
		Description: "A person logs in once in a real Chrome profile; director snapshots the whole profile into a\n" +
			"zstd-compressed tar archive (age-encrypted when it leaves the machine), stores it, records it in a\n" +
			"SQLite catalog, and restores it safely before any workflow that needs the login.\n\n" +
			"Exit codes: 0 ok, 1 failure, 2 usage or invalid input, 3 human required, 4 domain blocked.\n\n" +
			"An environment variable set to \"\" is the same as one not set (DIRECTOR_HOME= is the default home);\n" +
			"a flag given an empty value (--home \"\") is refused.",
		Writer:               stdout,
		ErrWriter:            stderr,
		EnableBashCompletion: true,
		// Errors are reported and mapped to exit codes by run, never by
		// urfave/cli calling os.Exit itself.
		ExitErrHandler: func(*cli.Context, error) {},
		Metadata:       map[string]any{"globals": g},
		Flags: concatFlags([]cli.Flag{
			setting(&cli.StringFlag{Name: "home", EnvVars: []string{"DIRECTOR_HOME"}, Value: home, Usage: "director's home: profiles in `DIR`/browser-profiles, catalog in DIR/director.db"}),
			setting(&cli.StringFlag{Name: "store", EnvVars: []string{"DIRECTOR_STORE"}, Usage: "`URL` of the store where archives live: file:///path, s3://bucket/prefix?endpoint=host:port, supabase://bucket/prefix (default file://<home>/snapshots)"}),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object on stdout"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
			setting(&cli.StringFlag{Name: "log-level", EnvVars: []string{"DIRECTOR_LOG_LEVEL"}, Value: "warn", Usage: "log at `LEVEL` and above on stderr: debug, info, warn, error"}),
		}, managerFlags(), storeFlags(), encryptionFlags()),
		Before: func(c *cli.Context) error {
			if err := refuseEmpty(c, c.App.Flags); err != nil {
				return err
			}
			if err := refuseTilde(c, c.App.Flags); err != nil && !needsNoHome(c.Args().Slice()) {
				return err
			}
			g.Home = c.String("home")
			g.Store = c.String("store")
			g.JSON = c.Bool("json")
			g.Quiet = c.Bool("quiet")
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
				source := "--log-level"
				if v, ok := os.LookupEnv("DIRECTOR_LOG_LEVEL"); ok && v == c.String("log-level") {
					source = "DIRECTOR_LOG_LEVEL"
				}
				return errcode.New(errcode.InvalidInput, "invalid %s %q", source, c.String("log-level")).WithHint("use debug, info, warn or error")
			}
			if g.Quiet && !c.IsSet("log-level") {
				lvl = slog.LevelError // --quiet prints nothing but errors
			}
			g.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
			if g.Home == "" {
				// version and help read no home: they work for a user
				// with no home directory anywhere (a container's uid).
				if needsNoHome(c.Args().Slice()) {
					return nil
				}
				return errcode.New(errcode.InvalidInput, "no home directory for director: HOME is not set and the user has none").
					WithHint("give one with --home DIR or DIRECTOR_HOME")
			}
			abs, err := filepath.Abs(g.Home)
			if err != nil {
				return errcode.Wrap(err, errcode.InvalidInput, "bad --home %q", g.Home)
			}
			g.Home = abs
			g.hints = newInvocation(c, g)
			setQuitHints(c.Context, g.hints)
			return nil
		},
		Commands: commands(),
	}
	app.OnUsageError = quietUsageError
	shortDurationDefaults(app.Flags)
	prepareCommands(app.Commands)
	return app
}

// needsNoHome reports whether the command line args (after the global
// flags) reads no home: version, and help, asked for with the help command
// or --help / -h anywhere (as interspersed reads them).
func needsNoHome(args []string) bool {
	if len(args) > 0 && (args[0] == "version" || args[0] == "help" || args[0] == "h") {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelpFlag(a) {
			return true
		}
	}
	return false
}

// quietUsageError returns a flag error instead of printing the help page, so
// that --json output stays one JSON object and text output one line.
func quietUsageError(c *cli.Context, err error, _ bool) error {
	name := "director"
	if c != nil && c.Command != nil && c.Command.HelpName != "" {
		name = c.Command.HelpName
	}
	hint := fmt.Sprintf("run `%s --help` for its flags", name)
	var flags []cli.Flag
	if c != nil && c.Command != nil {
		flags = c.Command.Flags
	}
	if c != nil && c.App != nil {
		flags = append(flags, c.App.Flags...)
	}
	if m := badEnvRE.FindStringSubmatch(err.Error()); m != nil {
		// A variable's value urfave/cli could not read: say it as
		// the size settings do, naming the variable, not Go's parser.
		value, env, flagName := m[1], m[3], m[4]
		if h := valueForm(lookupFlag(flags, "--"+flagName)); h != "" {
			hint = h + fmt.Sprintf(" (%s sets --%s)", env, flagName)
		}
		if m[2] == "duration" && durationTooLong(value) {
			return errcode.New(errcode.InvalidInput, "invalid %s: %q is longer than a duration can be", env, value).
				WithHint("%s (%s sets --%s)", durationRange, env, flagName)
		}
		return errcode.New(errcode.InvalidInput, "invalid %s: %q is not %s", env, value, kindName(m[2])).WithHint("%s", hint)
	}
	if m := badValueRE.FindStringSubmatch(err.Error()); m != nil {
		f := lookupFlag(flags, "--"+m[2])
		if _, ok := f.(*cli.DurationFlag); ok && durationTooLong(m[1]) {
			return errcode.New(errcode.InvalidInput, "invalid value %q for flag --%s: longer than a duration can be", m[1], m[2]).
				WithHint("%s", durationRange)
		}
		if h := valueForm(f); h != "" {
			hint = h
		}
	}
	msg := usageMessage(err)
	if msg == "unknown flag --version" || msg == "unknown flag -v" || msg == "unknown flag -V" {
		hint = "the version is a command: `director version`"
	}
	return errcode.New(errcode.InvalidInput, "%s", msg).WithHint("%s", hint)
}

// valueForm says what a value of flag f looks like, "" when the help says
// it better.
func valueForm(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "a duration is a number with a unit, such as 90m or 36h; there is no day unit (7 days is 168h)"
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		return "give a whole number, such as 100"
	}
	return ""
}

// durationRange says how long a duration can be: Go's durations are int64
// nanoseconds.
const durationRange = "a duration is at most 2562047h (about 292 years); give a shorter one, such as 8760h for a year"

// durationSyntaxRE matches what time.ParseDuration reads, whatever its size.
var durationSyntaxRE = regexp.MustCompile(`^[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

// durationTooLong reports whether s is written as a duration but does not
// parse as one: it is too long (99999999h), not misspelt (7d).
func durationTooLong(s string) bool {
	_, err := time.ParseDuration(s)
	return err != nil && durationSyntaxRE.MatchString(s)
}

// kindName names urfave/cli's kind of value ("int", "duration") for a person.
func kindName(kind string) string {
	switch kind {
	case "int", "int64", "uint", "uint64":
		return "a whole number"
	case "duration":
		return "a duration"
	case "bool":
		return "true or false"
	}
	return "a " + kind
}

// badValueRE finds the flag in urfave/cli's "invalid value" errors.
var badValueRE = regexp.MustCompile(`^invalid value "(.*)" for flag -+([A-Za-z0-9][A-Za-z0-9_-]*):`)

// badEnvRE reads urfave/cli's error for an environment variable whose
// value does not parse: the value, its kind, the variable, the flag.
var badEnvRE = regexp.MustCompile(`^could not parse "(.*)" as ([a-z0-9]+) value from environment variable "([A-Za-z0-9_]+)" for flag ([A-Za-z0-9][A-Za-z0-9_-]*):`)

// commands lists the top-level commands; each lives in its own file.
func commands() []*cli.Command {
	var cmds []*cli.Command
	for _, f := range commandSets {
		cmds = append(cmds, f()...)
	}
	return cmds
}

// commandSets is filled by each command file's init-free registration list
// below; keeping it a plain slice literal means no package-level mutation.
var commandSets = []func() []*cli.Command{
	profileCommands,
	catalogCommands,
	runCommands,
	auditCommands,
	keyCommands,
	storeCommands,
	versionCommands,
}

func concatFlags(sets ...[]cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}
