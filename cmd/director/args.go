package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed lets flags follow positional arguments, as in
// `director profile snapshot work --note "after login"`. urfave/cli v2 stops
// parsing flags at the first positional argument, so this moves every flag
// the selected command knows (with its value, for non-boolean flags) in
// front of the positional ones. Everything after "--" is left alone.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	// Walk global flags and the command path.
	flags := app.Flags
	cmds := app.Commands
	var cmd *cli.Command
	i := 0
	for i < len(rest) {
		a := rest[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			n := flagArity(flags, a)
			out = append(out, rest[i:min(i+n, len(rest))]...)
			i += n
			continue
		}
		next := findCommand(cmds, a)
		if next == nil {
			break
		}
		cmd = next
		out = append(out, a)
		flags, cmds = cmd.Flags, cmd.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	if cmd == nil || i >= len(rest) {
		return append(out, rest[i:]...)
	}
	var global, moved, positional []string
	for i < len(rest) {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" && knownFlag(flags, a) {
			n := flagArity(flags, a)
			moved = append(moved, rest[i:min(i+n, len(rest))]...)
			i += n
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" && knownFlag(app.Flags, a) {
			// A global flag given late: urfave/cli wants it before the command.
			n := flagArity(app.Flags, a)
			global = append(global, rest[i:min(i+n, len(rest))]...)
			i += n
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			// Unknown: leave it among the flags so urfave/cli reports it.
			moved = append(moved, a)
			i++
			continue
		}
		positional = append(positional, a)
		i++
	}
	out = append(append([]string{out[0]}, global...), append(out[1:], moved...)...)
	if len(positional) > 0 && positional[0] != "--" {
		out = append(out, "--")
	}
	return append(out, positional...)
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
