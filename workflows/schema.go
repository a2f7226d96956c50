package workflows

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Defaults applied by Load when a workflow leaves a field out.
const (
	DefaultIdleTimeout   = 2 * time.Minute
	DefaultMaxDuration   = 10 * time.Minute
	DefaultActionTimeout = 30 * time.Second
	DefaultViewportW     = 1280
	DefaultViewportH     = 800
	MaxRetries           = 10
)

// Restore policies; any other value is a snapshot id.
const (
	RestoreLatest = "latest"
	RestoreNone   = "none"
)

// SnapshotPolicy says when the runner snapshots the profile after a run.
type SnapshotPolicy string

// The snapshot policies. Even "always" never snapshots a run that ended
// human_required or whose login check failed.
const (
	SnapshotOnSuccess SnapshotPolicy = "on_success"
	SnapshotNever     SnapshotPolicy = "never"
	SnapshotAlways    SnapshotPolicy = "always"
)

// Workflow is a parsed, validated and interpolated workflow file.
type Workflow struct {
	File      string // the path it was loaded from
	Name      string
	Profile   string // "" for an incognito run
	Incognito bool   // profile: null
	Restore   string // RestoreLatest, RestoreNone, or a snapshot id
	Snapshot  SnapshotPolicy
	Browser   BrowserConfig
	Session   SessionConfig
	// LoginCheck is nil when the workflow has none.
	LoginCheck *LoginCheck
	Vars       map[string]string
	Steps      []Step

	secrets secretSet // values of ${env.X}; see Redact
}

// Redact replaces in msg every value the workflow took from the environment
// (${env.X}, directly or through vars; values of at least four bytes), as
// it is or URL-escaped, with its reference, "${env.X}". Tokens and
// passwords belong in the environment, and a page, Chrome or an exception
// may quote them back in an error.
func (w *Workflow) Redact(msg string) string {
	return w.secrets.redact(msg)
}

// secretSet holds the values a workflow took from the environment, longest
// first, so that a value that contains another goes whole.
type secretSet []secretValue

// secretValue is one value, its reference, and escaped: the value in any
// mix of literal characters and the %XX escapes of their UTF-8 bytes
// (either case of hex), a space also as "+". Go and Chrome escape URLs
// differently (Chrome writes a space as %20 and leaves "!" and "|"), and
// only the value's span is replaced: the rest of a message stays as it was.
type secretValue struct {
	value, ref string
	escaped    *regexp.Regexp
}

// add notes that ${env.name} gave v.
func (s *secretSet) add(name, v string) {
	ref := "${env." + name + "}"
	var b strings.Builder
	for _, r := range v {
		b.WriteString("(?:" + regexp.QuoteMeta(string(r)) + "|")
		for _, c := range []byte(string(r)) {
			fmt.Fprintf(&b, "%%(?i:%02x)", c)
		}
		if r == ' ' {
			b.WriteString(`|\+`)
		}
		b.WriteString(")")
	}
	i, found := slices.BinarySearchFunc(*s, v, func(e secretValue, v string) int {
		return cmp.Or(len(v)-len(e.value), strings.Compare(e.value, v))
	})
	if found {
		(*s)[i].ref = ref
		return
	}
	*s = slices.Insert(*s, i, secretValue{value: v, ref: ref, escaped: regexp.MustCompile(b.String())})
}

// redact replaces in msg each value with its reference.
func (s secretSet) redact(msg string) string {
	for _, v := range s {
		msg = strings.ReplaceAll(msg, v.value, v.ref)
		if strings.Contains(msg, "%") || strings.Contains(msg, "+") {
			msg = v.escaped.ReplaceAllLiteralString(msg, v.ref)
		}
	}
	return msg
}

// BrowserConfig is the workflow's browser block.
type BrowserConfig struct {
	// Headless is nil when the workflow leaves the choice to the command line
	// (default headless).
	Headless       *bool
	ViewportWidth  int
	ViewportHeight int
	Timeout        time.Duration // default per-action timeout
}

// SessionConfig is the workflow's session block.
type SessionConfig struct {
	IdleTimeout time.Duration
	MaxDuration time.Duration
	Blocklist   []string
	Allowlist   []string
}

// LoginCheck tells whether the profile is still logged in: the runner opens
// URL and looks for LoggedInSelector (must be present) and
// LoginWallSelector (must be absent).
type LoginCheck struct {
	URL               string
	LoggedInSelector  string
	LoginWallSelector string
	Line              int
	urlLine           int // the line of url's value, 0 when it is not a valid URL
}

// Step kinds.
const (
	StepNavigate   = "navigate"
	StepClick      = "click"
	StepType       = "type"
	StepPress      = "press"
	StepSelect     = "select"
	StepWaitFor    = "wait_for"
	StepExtract    = "extract"
	StepScreenshot = "screenshot"
	StepEvaluate   = "evaluate"
	StepAssert     = "assert"
	StepSleep      = "sleep"
	StepOpenTab    = "open_tab"
	StepSwitchTab  = "switch_tab"
	StepCloseTab   = "close_tab"
	StepSnapshot   = "snapshot"
)

// Step is one step of a workflow. Kind says which of the fields matter.
type Step struct {
	Index   int // 0-based position in steps
	Line    int // line of the step in the file
	Name    string
	Kind    string
	Timeout time.Duration // 0 = the browser default
	Retries int

	URL        string // navigate, open_tab, wait_for/assert url pattern
	Selector   string
	Text       string // type (secret: never logged), assert text
	Key        string // press
	Value      string // select
	Extract    string // extract kind: text, attribute, html, value, list
	Attribute  string // extract attribute
	As         string // output name for extract and evaluate
	Expression string // evaluate
	File       string // screenshot, relative to the artifacts dir
	FullPage   bool
	State      string // wait_for: visible or hidden
	Clear      bool   // type: clear the field first
	Duration   time.Duration
	Tab        string // switch_tab, close_tab
	Note       string // snapshot
}

// Label is how progress lines and results name the step.
func (s Step) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Kind
}
