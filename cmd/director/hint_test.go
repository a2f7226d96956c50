package main

import (
	"context"
	"database/sql"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"director/catalog"
	"director/errcode"
	"director/internal/shellquote"
)

// TestInvocationHint: every command a hint writes in backticks, and only
// those, names the invocation's home and store, once, and a command that
// names its own --store (or --home) keeps it.
func TestInvocationHint(t *testing.T) {
	inv := invocation{home: "/srv/my d", store: "s3://b/p?endpoint=h:9000"}
	const pre = "director --home '/srv/my d' --store 's3://b/p?endpoint=h:9000'"
	cases := []struct{ name, in, want string }{
		{"no command", "retry later", "retry later"},
		{"one", "run `director catalog rebuild`", "run `" + pre + " catalog rebuild`"},
		{"two, with placeholders", "`director profile snapshots NAME` or `director profile snapshot work`",
			"`" + pre + " profile snapshots NAME` or `" + pre + " profile snapshot work`"},
		{"its own --store", "see `director profile snapshots work --store URL`",
			"see `director --home '/srv/my d' profile snapshots work --store URL`"},
		{"already named", "`" + pre + " store check`", "`" + pre + " store check`"},
		{"prose", "another director command holds it; director store check", "another director command holds it; director store check"},
		{"another word", "`directory` and `director-x`", "`directory` and `director-x`"},
		{"no closing backtick", "run `director store check", "run `director store check"},
		{"bare", "`director`", "`" + pre + "`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := inv.hint(c.in); got != c.want {
				t.Errorf("hint(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if got := (invocation{}).hint(c.in); got != c.in {
				t.Errorf("the default invocation changed %q to %q", c.in, got)
			}
		})
	}
}

// noDirectorEnv isolates a test from the caller's director settings, as
// cliEnv does (DIRECTOR_HOME and DIRECTOR_STORE set empty, which is unset).
func noDirectorEnv(t *testing.T) {
	t.Helper()
	cliEnv(t)
}

// hintMode is how a test gives director its home and store.
type hintMode int

const (
	byDefault hintMode = iota // neither: ~/.director and its snapshots folder
	byFlags                   // --home and --store
	byEnv                     // DIRECTOR_HOME and DIRECTOR_STORE, as a crontab line sets them
)

func (m hintMode) String() string {
	return [...]string{"defaults", "flags", "environment"}[m]
}

// hintSetup is one director home and store for TestHintsNameHomeAndStore.
type hintSetup struct {
	home, storeDir string
	run            func(args ...string) (int, string, string) // director on that home and store, plus args
	prefix         string                                     // how every pasted command must name director
}

// The AWS keys every run is given by flag; no output may show them.
const (
	hintKeyID  = "AKIDHINTSECRET"
	hintSecret = "hintS3cr3t/x+y"
)

func newHintSetup(t *testing.T, mode hintMode, store string) hintSetup {
	t.Helper()
	noDirectorEnv(t)
	dir := t.TempDir()
	t.Setenv("HOME", dir) // the default home is $HOME/.director
	s := hintSetup{home: filepath.Join(dir, ".director"), storeDir: filepath.Join(dir, ".director", "snapshots"), prefix: "director"}
	global := []string{"--aws-access-key-id", hintKeyID, "--aws-secret-access-key", hintSecret}
	if mode != byDefault {
		s.home, s.storeDir = filepath.Join(dir, "my home"), filepath.Join(dir, "store")
		s.prefix += " --home " + shellquote.Quote(s.home)
	}
	storeURL, storeName := "file://"+s.storeDir, "file://"+s.storeDir
	if store != "" {
		storeURL, storeName = store, storeNameFor(store)
	}
	if mode != byDefault || store != "" {
		s.prefix += " --store " + shellquote.Quote(storeName)
	}
	switch {
	case mode == byEnv:
		t.Setenv("DIRECTOR_HOME", s.home)
		t.Setenv("DIRECTOR_STORE", storeURL)
	case mode == byFlags:
		global = append(global, "--home", s.home, "--store", storeURL)
	case store != "":
		global = append(global, "--store", storeURL)
	}
	s.run = func(args ...string) (int, string, string) {
		return runDirector(t, append(append([]string{}, global...), args...)...)
	}
	return s
}

// storeNameFor is how a hint names the store given as url: what its
// String() is, or, for one that does not open (keys in its URL), its
// redacted URL.
func storeNameFor(url string) string {
	if strings.Contains(url, "@") {
		return "s3://REDACTED@" + url[strings.LastIndex(url, "@")+1:]
	}
	return url
}

func (s hintSetup) must(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := s.run(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s %s", args, code, out, errOut)
	}
	return out
}

