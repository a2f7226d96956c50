package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"director/errcode"
)

// textErrorRE is the one line a failing command prints on stderr.
var textErrorRE = regexp.MustCompile(`^director: (.+) \[([a-z_]+)\]; hint: (.+)\n$`)

// withProfile returns a home holding profile "work" with one file in it.
func withProfile(t *testing.T) string {
	t.Helper()
	home := cliEnv(t)
	if code, _, errOut := runDirector(t, "--home", home, "profile", "create", "work"); code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	prefs := filepath.Join(home, "browser-profiles", "work", "Default", "Preferences")
	if err := os.MkdirAll(filepath.Dir(prefs), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefs, []byte(`{"v":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// wantUsageError runs args under --json and in text mode and checks both
// report one invalid_input error, exit 2, whose message and hint hold the
// given strings.
func wantUsageError(t *testing.T, home string, args []string, msgHas, hintHas string) {
	t.Helper()
	code, out, errOut := runDirector(t, append([]string{"--home", home, "--json"}, args...)...)
	if code != 2 {
		t.Errorf("--json: exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	m := decodeJSON(t, out)
	e, _ := m["error"].(map[string]any)
	msg, _ := e["message"].(string)
	hint, _ := e["hint"].(string)
	if m["status"] != "error" || e["code"] != "invalid_input" || !strings.Contains(msg, msgHas) || hint == "" || !strings.Contains(hint, hintHas) {
		t.Errorf("--json: got %s, want invalid_input, message with %q, hint with %q", out, msgHas, hintHas)
	}
	code, out, errOut = runDirector(t, append([]string{"--home", home}, args...)...)
	if code != 2 || out != "" {
		t.Errorf("text: exit %d, stdout %q, want 2 and nothing on stdout", code, out)
	}
	sm := textErrorRE.FindStringSubmatch(errOut)
	if sm == nil || sm[2] != "invalid_input" || !strings.Contains(sm[1], msgHas) || !strings.Contains(sm[3], hintHas) {
		t.Errorf("text: stderr %q, want one line with %q, [invalid_input] and a hint with %q", errOut, msgHas, hintHas)
	}
}

// A flag that needs a value, given last without one, is a usage error naming
// the flag; it never takes the "--" that separates the positional arguments.
func TestFlagWithoutValue(t *testing.T) {
	home := withProfile(t)
	tests := []struct {
		args     []string
		flag     string
		hintHas  string
		noSnapIn bool
	}{
		{[]string{"profile", "snapshot", "work", "--note"}, "--note", "--note TEXT", true},
		{[]string{"profile", "snapshot", "work", "--exclude"}, "--exclude", "--exclude GLOB", true},
		{[]string{"profile", "snapshot", "work", "--note", "x", "--include"}, "--include", "--include GLOB", true},
		{[]string{"profile", "snapshot", "--note"}, "--note", "--note TEXT", true},
		{[]string{"profile", "restore", "work", "--archive"}, "--archive", "--archive FILE", false},
		{[]string{"profile", "prune", "work", "--keep-last"}, "--keep-last", "--keep-last N", false},
		{[]string{"profile", "list", "--store"}, "--store", "--store URL", false},
		{[]string{"key", "generate", "--out"}, "--out", "--out FILE", false},
		{[]string{"audit", "--limit"}, "--limit", "--limit N", false},
		{[]string{"profile", "list", "--home"}, "--home", "--home DIR", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			wantUsageError(t, home, tt.args, "flag "+tt.flag+" needs a value", tt.hintHas)
		})
	}
	code, out, _ := runDirector(t, "--home", home, "--json", "profile", "snapshots", "work")
	if snaps, _ := decodeJSON(t, out)["snapshots"].([]any); code != 0 || len(snaps) != 0 {
		t.Errorf("a snapshot was taken: %s", out)
	}
	// A global flag without its value, before any command.
	code, _, errOut := runDirector(t, "--home")
	if code != 2 || !textErrorRE.MatchString(errOut) || !strings.Contains(errOut, "flag --home needs a value") {
		t.Errorf("director --home: exit %d, %q", code, errOut)
	}
}

// A flag that takes a value, followed by another flag of the line, is a
// usage error: `--note --json` would note the snapshot "--json" and print
// text where a cron job's parser wants JSON. Nothing is snapshotted. Values
// that only start with "-" are values.
func TestFlagFollowedByFlag(t *testing.T) {
	home := withProfile(t)
	for _, tt := range []struct {
		args    []string
		msgHas  string
		hintHas string
	}{
		{[]string{"profile", "snapshot", "work", "--note", "--json"}, "flag --note is followed by the flag --json", "--note=--json"},
		{[]string{"profile", "snapshot", "work", "--note", "-q"}, "flag --note is followed by the flag -q", "--note=-q"},
		{[]string{"profile", "snapshot", "work", "--exclude", "--include", "x"}, "flag --exclude is followed by the flag --include", "--exclude GLOB"},
		{[]string{"--store", "--json", "profile", "list"}, "flag --store is followed by the flag --json", "--store=--json"},
		{[]string{"profile", "list", "--log-level", "--quiet"}, "flag --log-level is followed by the flag --quiet", "--log-level=--quiet"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if !slices.Contains(tt.args, "--json") {
				wantUsageError(t, home, tt.args, tt.msgHas, tt.hintHas)
				return
			}
			// The --json the flag would have eaten still asks for
			// the error as JSON.
			code, out, errOut := runDirector(t, append([]string{"--home", home}, tt.args...)...)
			e, _ := decodeJSON(t, out)["error"].(map[string]any)
			if msg, _ := e["message"].(string); code != 2 || e["code"] != "invalid_input" || !strings.Contains(msg, tt.msgHas) || errOut != "" {
				t.Errorf("exit %d, stdout %s, stderr %q: want invalid_input with %q", code, out, errOut, tt.msgHas)
			}
			if hint, _ := e["hint"].(string); !strings.Contains(hint, tt.hintHas) {
				t.Errorf("hint %q: want %q", hint, tt.hintHas)
			}
		})
	}
	if code, out, _ := runDirector(t, "--home", home, "--json", "profile", "snapshots", "work"); code != 0 || strings.Contains(out, `"id"`) {
		t.Fatalf("a snapshot was taken: %d %s", code, out)
	}
	// Values that start with "-" but name no flag are taken, as is one
	// given with "=".
	for _, args := range [][]string{{"--note", "-x"}, {"--note=--json"}} {
		code, out, errOut := runDirector(t, append([]string{"--home", home, "--json", "profile", "snapshot", "work"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errOut)
		}
		want := strings.TrimPrefix(args[len(args)-1], "--note=")
		snap, _ := decodeJSON(t, out)["snapshot"].(map[string]any)
		if note, _ := snap["note"].(string); note != want {
			t.Errorf("%v: note %q, want %q: %s", args, note, want, out)
		}
	}
}

// A line that stops at a command group, or names no command at all, is a
// usage error listing the commands, not a help page with exit 0: a cron
// line that lost its subcommand must not succeed. Help still works.
func TestCommandGroupNeedsCommand(t *testing.T) {
	home := cliEnv(t)
	for _, tt := range []struct {
		args   []string
		msgHas string
	}{
		{[]string{"profile"}, `missing command after "director profile": one of create, list, path, delete, snapshot, restore, snapshots, verify, prune, open`},
		{[]string{"catalog"}, `missing command after "director catalog": one of rebuild`},
		{[]string{"key"}, `missing command after "director key": one of generate, recipient`},
		{[]string{"store"}, `missing command after "director store": one of check`},
		{[]string{"--quiet"}, `missing command after "director": one of profile, catalog, run, audit, key, store, version`},
		{[]string{"profile", "--store", "file:///tmp/x"}, `missing command after "director profile"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			wantUsageError(t, home, tt.args, tt.msgHas, "--help` for what each does")
		})
	}
	if code, out, errOut := runDirector(t); code != 2 || out != "" || !strings.Contains(errOut, `missing command after "director"`) {
		t.Errorf("director alone: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A flag the line cannot have is said as such, not as a missing command.
	for _, tt := range []struct {
		args         []string
		msgHas, hint string
	}{
		{[]string{"--bogus"}, "unknown flag --bogus", "run `director --help`"},
		{[]string{"catalog", "--allow-empty-store"}, "unknown flag --allow-empty-store", "catalog --help`"},
		{[]string{"--version"}, "unknown flag --version", "`director version`"},
	} {
		wantUsageError(t, home, tt.args, tt.msgHas, tt.hint)
	}
	// The shell's completion gets the commands, as urfave/cli gives them.
	// It reads os.Args, so director's main runs in a process of its own.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--generate-bash-completion"}, "profile\ncatalog\n"},
		{[]string{"profile", "--generate-bash-completion"}, "create\nlist\n"},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"--home", home}, tt.args...)...)
		cmd.Env = append(os.Environ(), "DIRECTOR_TEST_MAIN=1")
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), tt.want) {
			t.Errorf("%v: %v, stdout %q", tt.args, err, out)
		}
	}
	for _, args := range [][]string{{"profile", "--help"}, {"profile", "-h"}, {"help", "profile"}, {"--json", "profile", "--help"}, {"--help"}} {
		code, out, errOut := runDirector(t, append([]string{"--home", home}, args...)...)
		if code != 0 || !strings.Contains(out, "USAGE:") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want the help page", args, code, out, errOut)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("a usage error or help made the home %s", home)
	}
}

