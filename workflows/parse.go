package workflows

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"director/errcode"
	"director/session"
	"director/snapshot"
)

// Problem is one thing wrong with a workflow file, at a line, in a field.
type Problem struct {
	File  string
	Line  int
	Field string // dotted path, e.g. steps[2].wait_for.state
	Msg   string
	// Hint, when set, says what to do about this problem; the error's hint
	// when it is the only one.
	Hint string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.Field, p.Msg)
	}
	if p.Field == "" {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Field, p.Msg)
}

// ValidationError lists every problem found in a workflow file, in file
// order. Load wraps it in an errcode.InvalidAction error.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// LoadOptions are the values from outside the file.
type LoadOptions struct {
	// Vars override or add to the file's vars (director run --var k=v).
	Vars map[string]string
	// LookupEnv resolves ${env.X}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Load reads, parses, validates and interpolates the workflow at path. Every
// problem is reported with FILE:LINE and the field, as an
// errcode.InvalidAction error wrapping a *ValidationError.
func Load(path string, o LoadOptions) (*Workflow, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, errcode.New(errcode.InvalidInput, "workflow %s is a directory, not a file", path).
			WithHint("give the workflow's YAML file, such as %s", filepath.Join(path, "refresh.yaml"))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errcode.New(errcode.InvalidInput, "workflow file %s does not exist", path).WithHint("check the path given to director run")
		}
		hint := "check the file's permissions"
		if !errors.Is(err, os.ErrPermission) {
			hint = "give a regular, readable YAML file"
		}
		return nil, errcode.Hinted(err, errcode.InvalidInput, hint, "cannot read workflow %s", path)
	}
	return Parse(path, data, o)
}

// Parse is Load on bytes already read; file names them in errors.
func Parse(file string, data []byte, o LoadOptions) (*Workflow, error) {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	d := &decoder{file: file, opts: o}
	w := d.decode(data)
	if len(d.problems) > 0 {
		sort.SliceStable(d.problems, func(i, j int) bool { return d.problems[i].Line < d.problems[j].Line })
		for i := range d.problems { // a bad value may quote one from ${env.X}
			d.problems[i].Msg = d.secrets.redact(d.problems[i].Msg)
			d.problems[i].Field = d.secrets.redact(d.problems[i].Field)
			d.problems[i].Hint = d.secrets.redact(d.problems[i].Hint)
		}
		verr := &ValidationError{Problems: d.problems}
		hint := "fix the workflow file at the line shown; docs/workflows.md describes every field"
		if len(d.problems) == 1 && d.problems[0].Hint != "" {
			hint = d.problems[0].Hint
		}
		return nil, errcode.Hinted(verr, errcode.InvalidAction, hint, "invalid workflow")
	}
	if err := checkVarNames(o.Vars); err != nil {
		return nil, err
	}
	if err := d.checkVarFlags(); err != nil {
		return nil, err
	}
	w.File = file
	w.secrets = d.secrets
	return w, nil
}

