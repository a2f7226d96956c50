package main

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"director/errcode"
)

// interspersed lets flags follow positional arguments, as in
// `director profile snapshot work --note "after login"`. urfave/cli v2 stops
// parsing flags at the first positional argument, so this moves every flag
// the selected command knows (with its value, for non-boolean flags) in
// front of the positional ones. Everything after "--" is left alone.
//
// It also returns the command path it found ("director profile snapshot"),
// for hints, and settles two things urfave/cli gets wrong once flags are
// moved: a flag that needs a value but ends the line without one is a usage
// error here (it would otherwise take the "--" put before the positional
// arguments as its value), and --help or -h anywhere on the line shows the
// help of the command named (urfave/cli would take the first positional
// argument for a help topic). A line it refuses returns the program name
// and the global flags read before the error, for the hints (hintsOfLine).
func interspersed(app *cli.App, args []string) ([]string, string, error) {
	path := app.Name
	if len(args) > 0 && args[len(args)-1] == completionFlag {
		return args, path, nil // the shell's completion asks: urfave/cli answers
	}
	if len(args) < 2 {
		return args, path, needsCommand(app.Commands, path)
	}
	out := []string{args[0]}
	rest := helpLast(app, args[1:])
	// Walk global flags and the command path.
	flags := app.Flags
	cmds := app.Commands
	var cmd *cli.Command
	var global []string // global flags given after a command name
	firstCmd := -1      // index in out of the first command name
	help := false       // --help or -h anywhere, even where a value belongs
	unknown := false    // a flag that is not the command's (urfave/cli reports it)
	// globals is the line's program name and the global flags read so
	// far: what a refused line returns, for its hints.
	globals := func() []string {
		res := out
		if firstCmd >= 0 {
			res = out[:firstCmd]
		}
		return append(append([]string{}, res...), global...)
	}
	i := 0
	for i < len(rest) {
		a := rest[i]
		if a == "--" {
			break
		}
		if isHelpFlag(a) && !knownFlag(flags, a) {
			help = true
			i++
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			// A global flag after a command name, as in "director
			// profile --json list", moves up with the other late ones.
			late := cmd != nil && !knownFlag(flags, a) && knownFlag(app.Flags, a)
			unknown = unknown || (!late && !knownFlag(flags, a))
			fl := flags
			if late {
				fl = app.Flags
			}
			n, asksHelp, err := takeFlag(fl, app.Flags, rest, i, path)
			if err != nil {
				return globals(), path, err
			}
			if asksHelp {
				help = true
				i += n
				continue
			}
			if late {
				global = append(global, rest[i:i+n]...)
			} else {
				out = append(out, rest[i:i+n]...)
			}
			i += n
			continue
		}
		next := findCommand(cmds, a)
		if next == nil {
			break
		}
		cmd = next
		path += " " + next.Name
		if firstCmd < 0 {
			firstCmd = len(out)
		}
		out = append(out, a)
		flags, cmds = cmd.Flags, cmd.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	// Global flags given late go right before the first command name, after
	// the early ones, so that a repeated global flag keeps its last value.
	withGlobals := func() []string {
		if firstCmd < 0 {
			return out
		}
		res := append([]string{}, out[:firstCmd]...)
		res = append(res, global...)
		return append(res, out[firstCmd:]...)
	}
	if cmd == nil || i >= len(rest) {
		if !help && !unknown && i >= len(rest) && (cmd == nil || len(cmds) > 0) {
			return globals(), path, needsCommand(cmds, path)
		}
		res := append(withGlobals(), rest[i:]...)
		if help {
			res = append(res, "--help")
		}
		return res, path, nil
	}
	var moved, positional []string
	for i < len(rest) {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		isFlag := strings.HasPrefix(a, "-") && a != "-"
		switch {
		case isFlag && knownFlag(flags, a):
			n, asksHelp, err := takeFlag(flags, app.Flags, rest, i, path)
			if err != nil {
				return globals(), path, err
			}
			if asksHelp {
				help = true
			} else {
				moved = append(moved, rest[i:i+n]...)
			}
			i += n
		case isFlag && knownFlag(app.Flags, a):
			// A global flag given late: urfave/cli wants it before the command.
			n, asksHelp, err := takeFlag(app.Flags, flags, rest, i, path)
			if err != nil {
				return globals(), path, err
			}
			if asksHelp {
				help = true
			} else {
				global = append(global, rest[i:i+n]...)
			}
			i += n
		case isFlag && isHelpFlag(a):
			help = true
			i++
		case isFlag:
			// Unknown: leave it among the flags so urfave/cli reports it.
			moved = append(moved, a)
			i++
		default:
			positional = append(positional, a)
			i++
		}
	}
	res := withGlobals()
	if help {
		// The command's own help, whatever else the line holds.
		return append(res, "--help"), path, nil
	}
	res = append(res, moved...)
	if len(positional) > 0 && positional[0] != "--" {
		res = append(res, "--")
	}
	return append(res, positional...), path, nil
}

// completionFlag is the flag urfave/cli's bash completion script appends
// to the line it completes (EnableBashCompletion).
const completionFlag = "--generate-bash-completion"

// needsCommand is the usage error of a line that stops at a command
// group (`director profile`, or `director` alone): urfave/cli would print
// the group's help and exit 0, so a cron line that lost its subcommand
// would "succeed", and --json would get a help page.
func needsCommand(cmds []*cli.Command, path string) error {
	var names []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	return errcode.New(errcode.InvalidInput, "missing command after %q: one of %s", path, strings.Join(names, ", ")).
		WithHint("run `%s --help` for what each does", path)
}

// takeFlag reads the flag at rest[i] among flags: how many arguments it
// occupies (n), and whether it asks for help instead, as `--note --help`
// does. A flag whose value is missing is an error, and so is one whose
// value, given as the next argument, is itself a flag of the command line
// (of flags or others): in `--note --json` the snapshot would be noted
// "--json" and --json lost. Other values that start with "-" (`--keep -1`,
// `--out -`) are values; `--note=--json` notes "--json".
func takeFlag(flags, others []cli.Flag, rest []string, i int, path string) (n int, asksHelp bool, err error) {
	a := rest[i]
	n = flagArity(flags, a)
	if i+n > len(rest) {
		return 0, false, missingValue(flags, a, path)
	}
	if helpAsValue(rest, i, n) {
		return n, true, nil
	}
	if err := decimalValue(lookupFlag(flags, a), a, rest[i+n-1], n); err != nil {
		return 0, false, err
	}
	if v := rest[i+n-1]; n == 2 && strings.HasPrefix(v, "-") && (knownFlag(flags, v) || knownFlag(others, v)) {
		shown := shownFlag(a)
		return 0, false, errcode.New(errcode.InvalidInput, "flag %s is followed by the flag %s: is its value missing?", shown, v).
			WithHint("put the value right after the flag: %s %s; a value that is written like a flag is given as %s=%s (see `%s --help`)",
				shown, placeholder(lookupFlag(flags, a)), shown, v, path)
	}
	return n, false, nil
}

// helpAsValue reports whether the flag at rest[i], which takes n
// arguments, would take --help or -h for its value: `--note --help` asks
// for help, and is never a snapshot noted "--help".
func helpAsValue(rest []string, i, n int) bool {
	return n == 2 && isHelpFlag(rest[i+1])
}

// isHelpFlag reports whether arg asks for help: -h, --help, --help=true.
// helpLast rewrites the two spellings that name a command after asking for
// help, "help profile snapshot" and "-h profile snapshot", into "profile
// snapshot --help", so that they show that command's help (urfave/cli would
// show the first command's, without its subcommands). Global flags before
// them stay where they are; anything that names no command is left alone.
func helpLast(app *cli.App, rest []string) []string {
	for i := 0; i < len(rest); {
		a := rest[i]
		switch {
		case a == "--":
			return rest
		case isHelpFlag(a) || a == "help" || a == "h":
			if i+1 >= len(rest) || findCommand(app.Commands, rest[i+1]) == nil {
				return rest
			}
			res := append(append([]string{}, rest[:i]...), rest[i+1:]...)
			return append(res, "--help")
		case strings.HasPrefix(a, "-") && a != "-":
			i += flagArity(app.Flags, a)
		default:
			return rest
		}
	}
	return rest
}

func isHelpFlag(arg string) bool {
	name := strings.TrimLeft(arg, "-")
	name, val, hasVal := strings.Cut(name, "=")
	if name != "h" && name != "help" {
		return false
	}
	if !hasVal {
		return true
	}
	b, err := strconv.ParseBool(val)
	return err == nil && b
}

// missingValue is the usage error of a flag that ends the line without the
// value it needs.
func missingValue(flags []cli.Flag, arg, path string) error {
	shown := shownFlag(arg)
	return errcode.New(errcode.InvalidInput, "flag %s needs a value", shown).
		WithHint("put the value right after the flag: %s %s (see `%s --help`)", shown, placeholder(lookupFlag(flags, arg)), path)
}

// shownFlag is arg's flag as the help spells it: --note, -q.
func shownFlag(arg string) string {
	if name := flagName(arg); len(name) != 1 {
		return "--" + name
	}
	return "-" + flagName(arg)
}

// placeholder is the word the help shows for a flag's value: the `QUOTED`
// word of its usage text, or VALUE.
func placeholder(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		if _, after, ok := strings.Cut(d.GetUsage(), "`"); ok {
			if name, _, ok := strings.Cut(after, "`"); ok && name != "" {
				return name
			}
		}
	}
	return "VALUE"
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func flagName(arg string) string {
	name := strings.TrimLeft(arg, "-")
	if k, _, ok := strings.Cut(name, "="); ok {
		return k
	}
	return name
}

func lookupFlag(flags []cli.Flag, arg string) cli.Flag {
	name := flagName(arg)
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func knownFlag(flags []cli.Flag, arg string) bool { return lookupFlag(flags, arg) != nil }

// flagArity is how many arguments a flag occupies: 1 for booleans and
// "--name=value", 2 for "--name value".
func flagArity(flags []cli.Flag, arg string) int {
	if strings.Contains(arg, "=") {
		return 1
	}
	f := lookupFlag(flags, arg)
	if f == nil {
		return 1
	}
	if _, ok := f.(*cli.BoolFlag); ok {
		return 1
	}
	return 2
}

// argsRange reads how many positional arguments a command takes from its
// ArgsUsage, the usage line its help shows: a bare word is a required
// argument, a [bracketed] one optional, "..." or "…" means any number more.
// max is -1 when unbounded. "NAME [ID|latest]" is 1, 2; "" is 0, 0.
func argsRange(usage string) (min, max int) {
	depth := 0
	unbounded := false
	for _, f := range strings.Fields(usage) {
		if strings.Contains(f, "...") || strings.Contains(f, "…") {
			unbounded = true
		}
		if depth == 0 {
			switch {
			case strings.HasPrefix(f, "["):
				max++
			case f != "|" && strings.Trim(f, ".…") != "":
				min++
				max++
			}
		}
		depth += strings.Count(f, "[") - strings.Count(f, "]")
	}
	if unbounded {
		return min, -1
	}
	return min, max
}

// usageLine is a command's usage as its help shows it.
func usageLine(cmd *cli.Command) string {
	return strings.TrimSpace(cmd.HelpName + " [command options] " + cmd.ArgsUsage)
}

// checkArgs is the Before of every leaf command: the number of positional
// arguments must fit ArgsUsage, and required flags must be set. urfave/cli
// checks required flags itself, but prints the whole help page on stdout
// before its error (breaking --json's one object), so prepareCommands takes
// that check over.
func checkArgs(required []cli.Flag) cli.BeforeFunc {
	return func(c *cli.Context) error {
		cmd := c.Command
		// "profile prune", for messages that follow "director: ".
		name := strings.TrimPrefix(cmd.HelpName, c.App.Name+" ")
		min, max := argsRange(cmd.ArgsUsage)
		n := c.NArg()
		hint := "usage: " + usageLine(cmd)
		switch {
		case max >= 0 && n > max:
			extra := quoteArgs(c.Args().Slice()[max:])
			if max == 0 {
				return errcode.New(errcode.InvalidInput, "%s takes no arguments, got %s", name, extra).WithHint("%s", hint)
			}
			return errcode.New(errcode.InvalidInput, "%s takes at most %d %s (%s), got %d: extra %s",
				name, max, plural(max, "argument"), cmd.ArgsUsage, n, extra).WithHint("%s", hint)
		case n < min:
			return errcode.New(errcode.InvalidInput, "%s needs %s, got %d %s", name, cmd.ArgsUsage, n, plural(n, "argument")).
				WithHint("%s", hint)
		}
		if err := refuseEmpty(c, cmd.Flags); err != nil {
			return err
		}
		for _, f := range required {
			if !c.IsSet(f.Names()[0]) {
				flag := "--" + f.Names()[0] + " " + placeholder(f)
				return errcode.New(errcode.InvalidInput, "%s needs %s", name, flag).
					WithHint("add %s (%s)", flag, hint)
			}
		}
		return nil
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// takeOverRequired clears Required on f and reports whether it was set, so
// that checkArgs checks it instead of urfave/cli. Every urfave/cli v2 flag
// type keeps Required in a bool field of that name.
func takeOverRequired(f cli.Flag) bool {
	rf, ok := f.(cli.RequiredFlag)
	if !ok || !rf.IsRequired() {
		return false
	}
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	field := v.Elem().FieldByName("Required")
	if !field.IsValid() || field.Kind() != reflect.Bool || !field.CanSet() {
		return false
	}
	field.SetBool(false)
	// Help would otherwise show the zero value as a default ("(default: 0)").
	if dt := v.Elem().FieldByName("DefaultText"); dt.IsValid() && dt.Kind() == reflect.String && dt.CanSet() && dt.String() == "" {
		dt.SetString("none, required")
	}
	return true
}

// prepareCommands sets, on every command below cmds, the usage-error
// handler, and on every leaf command the argument check (chained before any
// Before the command has) and no `help` subcommand: a leaf's positional
// arguments are data ("director profile create h" creates profile h), and
// --help / -h anywhere still shows its help.
func prepareCommands(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = quietUsageError
		shortDurationDefaults(c.Flags)
		if len(c.Subcommands) > 0 {
			prepareCommands(c.Subcommands)
			continue
		}
		c.HideHelpCommand = true
		var required []cli.Flag
		for _, f := range c.Flags {
			if takeOverRequired(f) {
				required = append(required, f)
			}
		}
		check := checkArgs(required)
		if before := c.Before; before != nil {
			c.Before = func(ctx *cli.Context) error {
				if err := check(ctx); err != nil {
					return err
				}
				return before(ctx)
			}
		} else {
			c.Before = check
		}
	}
}

// shortDurationDefaults makes the help show a duration flag's default as
// it is written ("1m", "2m30s"), not as time.Duration prints it ("1m0s").
func shortDurationDefaults(flags []cli.Flag) {
	for _, f := range flags {
		if d, ok := f.(*cli.DurationFlag); ok && d.DefaultText == "" && d.Value > 0 {
			s := d.Value.String()
			if strings.HasSuffix(s, "m0s") {
				s = strings.TrimSuffix(s, "0s")
			}
			if strings.HasSuffix(s, "h0m") {
				s = strings.TrimSuffix(s, "0m")
			}
			d.DefaultText = s
		}
	}
}

// urfaveFlagRE finds urfave/cli's single-dash spelling of a long flag in its
// parse errors ("flag provided but not defined: -note").
var urfaveFlagRE = regexp.MustCompile(`(^|\s)-([A-Za-z0-9][A-Za-z0-9_-]+)`)

// usageMessage rewords urfave/cli's flag errors with the spelling the help
// shows (--note, not -note).
func usageMessage(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + urfaveFlagRE.ReplaceAllString(" "+name, "$1--$2")[1:]
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return fmt.Sprintf("flag %s needs a value", urfaveFlagRE.ReplaceAllString(" "+name, "$1--$2")[1:])
	}
	return urfaveFlagRE.ReplaceAllString(msg, "$1--$2")
}

// decimalValue refuses a whole-number flag's value that is not written in
// decimal: urfave/cli reads 0x10 as 16, 010 as 8 and 1_0 as 10
// (strconv's base 0), so --keep-last 0x10 kept sixteen snapshots. arg is
// the flag as given, value its value (the next argument when n is 2).
func decimalValue(f cli.Flag, arg, value string, n int) error {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
	default:
		return nil
	}
	if n == 1 {
		_, v, ok := strings.Cut(arg, "=")
		if !ok {
			return nil
		}
		value = v
	}
	if decimalRE.MatchString(value) {
		return nil
	}
	if _, err := strconv.ParseInt(value, 0, 64); err != nil {
		if _, err := strconv.ParseUint(value, 0, 64); err != nil {
			return nil // not a number in any base: urfave/cli says so
		}
	}
	shown := shownFlag(arg)
	return errcode.New(errcode.InvalidInput, "invalid value %q for flag %s: not a whole number in decimal", value, shown).
		WithHint("give a whole number in decimal digits, without a leading 0 (octal) or a 0x, 0o or 0b prefix, such as %s 5", shown)
}

// decimalRE is a whole number as strconv reads it in base 10 and base 0
// alike: no leading 0 (octal), no 0x, 0o or 0b prefix, no underscores.
var decimalRE = regexp.MustCompile(`^[-+]?(?:0|[1-9][0-9]*)$`)