// TestUsageHintsNameTheHome: the `director … --help` of a line refused
// before a command runs (no command, a flag without its value) names the
// --home and --store the line gives, by flag or variable, as the hint of
// an unknown command does (README: hints can be pasted). `director --home
// DIR` alone said `director --help`.
func TestUsageHintsNameTheHome(t *testing.T) {
	home := cliEnv(t)
	store := "file://" + filepath.Join(t.TempDir(), "store")
	for _, c := range []struct {
		name string
		env  bool // DIRECTOR_HOME, not --home
		args []string
		want string // the hint's command after its global flags
	}{
		{"no command", false, nil, "--help`"},
		{"no command, by DIRECTOR_HOME", true, nil, "--help`"},
		{"a group without its command", false, []string{"profile"}, "profile --help`"},
		{"a group without its command, --home after it", false, []string{"profile", "--home", home}, "profile --help`"},
		{"a flag without its value", false, []string{"profile", "snapshot", "work", "--note"}, "profile snapshot --help`"},
		{"an unknown command", false, []string{"profil"}, "--help`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"--store", store}
			if c.env {
				t.Setenv("DIRECTOR_HOME", home)
			} else if !slices.Contains(c.args, "--home") {
				args = append(args, "--home", home)
			}
			code, _, errOut := runDirector(t, append(args, c.args...)...)
			sm := textErrorRE.FindStringSubmatch(errOut)
			want := "`director --home " + home + " --store " + store + " " + c.want
			if code != errcode.ExitUsage || sm == nil || sm[2] != "invalid_input" || !strings.Contains(sm[3], want) {
				t.Errorf("exit %d, stderr %q; want invalid_input with %s in its hint", code, errOut, want)
			}
		})
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("a usage error made the home %s", home)
	}
}

