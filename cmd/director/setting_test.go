package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"director/errcode"
)

// allFlags returns the global flags and those of every command below cmds.
func allFlags(app *cli.App) []cli.Flag {
	flags := append([]cli.Flag{}, app.Flags...)
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			flags = append(flags, c.Flags...)
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
	return flags
}

// TestEmptyVariableIsUnset: every flag an environment variable can set
// takes that variable set to "" for unset: its default, and not IsSet (a
// --chrome that IsSet must answer). urfave/cli took an empty string value
// for a value: DIRECTOR_HOME= was a home of "", the working directory.
func TestEmptyVariableIsUnset(t *testing.T) {
	cliEnv(t)
	app := newApp(io.Discard, io.Discard)
	n := 0
	for _, fl := range allFlags(app) {
		env, ok := fl.(cli.DocGenerationFlag)
		if !ok || len(env.GetEnvVars()) == 0 {
			continue
		}
		name := fl.Names()[0]
		for _, v := range env.GetEnvVars() {
			t.Setenv(v, "")
		}
		switch f := fl.(type) {
		case *settingFlag:
			n++
			fs := flag.NewFlagSet("director", flag.ContinueOnError)
			if err := f.Apply(fs); err != nil {
				t.Fatalf("--%s: %v", name, err)
			}
			if got := fs.Lookup(name).Value.String(); got != f.Value {
				t.Errorf("--%s with %s empty is %q, want its default %q", name, f.EnvVars[0], got, f.Value)
			}
			if f.IsSet() {
				t.Errorf("--%s is set by an empty %s", name, f.EnvVars[0])
			}
		case *cli.StringFlag, *cli.StringSliceFlag, *cli.GenericFlag, *cli.PathFlag:
			t.Errorf("--%s is read from %v as it is, even empty: make it a setting", name, env.GetEnvVars())
		default:
			// Durations, numbers and booleans: urfave/cli reads an empty
			// variable as unset.
			fs := flag.NewFlagSet("director", flag.ContinueOnError)
			if err := fl.Apply(fs); err != nil {
				t.Errorf("--%s with %v empty: %v", name, env.GetEnvVars(), err)
			} else if fl.IsSet() {
				t.Errorf("--%s is set by an empty %v", name, env.GetEnvVars())
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d settings; the walk over the flags is broken", n)
	}
}

// TestEmptySettings runs director with its variables set to "": each is
// the default, as if unset (the home is $HOME/.director, not the working
// directory); an empty value given as a flag is refused and changes nothing.
func TestEmptySettings(t *testing.T) {
	cliEnv(t) // HOME is a temporary directory, DIRECTOR_HOME and DIRECTOR_STORE ""
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, v := range []string{"DIRECTOR_LOG_LEVEL", "CHROME_PATH", "DIRECTOR_CDP_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"SUPABASE_URL", "SUPABASE_SERVICE_KEY", "DIRECTOR_STORE_CALL_TIMEOUT", "DIRECTOR_STORE_IDLE_TIMEOUT", "DIRECTOR_AUDIT_KEEP"} {
		t.Setenv(v, "")
	}
	if code, _, errOut := runDirector(t, "profile", "create", "work"); code != 0 {
		t.Fatalf("profile create with the variables empty: exit %d: %s", code, errOut)
	}
	home := filepath.Join(os.Getenv("HOME"), ".director")
	if _, err := os.Stat(filepath.Join(home, "browser-profiles", "work")); err != nil {
		t.Errorf("DIRECTOR_HOME= is not the default home %s: %v", home, err)
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("DIRECTOR_HOME= wrote into the working directory: %v", left)
	}
	if code, _, errOut := runDirector(t, "profile", "snapshot", "work"); code != 0 {
		t.Fatalf("profile snapshot with the variables empty: exit %d: %s", code, errOut)
	}

	for _, args := range [][]string{
		{"--home", "", "profile", "create", "other"},
		{"--home=", "profile", "create", "other"},
		{"profile", "create", "other", "--store", ""},
		{"--log-level", "", "profile", "create", "other"},
		{"profile", "open", "other", "--headless", "--chrome", ""},
		{"--age-identity", "", "profile", "create", "other"},
	} {
		code, out, _ := runDirector(t, append([]string{"--json"}, args...)...)
		if code != errcode.ExitUsage || decodeJSON(t, out)["error"].(map[string]any)["code"] != string(errcode.InvalidInput) {
			t.Errorf("%q: exit %d %s, want invalid_input", args, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "browser-profiles", "other")); err == nil {
		t.Error("a command refused for an empty flag created its profile")
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("--home '' wrote into the working directory: %v", left)
	}
}

// TestDefaultHomeWithoutHOME: with HOME empty (or unset: a system service,
// `env -i`) the default home is .director in the user's home directory
// from the password database, not .director in the working directory.
func TestDefaultHomeWithoutHOME(t *testing.T) {
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Skipf("no home directory in the password database: %v", err)
	}
	t.Setenv("HOME", "")
	if got, want := defaultHome(), filepath.Join(u.HomeDir, ".director"); got != want {
		t.Errorf("default home with HOME empty: %q, want %q", got, want)
	}
}

// TestNoHomeAnywhere: for a user with no home directory anywhere (HOME
// unset and no entry in the password database, as a container's bare uid),
// version and help still work, and every command that reads a home is
// refused with a hint that says how to give one, writing nothing.
func TestNoHomeAnywhere(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	t.Setenv("DIRECTOR_HOME", "")
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"version"}, true},
		{[]string{"--json", "version"}, true},
		{[]string{"help"}, true},
		{[]string{"help", "profile"}, true},
		{[]string{"profile", "snapshot", "--help"}, true},
		{[]string{"profile", "-h", "restore"}, true},
		{[]string{"--json", "profile", "list"}, false},
		{[]string{"profile", "create", "work"}, false},
		{[]string{"catalog", "rebuild"}, false},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		app := newAppHome(&out, &errb, "")
		argv, _, err := interspersed(app, append([]string{"director"}, c.args...))
		if err == nil {
			err = app.RunContext(t.Context(), argv)
		}
		if c.ok {
			if err != nil || out.Len() == 0 {
				t.Errorf("%q with no home: %v, printed %q", c.args, err, out.String())
			}
			continue
		}
		if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(errcode.HintOf(err), "--home DIR or DIRECTOR_HOME") {
			t.Errorf("%q with no home: %v [%s], hint %q; want invalid_input naming --home", c.args, err, errcode.Of(err), errcode.HintOf(err))
		}
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("commands with no home wrote into the working directory: %v", left)
	}
}

