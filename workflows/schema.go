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

	secrets map[string]string // values of ${env.X} → "${env.X}"; see Redact
}

// Redact replaces in msg every value the workflow took from the environment
// (${env.X}, directly or through vars; values of at least four bytes), and
// its URL-escaped forms, with its reference, "${env.X}". Tokens and passwords belong in the environment,
// and a page, Chrome or an exception may quote them back in an error.
func (w *Workflow) Redact(msg string) string {
	return redact(w.secrets, msg)
}

// redact replaces in msg each key of secrets with its value. The keys hold
// a value's URL-escaped forms as Go writes them, but Chrome escapes URLs
// its own way (a space as %20, "!" and "|" as they are): a value is also
// found with any of its bytes written as %XX (and a space as "+"), and
// only that span is replaced, the rest of msg left as it was.
func redact(secrets map[string]string, msg string) string {
	if len(secrets) == 0 {
		return msg
	}
	msg = replaceSecrets(secrets, msg)
	if !strings.Contains(msg, "%") {
		return msg
	}
	for v, ref := range secrets {
		if strings.Contains(v, "%") {
			continue // an escaped form: its value is a key too
		}
		msg = escapedForm(v).ReplaceAllLiteralString(msg, ref)
	}
	return msg
}

// escapedForm matches v with each of its characters as it is or as the
// %XX escapes of its UTF-8 bytes (either case of hex), and a space also as
// "+".
func escapedForm(v string) *regexp.Regexp {
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
	return regexp.MustCompile(b.String())
}

// replaceSecrets replaces in msg each key of secrets found in it.
func replaceSecrets(secrets map[string]string, msg string) string {
	vals := make([]string, 0, len(secrets))
	for v := range secrets {
		if strings.Contains(msg, v) {
			vals = append(vals, v)
		}
	}
	// Longest first, so a value that contains another goes whole.
	slices.SortFunc(vals, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	for _, v := range vals {
		msg = strings.ReplaceAll(msg, v, secrets[v])
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