// --help or -h anywhere on the line shows that command's help and exits 0.
func TestHelpAnywhere(t *testing.T) {
	home := cliEnv(t)
	tests := []struct {
		args  []string
		usage string
	}{
		{[]string{"profile", "delete", "work", "--help"}, "director profile delete [command options] NAME"},
		{[]string{"profile", "delete", "--help", "work"}, "director profile delete [command options] NAME"},
		{[]string{"profile", "snapshot", "work", "-h"}, "director profile snapshot [command options] NAME"},
		{[]string{"profile", "snapshot", "work", "--note", "x", "--help"}, "director profile snapshot [command options] NAME"},
		{[]string{"profile", "restore", "work", "latest", "--archive", "x", "--help"}, "director profile restore [command options] NAME [ID|latest]"},
		{[]string{"profile", "prune", "work", "--help"}, "director profile prune [command options] NAME"},
		{[]string{"--json", "profile", "list", "extra", "-h"}, "director profile list [command options]"},
		{[]string{"run", "wf.yaml", "--help"}, "director run [command options] FILE"},
		{[]string{"key", "recipient", "a", "b", "--help"}, "director key recipient [command options] [FILE]"},
		{[]string{"profile", "--help"}, "director profile [command options]"},
		{[]string{"profile", "bogus", "--help"}, "director profile [command options]"},
		{[]string{"help", "profile", "snapshot"}, "director profile snapshot [command options] NAME"},
		{[]string{"-h", "profile", "snapshot"}, "director profile snapshot [command options] NAME"},
		{[]string{"--json", "help", "profile", "prune"}, "director profile prune [command options] NAME"},
		{[]string{"help", "profile"}, "COMMANDS:\n   create"},
		{[]string{"help", "catalog"}, "COMMANDS:\n   rebuild"},
		{[]string{"help"}, "director [global options] command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runDirector(t, append([]string{"--home", home}, tt.args...)...)
			if code != 0 || errOut != "" || !strings.Contains(out, tt.usage) {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 0 and the help with %q", code, errOut, out, tt.usage)
			}
		})
	}
	// --help where a flag's value belongs asks for help and does nothing
	// else; a value attached with "=" is a value.
	h := withProfile(t)
	for _, args := range [][]string{{"--note", "-h"}, {"--note", "--help"}, {"--exclude", "--help"}} {
		code, out, errOut := runDirector(t, append([]string{"--home", h, "profile", "snapshot", "work"}, args...)...)
		if code != 0 || errOut != "" || !strings.Contains(out, "director profile snapshot [command options] NAME") {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s\nwant the help", args, code, errOut, out)
		}
	}
	if code, out, errOut := runDirector(t, "--home", h, "--store", "--help", "profile", "list"); code != 0 || errOut != "" || !strings.Contains(out, "director profile list") {
		t.Errorf("--store --help: exit %d, stderr %q, stdout:\n%s\nwant the help", code, errOut, out)
	}
	if _, out, _ := runDirector(t, "--home", h, "--json", "profile", "snapshots", "work"); strings.Contains(out, `"id"`) {
		t.Fatalf("a help request took a snapshot: %s", out)
	}
	code, out, errOut := runDirector(t, "--home", h, "--json", "profile", "snapshot", "work", "--note=-h")
	if code != 0 {
		t.Fatalf("--note=-h: exit %d %s %s", code, out, errOut)
	}
	if _, out, _ := runDirector(t, "--home", h, "--json", "profile", "snapshots", "work"); !strings.Contains(out, `"note": "-h"`) {
		t.Fatalf("--note=-h did not note -h: %s", out)
	}
	// "h" and "help" are profile names, not help topics, for a command
	// that takes a NAME.
	if code, _, errOut := runDirector(t, "--home", h, "profile", "create", "h"); code != 0 {
		t.Errorf("profile create h: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(h, "browser-profiles", "h")); err != nil {
		t.Errorf("profile create h did not create it: %v", err)
	}
}