// snapshotWork creates profile work and snapshots it; it returns the
// snapshot's JSON object.
func (s hintSetup) snapshotWork(t *testing.T, args ...string) map[string]any {
	t.Helper()
	s.must(t, "profile", "create", "work")
	if err := os.WriteFile(filepath.Join(s.home, "browser-profiles", "work", "Local State"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, s.must(t, append([]string{"--json", "profile", "snapshot", "work"}, args...)...))["snapshot"].(map[string]any)
}

func (s hintSetup) markUnsaved(t *testing.T) {
	t.Helper()
	db, err := catalog.Open(context.Background(), filepath.Join(s.home, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SetUnsaved(context.Background(), "work", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// damageCatalog puts a file that is not a database where s's catalog goes
// and returns a command that opens it.
func damageCatalog(t *testing.T, s hintSetup) []string {
	t.Helper()
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.home, "director.db"), []byte(strings.Repeat("not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"profile", "snapshots", "work"}
}

// TestHintsNameHomeAndStore: the commands that failing commands' hints give
// name the --home and --store they ran with, when those are not the
// defaults, so that a pasted hint acts on the same home and store; given by
// DIRECTOR_HOME and DIRECTOR_STORE they are named too (a cron job's hint is
// read where those are not set); with the defaults the commands stay plain
// `director …`. No output shows the store's credentials.
func TestHintsNameHomeAndStore(t *testing.T) {
	hung, _, _ := hungStore(t)
	hungURL := "s3://bucket/pfx?endpoint=" + hung + "&insecure=true"
	cases := []struct {
		name  string
		store string // a store of the case's own, given by flag or DIRECTOR_STORE
		setup func(t *testing.T, s hintSetup) []string
		code  errcode.Code
		want  []string // commands the hint gives, after the prefix
	}{
		{
			name: "stale catalog",
			setup: func(t *testing.T, s hintSetup) []string {
				snap := s.snapshotWork(t)
				if err := os.Remove(filepath.Join(s.storeDir, snap["object_key"].(string))); err != nil {
					t.Fatal(err)
				}
				return []string{"profile", "restore", "work", snap["id"].(string)}
			},
			code: errcode.SnapshotNotFound,
			want: []string{"catalog rebuild", "profile restore work latest", "profile snapshots work"},
		},
		{
			name: "no such snapshot",
			setup: func(t *testing.T, s hintSetup) []string {
				s.snapshotWork(t)
				return []string{"profile", "restore", "work", "work-20200101T000000Z"}
			},
			code: errcode.SnapshotNotFound,
			want: []string{"profile snapshots work"},
		},
		{
			name: "no snapshot yet",
			setup: func(t *testing.T, s hintSetup) []string {
				s.must(t, "profile", "create", "work")
				return []string{"profile", "restore", "work", "latest"}
			},
			code: errcode.SnapshotNotFound,
			want: []string{"profile snapshot work"},
		},
		{
			name: "restore over an unsaved login",
			setup: func(t *testing.T, s hintSetup) []string {
				s.snapshotWork(t)
				s.markUnsaved(t)
				return []string{"profile", "restore", "work", "latest"}
			},
			code: errcode.InvalidInput,
			want: []string{"profile snapshot work"},
		},
		{
			name: "delete of an unsaved login",
			setup: func(t *testing.T, s hintSetup) []string {
				s.must(t, "profile", "create", "work")
				s.markUnsaved(t)
				return []string{"profile", "delete", "work"}
			},
			code: errcode.InvalidInput,
			want: []string{"profile snapshot work"},
		},
		{
			name: "missing age identity file",
			setup: func(t *testing.T, s hintSetup) []string {
				s.snapshotWork(t)
				return []string{"profile", "restore", "work", "latest", "--age-identity", filepath.Join(t.TempDir(), "gone.txt")}
			},
			code: errcode.DecryptFailed,
			want: []string{"key generate"},
		},
		{
			name: "rebuild without the age identity",
			setup: func(t *testing.T, s hintSetup) []string {
				key := filepath.Join(t.TempDir(), "key.txt")
				rcpt := decodeJSON(t, s.must(t, "--json", "key", "generate", "--out", key))["recipients"].([]any)[0].(string)
				s.snapshotWork(t, "--age-recipients", rcpt)
				return []string{"catalog", "rebuild"}
			},
			code: errcode.DecryptFailed,
			want: []string{"catalog rebuild"},
		},
		{
			name:  "damaged catalog",
			setup: damageCatalog,
			code:  errcode.Internal,
			want:  []string{"catalog rebuild"},
		},
		{
			// Found before the store is opened, whose URL holds keys it
			// refuses: the hint names the store, without them.
			name:  "damaged catalog, keys in the store URL",
			store: "s3://" + hintKeyID + ":" + hintSecret + "@bucket/pfx",
			setup: damageCatalog,
			code:  errcode.Internal,
			want:  []string{"catalog rebuild"},
		},
		{
			name:  "store that does not answer",
			store: hungURL,
			setup: func(t *testing.T, s hintSetup) []string {
				return []string{"--store-call-timeout", "1s", "catalog", "rebuild"}
			},
			code: errcode.StorageUnavailable,
			want: []string{"store check"},
		},
	}
	for _, mode := range []hintMode{byFlags, byEnv, byDefault} {
		for _, c := range cases {
			t.Run(mode.String()+"/"+c.name, func(t *testing.T) {
				s := newHintSetup(t, mode, c.store)
				args := c.setup(t, s)
				code, out, errOut := s.run(append([]string{"--json"}, args...)...)
				if code == 0 {
					t.Fatalf("%v passed: %s", args, out)
				}
				e := decodeJSON(t, out)["error"].(map[string]any)
				hint, _ := e["hint"].(string)
				if e["code"] != string(c.code) {
					t.Errorf("code %v, want %s: %v", e["code"], c.code, e)
				}
				for _, w := range c.want {
					if !strings.Contains(hint, "`"+s.prefix+" "+w) {
						t.Errorf("hint does not give `%s %s`: %s", s.prefix, w, hint)
					}
				}
				if n, m := strings.Count(hint, "`director"), strings.Count(hint, "`"+s.prefix); n != m {
					t.Errorf("%d of the hint's %d commands do not start with %q: %s", n-m, n, s.prefix, hint)
				}
				if s.prefix == "director" && strings.Contains(hint, "`director --") {
					t.Errorf("with the default home and store a command names flags: %s", hint)
				}
				// The text line carries the same hint.
				_, _, text := s.run(args...)
				if !strings.Contains(text, "hint: "+hint) {
					t.Errorf("text output %q does not end with the hint %q", text, hint)
				}
				for _, secret := range []string{hintKeyID, hintSecret} {
					if all := out + errOut + text; strings.Contains(all, secret) {
						t.Errorf("output shows %q: %s", secret, all)
					}
				}
			})
		}
	}
}

// TestSnapshotWarningsNameHomeAndStore: the command a snapshot's warning
// gives (log in again, for cookies bound to this machine's keyring) names
// the --home and --store it ran with, in the text and in --json, as a
// hint's commands do.
func TestSnapshotWarningsNameHomeAndStore(t *testing.T) {
	for _, mode := range []hintMode{byFlags, byEnv, byDefault} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newHintSetup(t, mode, "")
			s.must(t, "profile", "create", "work")
			dir := filepath.Join(s.home, "browser-profiles", "work", "Default")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "Preferences"), []byte(`{}`), 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite3", filepath.Join(dir, "Cookies"))
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{
				`CREATE TABLE cookies (host_key TEXT, name TEXT, encrypted_value BLOB)`,
				`INSERT INTO cookies VALUES ('a.test', 'sid', CAST('v11yyyy' AS BLOB))`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			want := "`" + s.prefix + " profile open work --snapshot`"
			warnings, _ := decodeJSON(t, s.must(t, "--json", "profile", "snapshot", "work"))["snapshot"].(map[string]any)["warnings"].([]any)
			if len(warnings) != 1 || !strings.Contains(warnings[0].(string), want) {
				t.Errorf("--json warnings %q, want one giving %s", warnings, want)
			}
			if text := s.must(t, "profile", "snapshot", "work"); !strings.Contains(text, "warning") || !strings.Contains(text, want) {
				t.Errorf("text output %q gives no %s", text, want)
			}
		})
	}
}

// plainCommand finds a director command outside backticks, which a hint
// would print unchanged (errcode's doc: commands are written in backticks).
var plainCommand = regexp.MustCompile("(^|[^`\\w/-])director (profile|catalog|store|key|run|audit)\\b")

// plainAllowed are the string literals' plain mentions that are not
// commands to paste, each with why.
var plainAllowed = []string{
	"from director profile open",    // a run result's note says where an unsaved login came from
	"given to director run",         // the workflow path a person typed
	"recorded by director run",      // what records sessions, in prose
	"usage: director ",              // a command's syntax, with [optional] parts
	`"director store check " + key`, // the store check probe's content
	"// in backticks below",         // a command put together, then put in backticks
}

// TestHintCommandsInBackticks: every director command in the string
// literals of the module's code is written in backticks, so that the hint
// that prints it names the home and store (TestHintsNameHomeAndStore), or
// is one of plainAllowed.
func TestHintCommandsInBackticks(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "bench", "bench_store", "bench_workflow", "browser-profiles":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !plainCommand.MatchString(s) {
				return true
			}
			line := fset.Position(lit.Pos()).Line
			context := strings.Split(string(src), "\n")[line-1]
			for _, a := range plainAllowed {
				if strings.Contains(s, a) || strings.Contains(context, a) {
					return true
				}
			}
			t.Errorf("%s:%d: a director command outside backticks: %s", path, line, s)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNewInvocation: a hint names --home and --store only when they are
// not the defaults (a --store that is the home's own snapshots folder is
// not), the store as its String() names it (an absolute path, no keys).
func TestNewInvocation(t *testing.T) {
	noDirectorEnv(t)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"defaults", nil, "director x"},
		{"the default home, by flag", []string{"--home", defaultHome()}, "director x"},
		{"another home", []string{"--home", "/srv/d"}, "director --home /srv/d x"},
		{"that home's own store", []string{"--home", "/srv/d", "--store", "file:///srv/d/snapshots"}, "director --home /srv/d x"},
		{"another store", []string{"--home", "/srv/d", "--store", "file:///var/snaps"}, "director --home /srv/d --store file:///var/snaps x"},
		{"a relative store", []string{"--store", "file://snaps"}, "director --store " + shellquote.Quote("file://"+filepath.Join(cwd, "snaps")) + " x"},
		{"an s3 store, keys by flag", []string{"--store", "s3://bucket/pfx?endpoint=127.0.0.1:9000&insecure=true",
			"--aws-access-key-id", hintKeyID, "--aws-secret-access-key", hintSecret},
			"director --store 's3://bucket/pfx?endpoint=127.0.0.1:9000&insecure=true' x"},
		{"keys in the endpoint", []string{"--store", "s3://bucket?endpoint=https://" + hintKeyID + ":" + hintSecret + "@h:9000"},
			"director --store 's3://bucket?endpoint=https://REDACTED@h:9000' x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got string
			app := newApp(io.Discard, io.Discard)
			app.Commands = append(app.Commands, &cli.Command{Name: "probe", Action: func(cc *cli.Context) error {
				got = getGlobals(cc).hints.command("x")
				return nil
			}})
			if err := app.RunContext(context.Background(), append(append([]string{"director"}, c.args...), "probe")); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// A profile without snapshots: the hint says how to make the first one in a
// way that works when pasted. `director profile snapshot NAME` fails for a
// profile that is not on this machine, so then the hint is to log in to it
// (profile open creates it); no hint holds a placeholder such as URL where
// the value is known, and the pasted snapshot command lets the restore go on.
func TestNoSnapshotHintsCanBePasted(t *testing.T) {
	home := cliEnv(t)
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home}, args...)...)
	}
	hintOf := func(out string) string {
		e, _ := decodeJSON(t, out)["error"].(map[string]any)
		h, _ := e["hint"].(string)
		return h
	}
	quoted := shellquote.Quote(home)
	for _, args := range [][]string{{"profile", "restore", "gone", "latest"}, {"profile", "verify", "gone"}} {
		code, out, _ := d(append([]string{"--json"}, args...)...)
		if h := hintOf(out); code != 1 || !strings.Contains(h, "`director --home "+quoted+" profile open gone --snapshot`") || strings.Contains(h, "profile snapshot gone") {
			t.Errorf("%v: exit %d, hint %q: want profile open gone --snapshot", args, code, h)
		}
	}
	if _, out, _ := d("profile", "snapshots", "gone"); !strings.Contains(out, "profile open gone --snapshot") {
		t.Errorf("profile snapshots gone: %q", out)
	}
	code, out, _ := d("--json", "profile", "prune", "gone", "--keep-last", "1")
	if h := hintOf(out); code != 1 || strings.Contains(h, "URL") || !strings.Contains(h, "profile list`") {
		t.Errorf("prune gone: exit %d, hint %q: want no placeholder", code, h)
	}

	if code, _, errOut := d("profile", "create", "here"); code != 0 {
		t.Fatal(errOut)
	}
	if _, out, _ := d("profile", "snapshots", "here"); !strings.Contains(out, "`director --home "+quoted+" profile snapshot here`") {
		t.Errorf("profile snapshots here: %q", out)
	}
	code, out, _ = d("--json", "profile", "restore", "here", "latest")
	h := hintOf(out)
	m := regexp.MustCompile("`(director [^`]*)`").FindStringSubmatch(h)
	if want := "director --home " + quoted + " profile snapshot here"; code != 1 || m == nil || m[1] != want {
		t.Fatalf("restore here: exit %d, hint %q: want the command %q", code, h, want)
	}
	cmdLine := m[1]
	// Paste it (the home has no spaces: split on them), then restore.
	if code, _, errOut := runDirector(t, strings.Fields(strings.TrimPrefix(cmdLine, "director "))...); code != 0 {
		t.Fatalf("the pasted %q: exit %d: %s", cmdLine, code, errOut)
	}
	if code, _, errOut := d("profile", "restore", "here", "latest", "--force"); code != 0 {
		t.Errorf("restore after the pasted snapshot: exit %d: %s", code, errOut)
	}
}
