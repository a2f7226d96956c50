package main

import (
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"director/internal/shellquote"
	"director/storage"
)

// invocation is how the commands that director prints for a person to paste
// (in hints, and in "next:" lines) name director: with the --home and the
// --store this command used when they are not the defaults, so that a pasted
// command acts on the same home and store. Without them `director catalog
// rebuild` after `director --home /srv/d --store s3://b …` rebuilt
// ~/.director's catalog from ~/.director/snapshots.
//
// A home or store that came from DIRECTOR_HOME or DIRECTOR_STORE rather than
// from a flag is named too: a hint is often read where those variables are
// not set (a cron job's mail, a systemd journal, an agent reading --json, a
// log pasted into a ticket), and naming a flag whose variable is set changes
// nothing, while leaving it out makes the command act on ~/.director.
//
// The packages that write hints know nothing of this: they write a command
// as `director ARGS`, in backticks (errcode's doc), and every place that
// prints a hint passes it through hint, once, where the flags are known.
// Credentials never appear: the store is named by its String(), which has
// none, and the AWS and Supabase keys come from the environment or flags
// the person gives again.
type invocation struct {
	home  string // the --home to name, "" for the default home
	store string // the --store to name, without credentials; "" for the default store
}

// newInvocation decides, from the global flags (or their environment
// variables), how this command's hints name director. It opens the store
// only to name it as its String() does (an absolute path, no credentials);
// a store URL that does not open is named redacted, so that a hint given
// before the store was opened (a damaged catalog is found first) still
// names it, and its command fails rather than acting on the default store.
func newInvocation(c *cli.Context, g *globals) invocation {
	var inv invocation
	if g.Home != defaultHome() {
		inv.home = g.Home
	}
	if g.Store == "" {
		return inv
	}
	name := storage.Redact(g.Store)
	if st, err := openStore(c.Context, c, g); err == nil {
		name = st.String()
	}
	if name != "file://"+filepath.ToSlash(filepath.Join(g.Home, "snapshots")) { // the store --home already names
		inv.store = name
	}
	return inv
}

// command is args as a command line to paste, "director [--home DIR]
// [--store URL] ARGS"; args is already quoted for the shell.
func (inv invocation) command(args string) string {
	return "director" + inv.flags(args) + " " + args
}

// flags are the global flags a command with args needs, each with a
// leading space: none that args names itself (a hint pointing at another
// store says `director profile snapshots NAME --store URL`).
func (inv invocation) flags(args string) string {
	var b strings.Builder
	for _, f := range []struct{ name, value string }{{"--home", inv.home}, {"--store", inv.store}} {
		if f.value == "" || namesFlag(args, f.name) {
			continue
		}
		b.WriteString(" " + f.name + " " + shellquote.Quote(f.value))
	}
	return b.String()
}

func namesFlag(args, name string) bool {
	for _, w := range strings.Fields(args) {
		if w == name || strings.HasPrefix(w, name+"=") {
			return true
		}
	}
	return false
}

// hint returns h with every command in it, written `director …` in
// backticks, naming director as inv does. Text outside backticks ("another
// director command") is left alone.
func (inv invocation) hint(h string) string {
	const mark = "`director"
	var b strings.Builder
	for {
		i := strings.Index(h, mark)
		if i < 0 {
			break
		}
		i += len(mark)
		b.WriteString(h[:i])
		h = h[i:]
		args, rest, closed := strings.Cut(h, "`")
		if !closed || (args != "" && args[0] != ' ') {
			continue // `directory`, or no closing backtick: not a command
		}
		b.WriteString(inv.flags(args))
		b.WriteString(args)
		b.WriteString("`")
		h = rest
	}
	b.WriteString(h)
	return b.String()
}

// hintAll rewrites, in place, every text of hs as hint does: the warnings
// of a snapshot give commands too.
func (inv invocation) hintAll(hs []string) {
	for i, h := range hs {
		hs[i] = inv.hint(h)
	}
}