// Every command with a fixed number of arguments rejects extra ones.
func TestExtraArguments(t *testing.T) {
	home := withProfile(t)
	tests := []struct {
		args  []string
		usage string
	}{
		{[]string{"profile", "snapshots", "a", "b"}, "usage: director profile snapshots [command options] [NAME]"},
		{[]string{"profile", "list", "extra"}, "usage: director profile list [command options]"},
		{[]string{"catalog", "rebuild", "extra"}, "usage: director catalog rebuild [command options]"},
		{[]string{"profile", "create", "a", "b"}, "usage: director profile create [command options] NAME"},
		{[]string{"profile", "path", "work", "b"}, "usage: director profile path [command options] NAME"},
		{[]string{"profile", "delete", "work", "b"}, "usage: director profile delete [command options] NAME"},
		{[]string{"profile", "snapshot", "work", "b", "--note", "x"}, "usage: director profile snapshot [command options] NAME"},
		{[]string{"profile", "restore", "work", "latest", "c"}, "usage: director profile restore [command options] NAME [ID|latest]"},
		{[]string{"profile", "verify", "a", "b", "c"}, "usage: director profile verify [command options] NAME [ID|latest]"},
		{[]string{"profile", "prune", "work", "b", "--keep-last", "1"}, "usage: director profile prune [command options] NAME"},
		{[]string{"profile", "open", "work", "b", "--headless"}, "usage: director profile open [command options] NAME"},
		{[]string{"run", "a.yaml", "b.yaml"}, "usage: director run [command options] FILE"},
		{[]string{"audit", "x"}, "usage: director audit [command options]"},
		{[]string{"key", "generate", "x"}, "usage: director key generate [command options]"},
		{[]string{"key", "recipient", "a", "b"}, "usage: director key recipient [command options] [FILE]"},
		{[]string{"store", "check", "x"}, "usage: director store check [command options]"},
		{[]string{"profile", "list", "--", "extra"}, "usage: director profile list [command options]"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			wantUsageError(t, home, tt.args, "argument", tt.usage)
		})
	}
	// Nothing was snapshotted, deleted or pruned on the way.
	if _, err := os.Stat(filepath.Join(home, "browser-profiles", "work", "Default", "Preferences")); err != nil {
		t.Errorf("profile touched: %v", err)
	}
}