// checkVarFlags refuses a --var that names a var the workflow neither
// declares under vars nor uses as ${vars.NAME}: it would set nothing, and
// a misspelt --var pasword=… would leave the workflow's own value (or an
// unset ${env.X}) in place without a word. Only on a file without
// problems, whose every string has been read for the vars it uses.
// checkVarNames refuses a --var whose name no ${vars.NAME} could use. It is
// the command line that is wrong, not the file: invalid_input.
func checkVarNames(vars map[string]string) error {
	var bad []string
	for k := range vars {
		if !varNameRe.MatchString(k) {
			bad = append(bad, strconv.Quote(k))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return errcode.New(errcode.InvalidInput, "--var %s: variable names are letters, digits and _, starting with a letter or _", strings.Join(bad, ", ")).
		WithHint("write --var NAME=VALUE with a NAME the workflow declares under vars:")
}

func (d *decoder) checkVarFlags() error {
	var unknown []string
	for k := range d.opts.Vars {
		if !d.declared[k] && !d.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	known := make([]string, 0, len(d.declared)+len(d.used))
	for _, m := range []map[string]bool{d.declared, d.used} {
		for k := range m {
			if !slices.Contains(known, k) {
				known = append(known, k)
			}
		}
	}
	sort.Strings(known)
	flags := "--var " + strings.Join(unknown, ", --var ")
	what := "no var " + strings.Join(unknown, " or ")
	if len(known) == 0 {
		return errcode.New(errcode.InvalidInput, "%s: workflow %s has %s: it declares no vars and uses no ${vars.NAME}", flags, d.file, what).
			WithHint("drop %s, or run the workflow that uses it", flags)
	}
	return errcode.New(errcode.InvalidInput, "%s: workflow %s has %s (its vars: %s)", flags, d.file, what, strings.Join(known, ", ")).
		WithHint("check the spelling against the workflow's vars (%s), or drop %s", strings.Join(known, ", "), flags)
}

// minSecretLen is the length from which a value taken from the environment
// is redacted from messages: shorter ones (a port, "on") would garble every
// message they happen to occur in, and hide nothing.
const minSecretLen = 4

// secret notes that ${env.name} gave v.
func (d *decoder) secret(name, v string) {
	if len(v) < minSecretLen {
		return
	}
	d.secrets.add(name, v)
}

// misplacedKey explains the parser's "value is not allowed in this
// context" errors, which an indentation mistake causes, by the key they
// are about: a key indented like no mapping around it, or a key indented
// deeper than the key above it, whose value it then continues. It returns
// the line, field and message to report (the given ones when it cannot tell).
func misplacedKey(se *yaml.SyntaxError, data []byte, line int, msg string) (int, string, string) {
	tk := se.Token
	if tk == nil || tk.Position == nil || tk.Next == nil || tk.Next.Type != token.MappingValueType {
		return line, "", msg
	}
	switch {
	case strings.HasPrefix(msg, "value is not allowed in this context") && tk.Type == token.StringType:
		// "  retries: 2" under "    timeout: 5s": the key is tk.
		return tk.Position.Line, tk.Value, fmt.Sprintf("the key %s (column %d) is indented like no mapping around it; line it up with the keys it belongs with (%s)",
			tk.Value, tk.Position.Column, msg)
	case strings.HasPrefix(msg, "mapping value is not allowed in this context") && tk.Prev != nil && tk.Prev.Type == token.MappingValueType &&
		tk.Prev.Prev != nil && tk.Type == token.StringType:
		// "url: http://h/" then "   logged_in_selector: x": the value
		// of url ran on to the next line, up to its colon.
		parent := tk.Prev.Prev.Value
		lines := strings.Split(string(data), "\n")
		for n := tk.Position.Line; n < len(lines); n++ { // lines[n] is line n+1
			key, _, found := strings.Cut(strings.TrimSpace(lines[n]), ":")
			if t := strings.TrimSpace(lines[n]); t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			if found && strings.HasSuffix(tk.Value, key) {
				return n + 1, key, fmt.Sprintf("the key %s is indented deeper than %s above it, so YAML reads it as part of %s's value; line it up with %s (%s)",
					key, parent, parent, parent, msg)
			}
			break
		}
	}
	return line, "", msg
}

type decoder struct {
	file string
	opts LoadOptions
	vars map[string]string
	// brokenVars are the vars the file gives a value that could not be
	// resolved (an unset ${env.X}, a value that is not a string). Their
	// problem is reported at their own line; a ${vars.NAME} that uses one
	// fails without a second problem, which would say to define a var
	// the file has.
	brokenVars map[string]bool
	// declared are the keys under vars; used, the NAMEs of every
	// ${vars.NAME} the file's strings refer to: what a --var may set.
	declared, used map[string]bool
	secrets        secretSet // see Workflow.Redact
	problems       []Problem
	// unproven: the workflow has no login_check, so it may not snapshot.
	unproven bool
}

func (d *decoder) add(line int, field, format string, args ...any) {
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// lineOf is the line of n, or fallback when n has no token.
func lineOf(n ast.Node, fallback int) int {
	if n == nil {
		return fallback
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return fallback
}

// kv is one key of a mapping with its line.
type kv struct {
	key  string
	line int
	val  ast.Node // nil or *ast.NullNode for an empty value
}

// unwrap strips tags and anchors, so that a value is its plain node.
func (d *decoder) unwrap(n ast.Node, field string, line int) ast.Node {
	for {
		switch t := n.(type) {
		case *ast.TagNode:
			n = t.Value
		case *ast.AnchorNode:
			n = t.Value
		case *ast.AliasNode:
			d.add(lineOf(n, line), field, "YAML aliases are not supported in workflows; repeat the value")
			return nil
		default:
			return n
		}
	}
}

func isNull(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, ok := n.(*ast.NullNode)
	return ok
}

// mapping returns the keys of a mapping node, or reports that n is not one.
func (d *decoder) mapping(n ast.Node, field string, line int) ([]kv, bool) {
	n = d.unwrap(n, field, line)
	var values []*ast.MappingValueNode
	switch t := n.(type) {
	case *ast.MappingNode:
		values = t.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{t}
	default:
		d.add(lineOf(n, line), field, "must be a mapping (key: value lines), not %s", describe(n))
		return nil, false
	}
	out := make([]kv, 0, len(values))
	first := make(map[string]int, len(values)) // key → its line
	for _, mv := range values {
		k := mv.Key
		var key string
		if s, ok := d.unwrap(k, field, line).(*ast.StringNode); ok {
			key = s.Value
		} else if k != nil {
			key = k.String()
		}
		kl := lineOf(k, line)
		// The parser accepts duplicate keys so that this can name the field.
		if fl, dup := first[key]; dup {
			d.add(kl, join(field, key), "appears twice in one mapping (first on line %d); keep one", fl)
			continue
		}
		first[key] = kl
		val := d.unwrap(mv.Value, join(field, key), kl)
		out = append(out, kv{key: key, line: kl, val: val})
	}
	return out, true
}

func describe(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "an empty value"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	default:
		return "a " + n.Type().String()
	}
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// scalar returns the text of a scalar node (string, number or boolean).
func (d *decoder) scalar(n ast.Node, field string, line int) (string, bool) {
	switch t := n.(type) {
	case *ast.StringNode:
		return t.Value, true
	case *ast.LiteralNode:
		return t.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return n.GetToken().Value, true
	}
	d.add(lineOf(n, line), field, "must be a string, not %s", describe(n))
	return "", false
}

// str is a string value, interpolated when interp is true.
func (d *decoder) str(n ast.Node, field string, line int, interp bool) (string, bool) {
	s, ok := d.scalar(n, field, line)
	if !ok || !interp {
		return s, ok
	}
	return d.interpolate(s, field, lineOf(n, line))
}

func (d *decoder) boolean(n ast.Node, field string, line int) (bool, bool) {
	if b, ok := n.(*ast.BoolNode); ok {
		return b.Value, true
	}
	d.add(lineOf(n, line), field, "must be true or false, not %s", describe(n))
	return false, false
}

func (d *decoder) integer(n ast.Node, field string, line, lo, hi int) (int, bool) {
	in, ok := n.(*ast.IntegerNode)
	if !ok {
		d.add(lineOf(n, line), field, "must be a whole number from %d to %d, not %s", lo, hi, describe(n))
		return 0, false
	}
	v, err := strconv.Atoi(in.GetToken().Value)
	if err != nil || v < lo || v > hi {
		d.add(lineOf(n, line), field, "must be a whole number from %d to %d, got %s", lo, hi, in.GetToken().Value)
		return 0, false
	}
	return v, true
}

// duration reads a positive duration; interp replaces ${vars.X} and
// ${env.X} in it first (a step's durations, like its other strings).
func (d *decoder) duration(n ast.Node, field string, line int, interp bool) (time.Duration, bool) {
	if _, isNum := n.(*ast.IntegerNode); isNum {
		d.add(lineOf(n, line), field, "must be a duration with a unit, such as %ss", n.GetToken().Value)
		return 0, false
	}
	s, ok := d.scalar(n, field, line)
	if !ok {
		return 0, false
	}
	if interp {
		if s, ok = d.interpolate(s, field, lineOf(n, line)); !ok {
			return 0, false
		}
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || v <= 0 {
		d.add(lineOf(n, line), field, "must be a positive duration such as 500ms, 30s or 2m, got %q", s)
		return 0, false
	}
	return v, true
}

func (d *decoder) strList(n ast.Node, field string, line int) ([]string, bool) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.add(lineOf(n, line), field, "must be a list of strings, not %s", describe(n))
		return nil, false
	}
	out := make([]string, 0, len(seq.Values))
	good := true
	for i, v := range seq.Values {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := d.scalar(d.unwrap(v, f, line), f, lineOf(v, line))
		if !ok {
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

func (d *decoder) unknown(k kv, field string, allowed []string) {
	d.add(k.line, join(field, k.key), "unknown key %q (allowed here: %s)", k.key, strings.Join(allowed, ", "))
}

func topKeys() []string {
	return []string{"name", "profile", "restore", "snapshot", "browser", "session", "login_check", "vars", "steps"}
}

var (
	nameRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	varNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	snapIDRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,200}$`)
	tabRe     = regexp.MustCompile(`^t[1-9][0-9]{0,5}$`)
)

func (d *decoder) decode(data []byte) *Workflow {
	w := &Workflow{
		Restore:  RestoreLatest,
		Snapshot: SnapshotOnSuccess,
		Browser:  BrowserConfig{ViewportWidth: DefaultViewportW, ViewportHeight: DefaultViewportH, Timeout: DefaultActionTimeout},
		Session:  SessionConfig{IdleTimeout: DefaultIdleTimeout, MaxDuration: DefaultMaxDuration},
		Vars:     map[string]string{},
	}
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		line := 1
		msg := err.Error()
		var se *yaml.SyntaxError
		if errors.As(err, &se) {
			msg = se.Message
			if se.Token != nil && se.Token.Position != nil {
				line = se.Token.Position.Line
			}
		}
		if strings.Contains(msg, "'\t'") {
			msg = strings.ReplaceAll(msg, "'\t'", `'\t'`) + " (a tab: YAML indents with spaces only)"
		}
		field := ""
		if se != nil {
			line, field, msg = misplacedKey(se, data, line, msg)
		}
		d.add(line, field, "malformed YAML: %s", msg)
		return w
	}
	if len(f.Docs) != 1 || f.Docs[0] == nil || isNull(f.Docs[0].Body) {
		d.add(1, "", "a workflow file holds exactly one YAML document with name, profile and steps")
		return w
	}
	top, ok := d.mapping(f.Docs[0].Body, "", 1)
	if !ok {
		return w
	}
	seen := map[string]kv{}
	for _, k := range top {
		seen[k.key] = k
		if !slices.Contains(topKeys(), k.key) {
			d.unknown(k, "", topKeys())
		}
	}
	// vars first: everything else may refer to them.
	d.vars = map[string]string{}
	d.declared, d.used = map[string]bool{}, map[string]bool{}
	if k, ok := seen["vars"]; ok && !isNull(k.val) {
		if vs, ok := d.mapping(k.val, "vars", k.line); ok {
			for _, v := range vs {
				d.declared[v.key] = true
				f := "vars." + v.key
				if !varNameRe.MatchString(v.key) {
					d.add(v.line, f, "variable names are letters, digits and _, starting with a letter or _")
					continue
				}
				if _, given := d.opts.Vars[v.key]; given {
					// --var replaces it: its ${env.NAME} need not be set,
					// but it must still be a string.
					d.str(v.val, f, v.line, false)
					continue
				}
				s, ok := d.str(v.val, f, v.line, false)
				if ok {
					// vars may pull from the environment, never from each other.
					s, ok = d.interpolateEnvOnly(s, f, lineOf(v.val, v.line))
				}
				if !ok {
					if d.brokenVars == nil {
						d.brokenVars = map[string]bool{}
					}
					d.brokenVars[v.key] = true
					continue
				}
				d.vars[v.key] = s
			}
		}
	}
	for k, v := range d.opts.Vars { // names checked by checkVarNames
		d.vars[k] = v
	}
	w.Vars = d.vars

	if k, ok := seen["name"]; ok {
		if s, ok := d.str(k.val, "name", k.line, false); ok {
			if strings.TrimSpace(s) == "" || len(s) > 200 || snapshot.HasControl(s) {
				d.add(k.line, "name", "must be one non-empty line of at most 200 characters, without control characters")
			}
			w.Name = s
		}
	} else {
		d.add(1, "name", "required: a short name for the workflow")
	}

	if k, ok := seen["profile"]; ok {
		if isNull(k.val) {
			w.Incognito = true
		} else if s, ok := d.str(k.val, "profile", k.line, true); ok {
			if !nameRe.MatchString(s) {
				d.add(lineOf(k.val, k.line), "profile", "%q is not a valid profile name (lowercase letters, digits, '.', '_', '-'; at most 63), or write null for an incognito run", s)
			}
			w.Profile = s
		}
	} else {
		d.add(1, "profile", "required: a profile name, or null for an incognito run")
	}
	if w.Incognito {
		w.Restore = RestoreNone
		w.Snapshot = SnapshotNever
	}

	if k, ok := seen["restore"]; ok {
		if s, ok := d.str(k.val, "restore", k.line, true); ok {
			switch {
			case s == RestoreLatest || s == RestoreNone:
			case snapIDRe.MatchString(s):
			default:
				d.add(lineOf(k.val, k.line), "restore", "must be latest, none or a snapshot id, got %q", s)
			}
			if w.Incognito && s != RestoreNone {
				d.add(lineOf(k.val, k.line), "restore", "an incognito run (profile: null) has nothing to restore; remove restore or set it to none")
			}
			w.Restore = s
		}
	}
	if k, ok := seen["snapshot"]; ok {
		if s, ok := d.str(k.val, "snapshot", k.line, false); ok {
			p := SnapshotPolicy(s)
			switch p {
			case SnapshotOnSuccess, SnapshotNever, SnapshotAlways:
			default:
				d.add(lineOf(k.val, k.line), "snapshot", "must be on_success, never or always, got %q", s)
			}
			if w.Incognito && p != SnapshotNever {
				d.add(lineOf(k.val, k.line), "snapshot", "an incognito run (profile: null) cannot be snapshotted; remove snapshot or set it to never")
			}
			w.Snapshot = p
		}
	}
	if k, ok := seen["browser"]; ok && !isNull(k.val) {
		d.browser(k, &w.Browser)
	}
	if k, ok := seen["session"]; ok && !isNull(k.val) {
		d.session(k, &w.Session)
	}
	if k, ok := seen["login_check"]; ok && !isNull(k.val) {
		w.LoginCheck = d.loginCheck(k)
	} else if !w.Incognito {
		// Without a login check no run can prove the login, and a
		// logged-out run would replace the good snapshot: such a workflow
		// does not snapshot unless asked, and cannot be asked.
		d.unproven = true
		if k, ok := seen["snapshot"]; !ok {
			w.Snapshot = SnapshotNever
		} else if w.Snapshot == SnapshotOnSuccess || w.Snapshot == SnapshotAlways {
			d.problems = append(d.problems, Problem{File: d.file, Line: lineOf(k.val, k.line), Field: "snapshot",
				Msg:  fmt.Sprintf("%s needs a login_check: without one a run cannot prove that the profile is still logged in, and a logged-out run would replace the good snapshot", w.Snapshot),
				Hint: "add a login_check (a url and a logged_in_selector or login_wall_selector; docs/workflows.md), or set snapshot: never"})
		}
	}
	if k, ok := seen["steps"]; ok {
		w.Steps = d.steps(k, w)
	} else {
		d.add(1, "steps", "required: the list of steps to run")
	}
	d.checkLoginCheckPolicy(w)
	return w
}

// checkLoginCheckPolicy refuses a login_check.url that the session's
// blocklist or allowlist refuses: the check could never run, and the run
// would only fail with domain_blocked after restoring and launching.
func (d *decoder) checkLoginCheckPolicy(w *Workflow) {
	lc := w.LoginCheck
	if lc == nil || lc.URL == "" || lc.urlLine == 0 {
		return
	}
	p := session.Policy{Blocklist: w.Session.Blocklist, Allowlist: w.Session.Allowlist}
	why := p.Check(lc.URL)
	if why == "" {
		return
	}
	host := session.Host(lc.URL)
	hint := fmt.Sprintf("add %s to session.allowlist, or check a page of a host the allowlist allows", host)
	for _, b := range w.Session.Blocklist {
		if session.MatchDomain(b, host) {
			hint = fmt.Sprintf("remove %q from session.blocklist (the allowlist does not override it), or check a page of another host", b)
			break
		}
	}
	d.problems = append(d.problems, Problem{File: d.file, Line: lc.urlLine, Field: "login_check.url",
		Msg: fmt.Sprintf("the login check could never run: %s", why), Hint: hint})
}

func browserKeys() []string { return []string{"headless", "viewport", "timeout"} }

func (d *decoder) browser(k kv, b *BrowserConfig) {
	kvs, ok := d.mapping(k.val, "browser", k.line)
	if !ok {
		return
	}
	for _, e := range kvs {
		f := "browser." + e.key
		switch e.key {
		case "headless":
			if v, ok := d.boolean(e.val, f, e.line); ok {
				b.Headless = &v
			}
		case "timeout":
			if v, ok := d.duration(e.val, f, e.line, false); ok {
				b.Timeout = v
			}
		case "viewport":
			vp, ok := d.mapping(e.val, f, e.line)
			if !ok {
				continue
			}
			for _, x := range vp {
				ff := f + "." + x.key
				switch x.key {
				case "width":
					if v, ok := d.integer(x.val, ff, x.line, 200, 10000); ok {
						b.ViewportWidth = v
					}
				case "height":
					if v, ok := d.integer(x.val, ff, x.line, 200, 10000); ok {
						b.ViewportHeight = v
					}
				default:
					d.unknown(x, f, []string{"width", "height"})
				}
			}
		default:
			d.unknown(e, "browser", browserKeys())
		}
	}
}

func sessionKeys() []string {
	return []string{"idle_timeout", "max_duration", "blocklist", "allowlist"}
}

func (d *decoder) session(k kv, s *SessionConfig) {
	kvs, ok := d.mapping(k.val, "session", k.line)
	if !ok {
		return
	}
	for _, e := range kvs {
		f := "session." + e.key
		switch e.key {
		case "idle_timeout":
			if v, ok := d.duration(e.val, f, e.line, false); ok {
				s.IdleTimeout = v
			}
		case "max_duration":
			if v, ok := d.duration(e.val, f, e.line, false); ok {
				s.MaxDuration = v
			}
		case "blocklist", "allowlist":
			if isNull(e.val) {
				continue
			}
			list, _ := d.strList(e.val, f, e.line)
			seq, _ := e.val.(*ast.SequenceNode)
			var good []string
			for i, p := range list {
				line := e.line
				if seq != nil && i < len(seq.Values) {
					line = lineOf(seq.Values[i], e.line)
				}
				if err := session.ValidatePattern(p); err != nil {
					d.add(line, fmt.Sprintf("%s[%d]", f, i), "%v", err)
					continue
				}
				good = append(good, p)
			}
			if e.key == "blocklist" {
				s.Blocklist = good
			} else {
				s.Allowlist = good
			}
		default:
			d.unknown(e, "session", sessionKeys())
		}
	}
}

func loginCheckKeys() []string { return []string{"url", "logged_in_selector", "login_wall_selector"} }

func (d *decoder) loginCheck(k kv) *LoginCheck {
	kvs, ok := d.mapping(k.val, "login_check", k.line)
	if !ok {
		return nil
	}
	lc := &LoginCheck{Line: k.line}
	present := map[string]bool{}
	for _, e := range kvs {
		f := "login_check." + e.key
		present[e.key] = true
		switch e.key {
		case "url":
			if s, ok := d.str(e.val, f, e.line, true); ok {
				if d.checkURL(s, f, lineOf(e.val, e.line), false) {
					lc.urlLine = lineOf(e.val, e.line)
				}
				lc.URL = s
			}
		case "logged_in_selector":
			if s, ok := d.str(e.val, f, e.line, true); ok {
				d.checkSelector(s, f, lineOf(e.val, e.line))
				lc.LoggedInSelector = s
			}
		case "login_wall_selector":
			if s, ok := d.str(e.val, f, e.line, true); ok {
				d.checkSelector(s, f, lineOf(e.val, e.line))
				lc.LoginWallSelector = s
			}
		default:
			d.unknown(e, "login_check", loginCheckKeys())
		}
	}
	// A key whose value was reported already is not missing too.
	if !present["url"] {
		d.add(k.line, "login_check.url", "required: the page that shows whether the profile is logged in")
	}
	if !present["logged_in_selector"] && !present["login_wall_selector"] {
		d.add(k.line, "login_check", "set logged_in_selector (present only when logged in) and/or login_wall_selector (present only on the login page)")
	}
	return lc
}

// checkURL reports a URL that is not absolute http(s) and says whether s
// passed.
func (d *decoder) checkURL(s, field string, line int, allowBlank bool) bool {
	if allowBlank && (s == "" || s == "about:blank") {
		return true
	}
	u, err := url.Parse(s)
	// Hostname, not Host: "http://:8080/" (a var that came out empty) has
	// a port and no host, and Chrome refuses it only at run time.
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		d.add(line, field, "must be an absolute http:// or https:// URL with a host, got %q", s)
		return false
	}
	return true
}

func (d *decoder) checkSelector(s, field string, line int) {
	if strings.TrimSpace(s) == "" {
		d.add(line, field, "must be a non-empty CSS selector")
		return
	}
	if why := selectorProblem(s); why != "" {
		d.add(line, field, "%q is not a valid CSS selector: it %s", s, why)
	}
}

// stepSpec is what a step kind accepts.
type stepSpec struct {
	short string
	keys  []string
}

// stepKinds lists every step kind with the key a plain scalar value sets
// (its shorthand) and the keys its mapping form accepts.
func stepKinds() map[string]stepSpec {
	return map[string]stepSpec{
		StepNavigate:   {"url", []string{"url"}},
		StepClick:      {"selector", []string{"selector"}},
		StepType:       {"", []string{"selector", "text", "clear"}},
		StepPress:      {"key", []string{"key", "selector"}},
		StepSelect:     {"", []string{"selector", "value"}},
		StepWaitFor:    {"selector", []string{"selector", "state", "url"}},
		StepExtract:    {"", []string{"selector", "as", "kind", "attribute"}},
		StepScreenshot: {"file", []string{"file", "full_page", "selector"}},
		StepEvaluate:   {"expression", []string{"expression", "as"}},
		StepAssert:     {"", []string{"selector", "text", "url"}},
		StepSleep:      {"duration", []string{"duration"}},
		StepOpenTab:    {"url", []string{"url"}},
		StepSwitchTab:  {"tab", []string{"tab"}},
		StepCloseTab:   {"tab", []string{"tab"}},
		StepSnapshot:   {"note", []string{"note"}},
	}
}

func stepCommonKeys() []string { return []string{"name", "timeout", "retries"} }

func stepKindNames() []string {
	names := make([]string, 0, len(stepKinds()))
	for k := range stepKinds() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (d *decoder) steps(k kv, w *Workflow) []Step {
	seq, ok := k.val.(*ast.SequenceNode)
	if !ok {
		d.add(lineOf(k.val, k.line), "steps", "must be a list of steps (lines starting with '- '), not %s", describe(k.val))
		return nil
	}
	if len(seq.Values) == 0 {
		d.add(k.line, "steps", "must hold at least one step")
	}
	var steps []Step
	for i, v := range seq.Values {
		f := fmt.Sprintf("steps[%d]", i)
		line := lineOf(v, k.line)
		if st, ok := d.step(d.unwrap(v, f, line), f, line, i, w); ok {
			steps = append(steps, st)
		}
	}
	return steps
}

func (d *decoder) step(n ast.Node, field string, line, index int, w *Workflow) (Step, bool) {
	st := Step{Index: index, Line: line}
	if s, isStr := d.unwrap(n, field, line).(*ast.StringNode); isStr {
		if _, isKind := stepKinds()[s.Value]; isKind {
			// `- close_tab` for `- close_tab:`: a step is a mapping.
			d.add(lineOf(n, line), field, "a step is a mapping: write `%s:` with a colon (and its value after it, if any)", s.Value)
			return st, false
		}
	}
	kvs, ok := d.mapping(n, field, line)
	if !ok {
		return st, false
	}
	var action *kv
	unknownKeys := 0
	for i := range kvs {
		e := kvs[i]
		f := field + "." + e.key
		switch e.key {
		case "name":
			if s, ok := d.str(e.val, f, e.line, true); ok {
				st.Name = s
			}
		case "timeout":
			if v, ok := d.duration(e.val, f, e.line, true); ok {
				st.Timeout = v
			}
		case "retries":
			if v, ok := d.integer(e.val, f, e.line, 0, MaxRetries); ok {
				st.Retries = v
			}
		default:
			if _, isKind := stepKinds()[e.key]; !isKind {
				unknownKeys++
				d.add(e.line, f, "unknown key %q (a step has one action: %s; and optionally %s)",
					e.key, strings.Join(stepKindNames(), ", "), strings.Join(stepCommonKeys(), ", "))
				continue
			}
			if action != nil {
				d.add(e.line, f, "a step has exactly one action, this one also has %q; split it into two steps", action.key)
				continue
			}
			action = &kvs[i]
		}
	}
	if action == nil {
		// An unknown key is most likely the action misspelt: its error,
		// which lists the actions, is the one to report.
		if unknownKeys == 0 {
			d.add(line, field, "a step needs one action: %s", strings.Join(stepKindNames(), ", "))
		}
		return st, false
	}
	st.Kind = action.key
	if st.Line == 0 {
		st.Line = action.line
	}
	before := len(d.problems)
	d.action(&st, *action, field+"."+action.key, w)
	return st, len(d.problems) == before
}

// action fills st from the action's value: a scalar (the kind's shorthand),
// null (for the kinds where every key is optional), or a mapping.
func (d *decoder) action(st *Step, a kv, field string, w *Workflow) {
	spec := stepKinds()[st.Kind]
	fields := map[string]kv{}
	switch {
	case isNull(a.val):
	case isMapping(a.val):
		kvs, _ := d.mapping(a.val, field, a.line)
		for _, e := range kvs {
			if !slices.Contains(spec.keys, e.key) {
				d.unknown(e, field, spec.keys)
				continue
			}
			fields[e.key] = e
		}
	default:
		if spec.short == "" {
			d.add(lineOf(a.val, a.line), field, "must be a mapping with %s", strings.Join(spec.keys, ", "))
			return
		}
		fields[spec.short] = kv{key: spec.short, line: lineOf(a.val, a.line), val: a.val}
	}
	has := func(k string) bool { _, ok := fields[k]; return ok }
	// bad holds the keys whose value was already reported (not a string,
	// an undefined ${vars.X}): only the root cause is reported, not also
	// what the broken value then fails.
	bad := map[string]bool{}
	getStr := func(k string, interp bool) string {
		e, ok := fields[k]
		if !ok {
			return ""
		}
		s, ok := d.str(e.val, field+"."+k, e.line, interp)
		if !ok {
			bad[k] = true
		}
		return s
	}
	getBool := func(k string) bool {
		e, ok := fields[k]
		if !ok {
			return false
		}
		b, _ := d.boolean(e.val, field+"."+k, e.line)
		return b
	}
	lineFor := func(k string) int {
		if e, ok := fields[k]; ok {
			return lineOf(e.val, e.line)
		}
		return a.line
	}
	require := func(keys ...string) bool {
		ok := true
		for _, k := range keys {
			if !has(k) {
				d.add(a.line, field+"."+k, "required")
				ok = false
			}
		}
		return ok
	}
	selector := func() {
		if has("selector") {
			st.Selector = getStr("selector", true)
			if !bad["selector"] {
				d.checkSelector(st.Selector, field+".selector", lineFor("selector"))
			}
		}
	}

	switch st.Kind {
	case StepNavigate:
		if require("url") {
			st.URL = getStr("url", true)
			if !bad["url"] {
				d.checkURL(st.URL, field+".url", lineFor("url"), false)
			}
		}
	case StepOpenTab:
		st.URL = getStr("url", true)
		if !bad["url"] {
			d.checkURL(st.URL, field+".url", lineFor("url"), true)
		}
	case StepClick:
		require("selector")
		selector()
	case StepType:
		require("selector", "text")
		selector()
		st.Text = getStr("text", true)
		st.Clear = getBool("clear")
	case StepPress:
		if require("key") {
			st.Key = getStr("key", true)
			if _, ok := session.KeyByName(st.Key); !ok && !bad["key"] {
				d.add(lineFor("key"), field+".key", "unknown key %q: use one character or a name such as Enter, Tab, Escape, Backspace, ArrowDown", st.Key)
			}
		}
		selector()
	case StepSelect:
		require("selector", "value")
		selector()
		st.Value = getStr("value", true)
	case StepWaitFor:
		switch {
		case has("selector") && has("url"):
			d.add(a.line, field, "wait for a selector or a url, not both; use two steps")
		case has("url"):
			st.URL = getStr("url", true)
			if has("state") {
				d.add(lineFor("state"), field+".state", "state applies to a selector, not to a url")
			}
			if st.URL == "" && !bad["url"] {
				d.add(lineFor("url"), field+".url", "must be a non-empty URL pattern")
			}
		case has("selector"):
			selector()
			st.State = "visible"
			if has("state") {
				st.State = getStr("state", false)
				if st.State != "visible" && st.State != "hidden" && !bad["state"] {
					d.add(lineFor("state"), field+".state", "must be visible or hidden, got %q", st.State)
				}
			}
		default:
			d.add(a.line, field, "set selector (with state visible or hidden) or url (a pattern such as */account*)")
		}
	case StepExtract:
		require("selector", "as")
		selector()
		st.As = getStr("as", false)
		d.checkOutputName(st, field+".as", lineFor("as"))
		st.Extract = "text"
		if has("kind") {
			st.Extract = getStr("kind", false)
		}
		st.Attribute = getStr("attribute", true)
		switch st.Extract {
		case "text", "html", "value":
			if has("attribute") {
				d.add(lineFor("attribute"), field+".attribute", "only for kind attribute or list")
			}
		case "attribute":
			if st.Attribute == "" && !bad["attribute"] {
				d.add(a.line, field+".attribute", "required for kind attribute: the attribute name, such as href")
			}
		case "list":
		default:
			if bad["kind"] {
				break
			}
			d.add(lineFor("kind"), field+".kind", "must be text, attribute, html, value or list, got %q", st.Extract)
		}
	case StepScreenshot:
		if require("file") {
			st.File = getStr("file", true)
			if !bad["file"] {
				d.checkArtifactPath(st.File, field+".file", lineFor("file"))
			}
		}
		st.FullPage = getBool("full_page")
		selector()
		if st.FullPage && st.Selector != "" {
			d.add(lineFor("full_page"), field+".full_page", "full_page and selector exclude each other")
		}
	case StepEvaluate:
		if require("expression") {
			st.Expression = getStr("expression", true)
			if strings.TrimSpace(st.Expression) == "" && !bad["expression"] {
				d.add(lineFor("expression"), field+".expression", "must be a non-empty JavaScript expression")
			}
		}
		if has("as") {
			st.As = getStr("as", false)
			d.checkOutputName(st, field+".as", lineFor("as"))
		}
	case StepAssert:
		if !has("selector") && !has("text") && !has("url") {
			d.add(a.line, field, "set selector, text and/or url")
		}
		selector()
		st.Text = getStr("text", true)
		st.URL = getStr("url", true)
		if has("text") && st.Text == "" && !bad["text"] {
			d.add(lineFor("text"), field+".text", "must be non-empty")
		}
	case StepSleep:
		if require("duration") {
			e := fields["duration"]
			if v, ok := d.duration(e.val, field+".duration", e.line, true); ok {
				st.Duration = v
			}
		}
	case StepSwitchTab:
		if require("tab") {
			st.Tab = getStr("tab", false)
			if !tabRe.MatchString(st.Tab) && !bad["tab"] {
				d.add(lineFor("tab"), field+".tab", "must be a tab handle such as t1 or t2, got %q", st.Tab)
			}
		}
	case StepCloseTab:
		if has("tab") && !isNull(fields["tab"].val) {
			st.Tab = getStr("tab", false)
			if st.Tab != "" && !tabRe.MatchString(st.Tab) && !bad["tab"] { // "" is the current tab, as null is
				d.add(lineFor("tab"), field+".tab", "must be a tab handle such as t1 or t2, got %q", st.Tab)
			}
		}
	case StepSnapshot:
		if has("note") && !isNull(fields["note"].val) {
			st.Note = getStr("note", true)
			if snapshot.HasControl(st.Note) {
				d.add(lineFor("note"), field+".note", "must be one line of plain text, without control characters")
			}
		}
		if w.Incognito {
			d.add(a.line, field, "an incognito run (profile: null) cannot be snapshotted")
		}
		if d.unproven {
			d.problems = append(d.problems, Problem{File: d.file, Line: a.line, Field: field,
				Msg:  "a snapshot step needs a login_check, which it runs first: without one it cannot prove that the profile is still logged in, and would replace the good snapshot with a logged-out one",
				Hint: "add a login_check (a url and a logged_in_selector or login_wall_selector; docs/workflows.md), or remove the snapshot step"})
		}
	}
}

func isMapping(n ast.Node) bool {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

func (d *decoder) checkOutputName(st *Step, field string, line int) {
	if st.As != "" && !varNameRe.MatchString(st.As) {
		d.add(line, field, "output names are letters, digits and _, starting with a letter or _, got %q", st.As)
	}
}

// checkArtifactPath keeps screenshots inside the artifacts directory.
func (d *decoder) checkArtifactPath(p, field string, line int) {
	clean := filepath.Clean(filepath.FromSlash(p))
	switch {
	case p == "":
		d.add(line, field, "must be a file name such as page.png")
	case filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)):
		d.add(line, field, "must be a relative path inside the artifacts directory, got %q", p)
	case strings.ToLower(filepath.Ext(clean)) != ".png":
		d.add(line, field, "screenshots are PNG files: the name must end in .png, got %q", p)
	}
}

// unsetEnv reports ${env.name} in field: unset, or empty when found. In a
// var's value (not allowVars) it says that --var may give the var instead,
// as the var is what needs the environment variable.
func (d *decoder) unsetEnv(name string, found bool, field string, line int, allowVars bool) {
	what := "is not set"
	if found {
		what = "is empty, which counts as not set"
	}
	p := Problem{File: d.file, Line: line, Field: field,
		Msg:  fmt.Sprintf("${env.%s}: the environment variable %s %s: set it", name, name, what),
		Hint: fmt.Sprintf("set the environment variable %s (export %s=VALUE) and run again", name, name)}
	if varName, isVar := strings.CutPrefix(field, "vars."); isVar && !allowVars {
		p.Msg += fmt.Sprintf(", or pass --var %s=VALUE", varName)
		p.Hint = fmt.Sprintf("set the environment variable %s (export %s=VALUE) and run again, or give the var with --var %s=VALUE (which replaces vars.%s)", name, name, varName, varName)
	}
	d.problems = append(d.problems, p)
}

// interpolate replaces ${vars.X} and ${env.X}; $${ is a literal ${.
func (d *decoder) interpolate(s, field string, line int) (string, bool) {
	return d.expand(s, field, line, true)
}

func (d *decoder) interpolateEnvOnly(s, field string, line int) (string, bool) {
	return d.expand(s, field, line, false)
}

func (d *decoder) expand(s, field string, line int, allowVars bool) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	var b strings.Builder
	ok := true
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			d.add(line, field, "unterminated ${ in %q: write ${vars.NAME} or ${env.NAME}, or $${ for a literal ${", s)
			return s, false
		}
		ref := s[i+2 : i+end]
		i += end + 1
		src, name, _ := strings.Cut(ref, ".")
		if !varNameRe.MatchString(name) {
			d.add(line, field, "bad reference ${%s}: write ${vars.NAME} or ${env.NAME}", ref)
			ok = false
			continue
		}
		switch src {
		case "vars":
			if !allowVars {
				d.add(line, field, "vars cannot refer to other vars (${%s}); only ${env.NAME} works here", ref)
				ok = false
				continue
			}
			d.used[name] = true
			v, found := d.vars[name]
			if !found {
				if !d.brokenVars[name] { // else its own line says what is wrong
					d.add(line, field, "${vars.%s} is not defined: add it under vars or pass --var %s=VALUE", name, name)
				}
				ok = false
				continue
			}
			b.WriteString(v)
		case "env":
			v, found := d.opts.LookupEnv(name)
			if !found || v == "" {
				// As for director's own variables, empty is unset: an env
				// file's PASSWORD= would otherwise type an empty password.
				d.unsetEnv(name, found, field, line, allowVars)
				ok = false
				continue
			}
			d.secret(name, v)
			b.WriteString(v)
		default:
			d.add(line, field, "bad reference ${%s}: write ${vars.NAME} or ${env.NAME}", ref)
			ok = false
		}
	}
	return b.String(), ok
}