// TestTildeNoShellExpanded: a path setting starting with a "~" that no
// shell expanded (an env file, a crontab) is refused, naming the setting
// and the full path to write, and nothing is made; before, it named a
// directory "~" under the working directory. version still works.
func TestTildeNoShellExpanded(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	other := withProfile(t) // a home with profile work, outside cwd (it sets HOME)
	home, _ := os.UserHomeDir()
	wf := writeWF(t, t.TempDir(), "shot.yaml", "name: shot\nprofile: null\nsteps:\n  - navigate: http://127.0.0.1:1/\n  - screenshot: a.png\n")
	for _, c := range []struct {
		name     string
		env      map[string]string
		args     []string
		source   string
		fullPath string
	}{
		{"DIRECTOR_HOME", map[string]string{"DIRECTOR_HOME": "~/dir"}, []string{"profile", "list"}, "DIRECTOR_HOME", filepath.Join(home, "dir")},
		{"--home=~", nil, []string{"--home=~/dir", "profile", "list"}, "--home", filepath.Join(home, "dir")},
		{"DIRECTOR_AGE_IDENTITY", map[string]string{"DIRECTOR_AGE_IDENTITY": "~/.config/k.txt"}, []string{"--home", other, "profile", "restore", "work", "latest"}, "DIRECTOR_AGE_IDENTITY", filepath.Join(home, ".config/k.txt")},
		{"DIRECTOR_AGE_IDENTITY, key recipient", map[string]string{"DIRECTOR_AGE_IDENTITY": "~/k.txt"}, []string{"--home", other, "key", "recipient"}, "DIRECTOR_AGE_IDENTITY", filepath.Join(home, "k.txt")},
		{"DIRECTOR_AGE_IDENTITY, key generate", map[string]string{"DIRECTOR_AGE_IDENTITY": "~/k.txt"}, []string{"--home", other, "key", "generate", "--out", filepath.Join(other, "new.txt")}, "DIRECTOR_AGE_IDENTITY", filepath.Join(home, "k.txt")},
		{"file://~ store", map[string]string{"DIRECTOR_STORE": "file://~/snaps"}, []string{"--home", other, "profile", "list"}, "DIRECTOR_STORE", "file://" + filepath.Join(home, "snaps")},
		{"recipients file", nil, []string{"--home", other, "--age-recipients", "~/r.txt", "profile", "snapshot", "work"}, "--age-recipients", filepath.Join(home, "r.txt")},
		// Paths a command writes to or reads, which bash leaves as they
		// are after "=" or in quotes: key generate --out=~/k2.txt wrote
		// a secret key to ./~/k2.txt, run --artifacts '~/shots' wrote
		// ./~/shots/a.png.
		{"key generate --out=~", nil, []string{"--home", other, "key", "generate", "--out=~/k2.txt"}, "--out", filepath.Join(home, "k2.txt")},
		{"key recipient ~FILE", nil, []string{"--home", other, "key", "recipient", "~/k.txt"}, "the FILE argument", filepath.Join(home, "k.txt")},
		{"run --artifacts ~", nil, []string{"--home", other, "run", wf, "--artifacts", "~/shots"}, "--artifacts", filepath.Join(home, "shots")},
		{"run ~FILE", nil, []string{"--home", other, "run", "~/x.yaml"}, "the workflow FILE", filepath.Join(home, "x.yaml")},
		{"restore --archive ~", nil, []string{"--home", other, "profile", "restore", "w2", "--archive", "~/t.age"}, "--archive", filepath.Join(home, "t.age")},
		{"CHROME_PATH", map[string]string{"CHROME_PATH": "~/bin/chrome"}, []string{"--home", other, "profile", "open", "work", "--headless"}, "CHROME_PATH", filepath.Join(home, "bin/chrome")},
		{"--chrome=~, run", nil, []string{"--home", other, "--chrome=~/bin/chrome", "run", wf}, "--chrome", filepath.Join(home, "bin/chrome")},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			code, out, _ := runDirector(t, append([]string{"--json"}, c.args...)...)
			e, _ := decodeJSON(t, out)["error"].(map[string]any)
			if code != errcode.ExitUsage || e["code"] != "invalid_input" || !strings.HasPrefix(e["message"].(string), c.source+" holds") ||
				!strings.Contains(e["hint"].(string), c.fullPath) {
				t.Fatalf("exit %d: %s; want invalid_input from %s naming %s", code, out, c.source, c.fullPath)
			}
			if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
				t.Fatalf("the refused command made %v in the working directory", entries)
			}
			if strings.Contains(e["hint"].(string), "~") {
				t.Errorf("the hint gives a ~ path: %s", e["hint"])
			}
			cmd := slices.IndexFunc(c.args, func(a string) bool { return a == "profile" || a == "key" || a == "run" })
			if code, _, errOut := runDirector(t, append(slices.Clone(c.args[:cmd]), "version")...); code != 0 {
				t.Fatalf("version with the same settings: exit %d %s", code, errOut)
			}
		})
	}
	// profile restore asks the Chrome version a snapshot needs, which
	// --force skips: its hint says so.
	t.Run("CHROME_PATH, restore", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(other, "browser-profiles", "work", "Last Version"), []byte("120.0.6099.71"), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := runDirector(t, "--home", other, "profile", "snapshot", "work"); code != 0 {
			t.Fatalf("snapshot: exit %d %s", code, errOut)
		}
		t.Setenv("CHROME_PATH", "~/bin/chrome")
		code, out, _ := runDirector(t, "--json", "--home", other, "profile", "restore", "work", "latest")
		e, _ := decodeJSON(t, out)["error"].(map[string]any)
		if code != errcode.ExitUsage || e["code"] != "invalid_input" || !strings.HasPrefix(e["message"].(string), "CHROME_PATH holds") ||
			!strings.Contains(e["hint"].(string), filepath.Join(home, "bin/chrome")) || !strings.Contains(e["hint"].(string), "--force") {
			t.Fatalf("exit %d: %s; want invalid_input from CHROME_PATH, with the full path and --force in the hint", code, out)
		}
	})
	// A command uses only its own settings: profile list reads no key
	// and launches no Chrome.
	t.Setenv("DIRECTOR_AGE_IDENTITY", "~/k.txt")
	t.Setenv("CHROME_PATH", "~/bin/chrome")
	if code, out, errOut := runDirector(t, "--home", other, "profile", "list"); code != 0 {
		t.Fatalf("profile list with key and Chrome settings it does not use: exit %d %s %s", code, out, errOut)
	}
}