// Every leaf command states its arguments in ArgsUsage, which is what the
// arity check enforces; a shape argsRange cannot read fails here.
func TestArgsRange(t *testing.T) {
	tests := []struct {
		usage    string
		min, max int
	}{
		{"", 0, 0},
		{"NAME", 1, 1},
		{"[NAME]", 0, 1},
		{"NAME [ID|latest]", 1, 2},
		{"NAME [ID | latest]", 1, 2},
		{"FILE...", 1, -1},
		{"[FILE]…", 0, -1},
		{"SRC DST", 2, 2},
	}
	for _, tt := range tests {
		if lo, hi := argsRange(tt.usage); lo != tt.min || hi != tt.max {
			t.Errorf("argsRange(%q) = %d, %d, want %d, %d", tt.usage, lo, hi, tt.min, tt.max)
		}
	}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if len(c.Subcommands) > 0 {
				walk(prefix+" "+c.Name, c.Subcommands)
				continue
			}
			if c.Before == nil {
				t.Errorf("%s %s: no argument check", prefix, c.Name)
			}
			if strings.ContainsAny(c.ArgsUsage, "{}<>") {
				t.Errorf("%s %s: ArgsUsage %q uses a shape argsRange does not read", prefix, c.Name, c.ArgsUsage)
			}
		}
	}
	walk("director", newApp(nil, nil).Commands)
}

