package session

import (
	"context"
	"time"

	"director/errcode"
)

// State is where a session is in its life.
type State string

// The session states. created → active ⇄ paused → closed; closed is final.
const (
	StateCreated State = "created" // New returned it; no browser yet
	StateActive  State = "active"  // the browser runs and actions are accepted
	StatePaused  State = "paused"  // a human is needed; actions fail with human_required until Resume
	StateClosed  State = "closed"  // ended; the id is never reused
)

// EndReason says why a session ended. The values are the stable strings of
// DESIGN.md.
type EndReason string

// The end reasons.
const (
	EndCompleted      EndReason = "completed"
	EndFailed         EndReason = "failed"
	EndIdleTimeout    EndReason = "idle_timeout"
	EndMaxDuration    EndReason = "max_duration"
	EndDomainBlocked  EndReason = "domain_blocked"
	EndHumanRequired  EndReason = "human_required"
	EndUserStopped    EndReason = "user_stopped"
	EndBrowserCrashed EndReason = "browser_crashed"
)

// ReasonFor maps the error that ended a run to the end reason of its
// session; nil is completed.
func ReasonFor(err error) EndReason {
	switch errcode.Of(err) {
	case "":
		return EndCompleted
	case errcode.DomainBlocked:
		return EndDomainBlocked
	case errcode.HumanRequired:
		return EndHumanRequired
	}
	return EndFailed
}

// Event kinds, the same strings the catalog stores.
const (
	EventSessionStart = "session_start"
	EventAction       = "action"
	EventSessionEnd   = "session_end"
)

// Action values of the EventAction events that a page causes rather than a
// step.
const (
	// EventActionPopup: a tab of the session opened a new page (a
	// target=_blank link, window.open) and it became tab Tab; Detail names
	// the opener ("opened by t1"). A popup that closed before it could be
	// attached has Code tab_not_found.
	EventActionPopup = "popup"
	// EventActionTabClosed: tab Tab went away without close_tab (the page
	// closed itself, or crashed); Detail says which.
	EventActionTabClosed = "tab_closed"
	// EventActionRequest: the domain policy refused a request that is not
	// a document (an image, a script, fetch() or XHR, a beacon, a worker's
	// request). The request failed; the session goes on. Code is
	// domain_blocked, Domain the refused host, Detail the resource type.
	EventActionRequest = "request"
	// EventActionWebSocket: the domain policy refused a WebSocket of tab
	// Tab; the connection failed and the session goes on.
	EventActionWebSocket = "websocket"
)

// Event is one audit event. It never holds typed text, evaluated values,
// cookie values or credentials: Detail names a selector, a length, an end
// reason or a blocked host.
type Event struct {
	At          time.Time
	SessionID   string
	Profile     string // "" for incognito
	Kind        string // EventSessionStart, EventAction, EventSessionEnd
	Action      string // the action type, for EventAction
	Tab         string
	Domain      string
	Duration    time.Duration
	Code        errcode.Code // "" on success
	Reason      EndReason    // for EventSessionEnd
	ActionCount int          // for EventSessionEnd
	Detail      string
}

// AuditSink receives the audit events of sessions. Record must be safe for
// concurrent use; an error is logged and does not stop the session.
type AuditSink interface {
	Record(ctx context.Context, e Event) error
}

// AuditFunc adapts a func to AuditSink.
type AuditFunc func(ctx context.Context, e Event) error

// Record calls f.
func (f AuditFunc) Record(ctx context.Context, e Event) error { return f(ctx, e) }

// Browser is a running browser as the launcher gives it (launcher.Browser
// satisfies it): the chromedp context of its first tab, a graceful close and
// a channel closed when the process exits.
type Browser interface {
	Context() context.Context
	Close(ctx context.Context) error
	Done() <-chan struct{}
}

// LaunchFunc starts a browser for a session. The session calls it once at
// Start and again after each Restart.
type LaunchFunc func(ctx context.Context) (Browser, error)

// ActionType names an action.
type ActionType string

// The actions a session performs.
const (
	ActNavigate   ActionType = "navigate"
	ActClick      ActionType = "click"
	ActType       ActionType = "type"
	ActPress      ActionType = "press"
	ActSelect     ActionType = "select"
	ActWaitFor    ActionType = "wait_for"
	ActExtract    ActionType = "extract"
	ActScreenshot ActionType = "screenshot"
	ActEvaluate   ActionType = "evaluate"
	ActAssert     ActionType = "assert"
	ActSleep      ActionType = "sleep"
	ActOpenTab    ActionType = "open_tab"
	ActSwitchTab  ActionType = "switch_tab"
	ActCloseTab   ActionType = "close_tab"
	ActLoginCheck ActionType = "login_check"
)

// Action is one request to the session. Type says which fields matter.
type Action struct {
	Type     ActionType
	Tab      string // the tab to act on; "" = the current tab. For switch_tab/close_tab, the tab to switch to / close.
	URL      string // navigate, open_tab, login_check; a glob for wait_for and assert
	Selector string
	Text     string // type: never logged or recorded; assert: text to find
	Clear    bool   // type: clear the field first
	Key      string // press: a key name (see KeyByName)
	Value    string // select
	// Extract is text, attribute, html, value or list; Attribute the
	// attribute for attribute and (optionally) list.
	Extract    string
	Attribute  string
	Expression string // evaluate
	File       string // screenshot: the file to write (0600), relative to Dir
	Dir        string // screenshot: the directory File is in and never leaves (the artifacts directory)
	FullPage   bool
	State      string // wait_for selector: visible (default) or hidden
	Duration   time.Duration
	// LoggedInSelector and LoginWallSelector are for login_check.
	LoggedInSelector  string
	LoginWallSelector string
	Timeout           time.Duration // 0 = the session's action timeout
}

// Result is what an action gives back.
type Result struct {
	Tab   string // the tab it ran on (open_tab: the new tab)
	URL   string // the tab's URL afterwards
	Value any    // extract, evaluate
	File  string // screenshot
}

// TabInfo describes one tab.
type TabInfo struct {
	Handle  string `json:"handle"`
	URL     string `json:"url"`
	Current bool   `json:"current"`
	// Opener is the handle of the tab whose page opened this one (a
	// popup); "" for tabs the session opened.
	Opener string `json:"opener,omitempty"`
}

// Info is a snapshot of a session's bookkeeping.
type Info struct {
	ID           string    `json:"id"`
	Profile      string    `json:"profile,omitempty"`
	State        State     `json:"state"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	LastActionAt time.Time `json:"last_action_at,omitzero"`
	ActionCount  int       `json:"action_count"`
	Tabs         []TabInfo `json:"tabs"`
	EndReason    EndReason `json:"end_reason,omitempty"`
}