// Every error path reachable without Chrome or a network carries a stable
// code and a hint, as one JSON object under --json and as one line on stderr
// otherwise.
func TestEveryErrorHasCodeAndHint(t *testing.T) {
	home := withProfile(t)
	dir := t.TempDir()
	badWF := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badWF, []byte("name: x\nprofile: p\nsteps:\n  - clik: '#a'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(dir, "pub.txt")
	if err := os.WriteFile(pub, []byte("age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "archive.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A snapshot from a Chrome newer than any installed one.
	if err := os.WriteFile(filepath.Join(home, "browser-profiles", "work", "Last Version"), []byte("999.0.0.0"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runDirector(t, "--home", home, "profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	tests := []struct {
		name string
		args []string
		exit int
		code string
	}{
		{"bad profile name", []string{"profile", "create", "Bad"}, 2, "invalid_input"},
		{"existing profile", []string{"profile", "create", "work"}, 2, "invalid_input"},
		{"missing NAME", []string{"profile", "snapshot"}, 2, "invalid_input"},
		{"extra argument", []string{"profile", "list", "extra"}, 2, "invalid_input"},
		{"flag without value", []string{"profile", "snapshot", "work", "--note"}, 2, "invalid_input"},
		{"unknown flag", []string{"profile", "list", "--nope"}, 2, "invalid_input"},
		{"bad flag value", []string{"profile", "prune", "work", "--keep-last", "many"}, 2, "invalid_input"},
		{"unknown command", []string{"bogus"}, 2, "invalid_input"},
		{"unknown subcommand", []string{"profile", "bogus"}, 2, "invalid_input"},
		{"bad log level", []string{"--log-level", "loud", "profile", "list"}, 2, "invalid_input"},
		{"store idle timeout 0", []string{"--store-idle-timeout", "0s", "profile", "list"}, 2, "invalid_input"},
		{"negative store call timeout", []string{"profile", "list", "--store-call-timeout=-1s"}, 2, "invalid_input"},
		{"missing profile", []string{"profile", "snapshot", "ghost"}, 1, "profile_not_found"},
		{"delete missing profile", []string{"profile", "delete", "ghost"}, 1, "profile_not_found"},
		{"no snapshot", []string{"profile", "restore", "ghost"}, 1, "snapshot_not_found"},
		{"unknown snapshot id", []string{"profile", "verify", "work", "work-20000101T000000Z-aaaa"}, 1, "snapshot_not_found"},
		{"ID and --archive", []string{"profile", "restore", "work", "latest", "--archive", "x.tar.zst"}, 2, "invalid_input"},
		{"missing --archive file", []string{"profile", "restore", "work", "--archive", filepath.Join(dir, "none.tar.zst")}, 1, "snapshot_not_found"},
		{"not an archive", []string{"profile", "restore", "work", "--archive", badWF}, 1, "snapshot_corrupt"},
		{"--archive is a directory", []string{"profile", "restore", "work", "--archive", dir}, 2, "invalid_input"},
		{"--archive is a fifo", []string{"profile", "restore", "work", "--archive", fifo}, 2, "invalid_input"},
		{"snapshot of a newer Chrome", []string{"profile", "restore", "work", "latest"}, 2, "invalid_input"},
		{"--chrome that does not run", []string{"profile", "restore", "work", "latest", "--chrome", filepath.Join(dir, "no-chrome")}, 2, "invalid_input"},
		{"--max-size 0", []string{"profile", "snapshot", "work", "--max-size", "0"}, 2, "invalid_input"},
		{"verify too many", []string{"profile", "verify", "a", "b", "c"}, 2, "invalid_input"},
		{"prune without --keep-last", []string{"profile", "prune", "work"}, 2, "invalid_input"},
		{"prune without --keep-last or NAME", []string{"profile", "prune"}, 2, "invalid_input"},
		{"prune --keep-last 0", []string{"profile", "prune", "work", "--keep-last", "0"}, 2, "invalid_input"},
		{"prune --keep-within in days", []string{"profile", "prune", "work", "--keep-last", "1", "--keep-within", "7d"}, 2, "invalid_input"},
		{"prune --keep-within negative", []string{"profile", "prune", "work", "--keep-last", "1", "--keep-within=-5h"}, 2, "invalid_input"},
		{"prune of a missing profile", []string{"profile", "prune", "ghost", "--keep-last", "1"}, 1, "profile_not_found"},
		{"bad exclude glob", []string{"profile", "snapshot", "work", "--exclude", "["}, 2, "invalid_input"},
		{"bad store URL", []string{"--store", "ftp://x", "profile", "list"}, 2, "invalid_input"},
		{"no workflow file", []string{"run"}, 2, "invalid_input"},
		{"missing workflow", []string{"run", filepath.Join(dir, "none.yaml")}, 2, "invalid_input"},
		{"invalid workflow", []string{"run", badWF}, 2, "invalid_action"},
		{"headless and headed", []string{"run", badWF, "--headless", "--headed"}, 2, "invalid_input"},
		{"bad --var", []string{"run", badWF, "--var", "novalue"}, 2, "invalid_input"},
		{"audit --limit -1", []string{"audit", "--limit", "-1"}, 2, "invalid_input"},
		{"key recipient without identity", []string{"key", "recipient"}, 2, "invalid_input"},
		{"key recipient of public keys", []string{"key", "recipient", pub}, 2, "invalid_input"},
		{"bad age recipient", []string{"--age-recipients", "age1nope", "profile", "snapshot", "work"}, 2, "invalid_input"},
		{"store check extra", []string{"store", "check", "x"}, 2, "invalid_input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runDirector(t, append([]string{"--home", home, "--json"}, tt.args...)...)
			m := decodeJSON(t, out) // the whole of stdout is one object
			e, _ := m["error"].(map[string]any)
			hint, _ := e["hint"].(string)
			if code != tt.exit || m["status"] != "error" || e["code"] != tt.code || strings.TrimSpace(hint) == "" {
				t.Errorf("--json: exit %d, %s\nwant exit %d, code %s and a hint (stderr %q)", code, out, tt.exit, tt.code, errOut)
			}
			// The error's own hint, not the code's fallback.
			if hint == defaultHints[errcode.Code(tt.code)] {
				t.Errorf("--json: %s\nhas only the default hint of %s", out, tt.code)
			}
			code, out, errOut = runDirector(t, append([]string{"--home", home}, tt.args...)...)
			sm := textErrorRE.FindStringSubmatch(errOut)
			if code != tt.exit || out != "" || sm == nil || sm[2] != tt.code {
				t.Errorf("text: exit %d, stdout %q, stderr %q\nwant exit %d and one line `director: MESSAGE [%s]; hint: HINT`", code, out, errOut, tt.exit, tt.code)
			}
		})
	}
}

// Global flags may follow the command; given twice, the last one wins, as
// everywhere else on a command line.
func TestGlobalFlagsAnywhere(t *testing.T) {
	home := cliEnv(t)
	want := filepath.Join(home, "browser-profiles", "work")
	if err := os.MkdirAll(want, 0o700); err != nil { // profile path needs the profile
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--home", home, "profile", "path", "work"},
		{"profile", "path", "work", "--home", home},
		{"profile", "--home", home, "path", "work"},
		{"--home", filepath.Join(home, "other"), "profile", "path", "work", "--home", home},
	} {
		code, out, errOut := runDirector(t, args...)
		if code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("%q: exit %d, %q %q, want %s", args, code, out, errOut, want)
		}
	}
	code, out, errOut := runDirector(t, "--home", home, "profile", "--json", "list")
	if code != 0 || decodeJSON(t, out)["status"] != "ok" {
		t.Errorf("profile --json list: exit %d %s %s", code, out, errOut)
	}
}

// Every spelling of a true --json that urfave/cli accepts gives JSON, errors
// included; a false one gives text.
func TestJSONSpellings(t *testing.T) {
	home := cliEnv(t)
	for _, tt := range []struct {
		flag string
		json bool
	}{
		{"--json", true}, {"-json", true}, {"--json=true", true}, {"--json=1", true}, {"--json=t", true},
		{"-json=TRUE", true}, {"--json=false", false}, {"--json=0", false},
	} {
		t.Run(tt.flag, func(t *testing.T) {
			code, out, errOut := runDirector(t, "--home", home, tt.flag, "profile", "create", "Bad")
			if code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			if tt.json {
				if m := decodeJSON(t, out); m["status"] != "error" || errOut != "" {
					t.Errorf("stdout %q, stderr %q; want one JSON error object", out, errOut)
				}
			} else if out != "" || textErrorRE.FindStringSubmatch(errOut) == nil {
				t.Errorf("stdout %q, stderr %q; want a text error", out, errOut)
			}
		})
	}
}

// --quiet prints nothing but errors: warnings are logged only when
// --log-level asks for them.
func TestQuietSilencesWarnings(t *testing.T) {
	home := cliEnv(t)
	for _, tt := range []struct {
		args []string
		warn bool
	}{
		{nil, true},
		{[]string{"--quiet"}, false},
		{[]string{"-q"}, false},
		{[]string{"--quiet", "--log-level", "warn"}, true},
		{[]string{"--log-level", "error"}, false},
	} {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			app := newApp(io.Discard, io.Discard)
			args := append(append([]string{"director", "--home", home}, tt.args...), "profile", "path", "x")
			_ = app.RunContext(context.Background(), args)
			g := app.Metadata["globals"].(*globals)
			if got := g.Log.Enabled(context.Background(), slog.LevelWarn); got != tt.warn {
				t.Errorf("warnings logged: %v, want %v", got, tt.warn)
			}
		})
	}
}

// A command stopped by a signal says so: code interrupted, exit 1, and no
// hint to report a bug.
func TestInterruptedCommand(t *testing.T) {
	home := withProfile(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"director", "--home", home, "--json", "profile", "snapshot", "work"}, &out, &errb)
	m := decodeJSON(t, out.String())
	e, _ := m["error"].(map[string]any)
	if code != 1 || e["code"] != string(errcode.Interrupted) || e["hint"] != defaultHints[errcode.Interrupted] {
		t.Errorf("exit %d, %s; want exit 1 and code %s with its hint", code, out.String(), errcode.Interrupted)
	}
	if code, _, errOut := runDirector(t, "--home", home, "profile", "snapshots", "work"); code != 0 || errOut != "" {
		t.Errorf("after the interrupted snapshot: exit %d %s", code, errOut)
	}
}

// A value that does not parse, from a flag or from its environment
// variable, is one invalid_input line that names where it came from and
// what it should look like, not Go's parser ("strconv.ParseInt: parsing").
func TestBadValueErrors(t *testing.T) {
	home := withProfile(t)
	wf := filepath.Join(t.TempDir(), "wf.yaml")
	if err := os.WriteFile(wf, []byte("name: x\nsteps:\n  - navigate: http://127.0.0.1:1/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env, val string
		args     []string
		msgHas   string
		hintHas  string
	}{
		{"DIRECTOR_AUDIT_KEEP", "abc", []string{"run", wf}, `invalid DIRECTOR_AUDIT_KEEP: "abc" is not a whole number`, "DIRECTOR_AUDIT_KEEP sets --keep"},
		{"", "", []string{"run", wf, "--close-timeout", "0s"}, "--close-timeout must be positive, not 0s", "for example --close-timeout 30s"},
		{"DIRECTOR_CLOSE_TIMEOUT", "-5s", []string{"profile", "open", "work", "--headless"}, "--close-timeout must be positive, not -5s", "DIRECTOR_CLOSE_TIMEOUT sets it too"},
		{"DIRECTOR_CLOSE_TIMEOUT", "abc", []string{"run", wf}, `invalid DIRECTOR_CLOSE_TIMEOUT: "abc" is not a duration`, "DIRECTOR_CLOSE_TIMEOUT sets --close-timeout"},
		{"DIRECTOR_STORE_CALL_TIMEOUT", "abc", []string{"profile", "list"}, `invalid DIRECTOR_STORE_CALL_TIMEOUT: "abc" is not a duration`, "there is no day unit"},
		{"DIRECTOR_STORE_IDLE_TIMEOUT", "7d", []string{"profile", "list"}, `invalid DIRECTOR_STORE_IDLE_TIMEOUT: "7d" is not a duration`, "(7 days is 168h)"},
		{"DIRECTOR_LOG_LEVEL", "loud", []string{"profile", "list"}, `invalid DIRECTOR_LOG_LEVEL "loud"`, "debug, info, warn or error"},
		{"", "", []string{"--log-level", "loud", "profile", "list"}, `invalid --log-level "loud"`, "debug, info, warn or error"},
		{"", "", []string{"audit", "--limit", "x"}, `invalid value "x" for flag --limit`, "give a whole number"},
		{"", "", []string{"store", "check", "--timeout", "5"}, `invalid value "5" for flag --timeout`, "a duration is a number with a unit"},
		{"", "", []string{"profile", "prune", "work", "--keep-last", "0"}, "--keep-last must be at least 1: the newest snapshot is never pruned", "profile delete work --with-snapshots`"},
		// urfave/cli reads whole numbers in base 0: 0x10 was 16, 010 was 8.
		{"", "", []string{"profile", "prune", "work", "--keep-last", "0x10"}, `invalid value "0x10" for flag --keep-last: not a whole number in decimal`, "such as --keep-last 5"},
		{"", "", []string{"profile", "prune", "work", "--keep-last=010"}, `invalid value "010" for flag --keep-last: not a whole number in decimal`, "without a leading 0 (octal)"},
		{"", "", []string{"profile", "prune", "work", "--keep-last", "1_0"}, `invalid value "1_0" for flag --keep-last`, "decimal digits"},
		{"", "", []string{"audit", "--limit", "0b11"}, `invalid value "0b11" for flag --limit`, "such as --limit 5"},
		{"", "", []string{"run", wf, "--keep", "0o7"}, `invalid value "0o7" for flag --keep`, "such as --keep 5"},
		// Read in base 10 (it was base 0: 0x10 was 16); --keep wins over it.
		{"DIRECTOR_AUDIT_KEEP", "0x10", []string{"run", wf}, `invalid DIRECTOR_AUDIT_KEEP: "0x10" is not a whole number`, "DIRECTOR_AUDIT_KEEP sets --keep"},
		// A duration too long for Go's is not a day-unit problem.
		{"", "", []string{"profile", "prune", "work", "--keep-last", "1", "--keep-within", "99999999h"}, `invalid value "99999999h" for flag --keep-within: longer than a duration can be`, "at most 2562047h"},
		{"DIRECTOR_STORE_CALL_TIMEOUT", "99999999h", []string{"profile", "list"}, `invalid DIRECTOR_STORE_CALL_TIMEOUT: "99999999h" is longer than a duration can be`, "at most 2562047h (about 292 years); give a shorter one, such as 8760h for a year (DIRECTOR_STORE_CALL_TIMEOUT sets --store-call-timeout)"},
	} {
		t.Run(strings.Join(append([]string{tt.env}, tt.args...), " "), func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(tt.env, tt.val)
			}
			wantUsageError(t, home, tt.args, tt.msgHas, tt.hintHas)
		})
	}
}
