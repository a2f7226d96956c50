package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"director/errcode"
)

// DefaultActionTimeout bounds one action when neither the action nor the
// options say otherwise.
const DefaultActionTimeout = 30 * time.Second

// closeTimeout bounds a graceful browser close.
const closeTimeout = 30 * time.Second

// Options configure a session.
type Options struct {
	ID            string     // "" = NewID()
	Profile       string     // the profile name, "" for incognito (audit only)
	Launch        LaunchFunc // required: starts the browser
	Policy        Policy
	IdleTimeout   time.Duration // 0 = no idle limit
	MaxDuration   time.Duration // 0 = no duration limit
	ActionTimeout time.Duration // 0 = DefaultActionTimeout
	Audit         AuditSink     // nil = no audit trail
	Log           *slog.Logger  // nil = discard
	// LoginWallSelector matches the site's login form or sign-in page
	// (a workflow's login_check.login_wall_selector). An action that fails
	// for want of an element or in time on a page that shows it is
	// human_required: the login has expired. "" = no such check. The wall
	// must be shown, and LoggedInSelector (when set) must not match.
	LoginWallSelector string
	LoggedInSelector  string
}

// Session is one live browser bound to a profile. Its methods are safe for
// concurrent use; actions run one at a time.
type Session struct {
	o  Options
	id string

	actMu sync.Mutex // one action (or restart) at a time

	mu           sync.Mutex // guards the fields below
	state        State
	startedAt    time.Time
	lastActionAt time.Time
	actions      int
	tabs         []*tab
	cur          *tab
	curGone      *tab // the current tab, when its page closed it (see popups.go)
	nextTab      int
	browser      Browser
	fatal        error // set when a limit or the blocklist ends the session
	ending       bool
	// killedAtClose: the end had to kill Chrome (see CloseFor).
	killedAtClose bool
	restarting    bool
	endReason     EndReason
	idle          *time.Timer
	maxT          *time.Timer
	// Popups (see popups.go): pages a tab opened that have no handle yet,
	// handles given to popups still being attached, and why the tab of a
	// handle went away.
	pending  map[target.ID]*pendingPopup
	reserved map[string]bool
	gone     map[string]string
	changed  chan struct{} // closed and replaced on every change of the above or of tabs

	ctx    context.Context // lives until the session ends
	cancel context.CancelCauseFunc
	done   chan struct{}
}

type tab struct {
	handle   string
	ctx      context.Context
	cancel   context.CancelFunc // nil for the browser's first tab
	targetID target.ID          // guarded by Session.mu
	url      string             // guarded by Session.mu
	popup    bool               // opened by a page of the session, not by open_tab
	opener   string             // the handle of the tab that opened the popup, when known
}

// New returns a session in state created. Start launches its browser.
func New(o Options) (*Session, error) {
	if o.Launch == nil {
		return nil, errcode.New(errcode.Internal, "session: no launch func").WithHint("pass Options.Launch")
	}
	if o.ID == "" {
		o.ID = NewID()
	} else if !ValidID(o.ID) {
		return nil, errcode.New(errcode.InvalidInput, "bad session id %q", o.ID).WithHint("session ids are 6 characters of a-z and 2-7; leave it empty for a new one")
	}
	for _, p := range append(append([]string{}, o.Policy.Blocklist...), o.Policy.Allowlist...) {
		if err := ValidatePattern(p); err != nil {
			return nil, errcode.Hinted(err, errcode.InvalidAction, "fix the blocklist or allowlist entry", "bad domain pattern")
		}
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = DefaultActionTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Session{o: o, id: o.ID, state: StateCreated, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		pending: map[target.ID]*pendingPopup{}, reserved: map[string]bool{}, gone: map[string]string{}, changed: make(chan struct{})}, nil
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// Done is closed when the session has ended and its browser is closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is the error that ended the session early (idle_timeout and
// max_duration as errcode.Timeout, domain_blocked, browser crash), or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// EndReason is why the session ended, "" while it runs.
func (s *Session) EndReason() EndReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateClosed {
		return ""
	}
	return s.endReason
}

// Info returns the session's bookkeeping.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := Info{ID: s.id, Profile: s.o.Profile, State: s.state, StartedAt: s.startedAt,
		LastActionAt: s.lastActionAt, ActionCount: s.actions, Tabs: []TabInfo{}}
	if s.state == StateClosed {
		in.EndReason = s.endReason
	}
	for _, t := range s.tabs {
		in.Tabs = append(in.Tabs, TabInfo{Handle: t.handle, URL: t.url, Current: t == s.cur, Opener: t.opener})
	}
	return in
}

// Start launches the browser, opens tab t1, arms the limits and records the
// session_start event.
func (s *Session) Start(ctx context.Context) error {
	s.actMu.Lock()
	defer s.actMu.Unlock()
	s.mu.Lock()
	if s.state != StateCreated {
		s.mu.Unlock()
		return errcode.New(errcode.InvalidAction, "session %s was already started", s.id).WithHint("start a new session")
	}
	s.mu.Unlock()
	b, err := s.o.Launch(ctx)
	if err != nil {
		if errcode.Of(err) == errcode.Internal {
			err = errcode.Hinted(err, errcode.BrowserLaunchFailed, "check the Chrome path (--chrome or CHROME_PATH) and that the profile is not open elsewhere", "cannot start the browser")
		}
		return s.startFailed(ctx, err, s.finish)
	}
	now := time.Now()
	s.mu.Lock()
	s.browser = b
	s.startedAt, s.lastActionAt = now, now
	s.state = StateActive
	s.mu.Unlock()
	first := &tab{ctx: b.Context()}
	if err := s.attach(first); err != nil {
		return s.startFailed(ctx, err, s.end)
	}
	if err := s.guard(b); err != nil {
		return s.startFailed(ctx, err, s.end)
	}
	if err := s.follow(b); err != nil {
		return s.startFailed(ctx, err, s.end)
	}
	s.watch(b)
	s.mu.Lock()
	if s.o.MaxDuration > 0 {
		s.maxT = time.AfterFunc(s.o.MaxDuration, func() {
			s.end(context.Background(), EndMaxDuration, errcode.New(errcode.Timeout, "session %s reached its max duration of %s", s.id, s.o.MaxDuration).
				WithHint("raise session.max_duration or split the work into shorter runs"))
		})
	}
	s.mu.Unlock()
	s.resetIdle()
	s.record(ctx, Event{Kind: EventSessionStart, Tab: first.handle})
	s.o.Log.Info("session started", "session", s.id, "profile", s.o.Profile)
	return nil
}

// attach registers a tab whose chromedp context is t.ctx: it gives it the
// next handle, tracks its URL and puts it under the domain policy.
func (s *Session) attach(t *tab) error {
	if err := chromedp.Do(t.ctx); err != nil {
		return s.cdpErr(err, "cannot open a tab")
	}
	c := chromedp.FromContext(t.ctx)
	if c == nil || c.Target == nil {
		return errcode.New(errcode.Internal, "session: the browser context has no tab").WithHint("this is a bug in director; report it")
	}
	s.mu.Lock()
	t.targetID = c.Target.TargetID
	s.mu.Unlock()
	// Every tab behaves as the focused page, in front or not: an unfocused
	// page fires no focus event when an action focuses one of its elements,
	// so pages that react to focus (editors swapped in on focus, pickers
	// that open on it) would act on which tab the browser put in front.
	if _, err := cdp.Call(t.ctx, c.Target, emulation.SetFocusEmulationEnabled,
		emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		return s.cdpErr(err, "cannot set up the tab")
	}
	// WebSockets to refused hosts go offline before they leave the
	// browser (CDP Fetch, which guard uses, does not see them).
	if rules := s.o.Policy.webSocketRules(); len(rules) > 0 {
		if _, err := cdp.Call(t.ctx, c.Target, network.EmulateNetworkConditionsByRule,
			network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: rules}); err != nil {
			return errcode.Hinted(err, errcode.BrowserLaunchFailed, "use a newer Chrome (one with Network.emulateNetworkConditionsByRule), or run without session.blocklist and session.allowlist",
				"cannot put the tab's WebSockets under the domain blocklist")
		}
	}
	if err := chromedp.Listen(t.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventWebSocketCreated:
			if why := s.o.Policy.Check(ev.URL); why != "" {
				go func() {
					s.mu.Lock()
					handle := t.handle
					s.mu.Unlock()
					s.record(context.Background(), Event{Kind: EventAction, Action: EventActionWebSocket, Tab: handle, Domain: Host(ev.URL),
						Code: errcode.DomainBlocked, Detail: "websocket blocked: " + why})
					s.o.Log.Warn("blocked websocket", "session", s.id, "tab", handle, "host", Host(ev.URL))
				}()
			}
		case *page.EventFrameNavigated:
			if ev.Frame != nil && ev.Frame.ParentID == "" {
				s.setURL(t, ev.Frame.URL+ev.Frame.URLFragment)
			}
		case *page.EventNavigatedWithinDocument:
			if string(ev.FrameID) == string(c.Target.TargetID) {
				s.setURL(t, ev.URL)
			}
		}
	}); err != nil {
		return s.cdpErr(err, "cannot watch the tab")
	}
	if u, err := chromedp.Run(t.ctx, chromedp.Evaluate[string](`location.href`)); err == nil {
		s.setURL(t, u)
	}
	s.mu.Lock()
	if t.handle == "" {
		s.nextTab++
		t.handle = fmt.Sprintf("t%d", s.nextTab)
		s.tabs = append(s.tabs, t)
		s.notifyLocked()
	}
	if s.cur == nil && !t.popup {
		s.cur = t
	}
	s.mu.Unlock()
	return nil
}

func (s *Session) setURL(t *tab, u string) {
	s.mu.Lock()
	t.url = u
	s.mu.Unlock()
}

func (s *Session) urlOf(t *tab) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.url
}

// guard puts the requests of browser b under the domain policy: Fetch is
// enabled on the browser session, so top-level navigations, redirect hops,
// link clicks, frames and popups of every tab pause until onRequestPaused
// decides, and so do the other requests (subresources, fetch(), beacons,
// workers' requests) whose URL may name a refused host (see
// Policy.requestPatterns): with a blocklist only, a request to any other
// host never pauses, so the blocklist costs no round trip on it. Fetch does
// not see WebSocket handshakes: attach puts each tab under
// Policy.webSocketRules for those.
func (s *Session) guard(b Browser) error {
	if len(s.o.Policy.Blocklist) == 0 && len(s.o.Policy.Allowlist) == 0 {
		return nil
	}
	ctx := b.Context()
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil {
		return errcode.New(errcode.Internal, "session: the browser context has no browser").WithHint("this is a bug in director; report it")
	}
	bs := c.Browser
	if err := chromedp.ListenBrowser(ctx, func(ev any) {
		if ev, ok := ev.(*fetch.EventRequestPaused); ok {
			if ev.Request != nil && ev.ResourceType == network.ResourceTypeDocument {
				// Here, on the browser's message loop: a popup's first
				// request comes before its commit (see popups.go).
				s.refusePopup(ev.FrameID, ev.Request.URL)
			}
			go s.onRequestPaused(ctx, bs, ev)
		}
	}); err != nil {
		return s.cdpErr(err, "cannot watch the browser's requests")
	}
	_, err := cdp.Call(ctx, bs, fetch.Enable, fetch.EnableParams{Patterns: s.o.Policy.requestPatterns()})
	return s.cdpErr(err, "cannot put the browser under the domain blocklist")
}

// onRequestPaused decides one document request: continue it, or fail it
// before it leaves the browser and end the session when it is a top-level
// navigation (of a tab or a popup) to a domain the policy refuses.
func (s *Session) onRequestPaused(bctx context.Context, bs cdp.Session, ev *fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	u := ""
	if ev.Request != nil {
		u = ev.Request.URL
	}
	why := s.o.Policy.Check(u)
	if why == "" {
		if _, err := cdp.Call(ctx, bs, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID}); err != nil {
			s.o.Log.Debug("continue request", "session", s.id, "err", err)
		}
		return
	}
	if ev.ResourceType != network.ResourceTypeDocument {
		// A subresource (image, script, fetch(), beacon, a worker's
		// request): failed and recorded; the page goes on without it.
		if _, err := cdp.Call(ctx, bs, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}); err != nil {
			s.o.Log.Debug("fail request", "session", s.id, "err", err)
		}
		kind := strings.ToLower(string(ev.ResourceType))
		s.record(context.Background(), Event{Kind: EventAction, Action: EventActionRequest, Tab: s.handleOfFrame(ev.FrameID), Domain: Host(u),
			Code: errcode.DomainBlocked, Detail: kind + " request blocked: " + why})
		s.o.Log.Warn("blocked request", "session", s.id, "host", Host(u), "kind", kind)
		return
	}
	// A page's main frame has the id of its target.
	topLevel := false
	if infos, err := chromedp.Targets(ctx); err == nil {
		for _, in := range infos {
			if string(in.TargetID) == string(ev.FrameID) && in.Type == "page" {
				topLevel = true
			}
		}
	} else {
		topLevel = true // cannot tell: be strict
	}
	handle := "popup"
	s.mu.Lock()
	for _, t := range s.tabs {
		if string(t.targetID) == string(ev.FrameID) {
			handle = t.handle
		}
	}
	s.mu.Unlock()
	how := "navigation"
	if ev.RedirectedRequestID != "" {
		how = "redirect"
	}
	berr := errcode.New(errcode.DomainBlocked, "%s to %s refused: %s", how, Host(u), why).
		WithHint("%s", s.o.Policy.hint(u))
	if topLevel {
		s.mu.Lock()
		if s.fatal == nil {
			s.fatal = berr
		}
		s.mu.Unlock()
	}
	if _, err := cdp.Call(ctx, bs, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}); err != nil {
		s.o.Log.Debug("fail request", "session", s.id, "err", err)
	}
	frame := "frame"
	if topLevel {
		frame = "top-level"
	}
	if handle == "popup" && !topLevel {
		handle = ""
	}
	s.record(context.Background(), Event{Kind: EventAction, Action: how, Tab: handle, Domain: Host(u),
		Code: errcode.DomainBlocked, Detail: frame + " " + how + " blocked: " + why})
	if topLevel {
		// The session ends with berr, which the caller reports: a warning
		// would only say it twice.
		s.o.Log.Info("blocked request", "session", s.id, "tab", handle, "host", Host(u), "kind", how)
		go s.end(context.Background(), EndDomainBlocked, berr)
		return
	}
	s.o.Log.Warn("blocked request", "session", s.id, "tab", handle, "host", Host(u), "kind", how)
}

// handleOfFrame is the handle of the tab whose main frame is frame, "" for
// other frames and for workers.
func (s *Session) handleOfFrame(frame cdp.FrameID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handleOfLocked(target.ID(frame))
}

// ErrBrowserExited is under the error of a session whose browser exited
// on its own (a crash, a kill): its end reason is browser_crashed.
var ErrBrowserExited = errors.New("the browser exited unexpectedly")

// watch ends the session as browser_crashed when b exits on its own.
func (s *Session) watch(b Browser) {
	go func() {
		select {
		case <-b.Done():
		case <-s.done:
			return
		}
		s.mu.Lock()
		unexpected := s.browser == b && !s.ending && !s.restarting && s.state != StateClosed
		s.mu.Unlock()
		if unexpected {
			s.end(context.Background(), EndBrowserCrashed, errcode.Hinted(ErrBrowserExited, errcode.Internal,
				"run again; if it keeps crashing, run with --headed or --log-level debug to see why", "session %s", s.id))
		}
	}()
}

func (s *Session) resetIdle() {
	if s.o.IdleTimeout <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending || s.state == StateClosed {
		return
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(s.o.IdleTimeout, func() {
			s.end(context.Background(), EndIdleTimeout, errcode.New(errcode.Timeout, "session %s was idle for %s", s.id, s.o.IdleTimeout).
				WithHint("raise session.idle_timeout, or shorten sleeps and waits between actions"))
		})
		return
	}
	s.idle.Reset(s.o.IdleTimeout)
}

func (s *Session) stopIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle != nil {
		s.idle.Stop()
	}
}

// Close ends the session with reason: it closes the browser gracefully (so
// Chrome writes cookies and storage to disk) and records session_end. It
// waits for an end already under way and is safe to call more than once.
func (s *Session) Close(ctx context.Context, reason EndReason) error {
	return s.CloseFor(ctx, reason, nil)
}

// CloseFor is Close for a session that ends because of err (a failed
// step, a login check that found a login wall): the session_end event then
// carries err's code, as it does for an error that ended the session by
// itself. A nil err is Close.
//
// It fails (ErrKilledAtClose) when Chrome did not exit after Browser.close
// and had to be killed: cookies and storage written since its last flush
// may be missing from the profile, which must then not be snapshotted.
func (s *Session) CloseFor(ctx context.Context, reason EndReason, err error) error {
	s.end(ctx, reason, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killedAtClose {
		return killedAtClose()
	}
	return nil
}

// ErrKilledAtClose is under the error of a close that had to kill Chrome.
var ErrKilledAtClose = errors.New("Chrome did not exit after Browser.close and was killed: cookies and storage written since its last flush may be missing from the profile")

func killedAtClose() error {
	return errcode.Hinted(ErrKilledAtClose, errcode.Timeout,
		"no snapshot was taken, so the latest good one is kept; Chrome was too slow to close (an overloaded machine, or a page that kept it busy): run the workflow again, with a longer --close-timeout (DIRECTOR_CLOSE_TIMEOUT) if it keeps happening", "")
}

// wasKilled says whether closing b had to kill its process (launcher's
// Browser knows; other Browsers never kill).
func wasKilled(b Browser) bool {
	k, ok := b.(interface{ Killed() bool })
	return ok && k.Killed()
}

// end is the one path every ending takes.
// startFailed ends a session whose Start failed with err, through end or
// finish (before a browser runs), and returns the error to report. A start
// the caller cancelled (Ctrl-C while Chrome starts) is interrupted and
// user_stopped: what the launch says about the Chrome it had to kill is no
// launch failure.
func (s *Session) startFailed(ctx context.Context, err error, end func(context.Context, EndReason, error)) error {
	reason := EndFailed
	if errors.Is(ctx.Err(), context.Canceled) {
		err, reason = interrupted(ctx), EndUserStopped
	}
	end(ctx, reason, err)
	return err
}

func (s *Session) end(ctx context.Context, reason EndReason, cause error) {
	s.mu.Lock()
	if s.ending || s.state == StateClosed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.ending = true
	if cause != nil && s.fatal == nil {
		s.fatal = cause
	}
	if s.fatal != nil && errcode.Of(s.fatal) == errcode.DomainBlocked {
		reason = EndDomainBlocked
	}
	b := s.browser
	tabs := append([]*tab(nil), s.tabs...)
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.maxT != nil {
		s.maxT.Stop()
	}
	s.mu.Unlock()
	s.cancel(cause)
	if b != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		if err := b.Close(cctx); err != nil {
			s.o.Log.Warn("closing the browser", "session", s.id, "err", err)
		}
		cancel()
		if wasKilled(b) {
			s.mu.Lock()
			s.killedAtClose = true
			s.mu.Unlock()
		}
	}
	for _, t := range tabs {
		if t.cancel != nil {
			t.cancel()
		}
	}
	s.finish(ctx, reason, nil)
}

// finish marks the session closed and records session_end.
func (s *Session) finish(ctx context.Context, reason EndReason, cause error) {
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return
	}
	started := s.startedAt
	s.state = StateClosed
	s.endReason = reason
	if cause != nil && s.fatal == nil {
		s.fatal = cause
	}
	n := s.actions
	s.mu.Unlock()
	var d time.Duration
	if !started.IsZero() {
		d = time.Since(started)
	}
	e := Event{Kind: EventSessionEnd, Reason: reason, ActionCount: n, Duration: d, Detail: "reason=" + string(reason)}
	if err := s.Err(); err != nil {
		e.Code = errcode.Of(err)
	}
	s.record(context.WithoutCancel(ctx), e)
	s.o.Log.Info("session ended", "session", s.id, "reason", reason, "actions", n)
	close(s.done)
}

func (s *Session) record(ctx context.Context, e Event) {
	if s.o.Audit == nil {
		return
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.SessionID, e.Profile = s.id, s.o.Profile
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.o.Audit.Record(rctx, e); err != nil {
		s.o.Log.Warn("cannot record an audit event", "session", s.id, "kind", e.Kind, "err", err)
	}
}

// Resume takes a paused session back to active, after a human solved what
// paused it.
func (s *Session) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case StatePaused:
		s.state = StateActive
		return nil
	case StateActive:
		return nil
	}
	return s.closedErrLocked()
}

func (s *Session) pause() {
	s.mu.Lock()
	if s.state == StateActive {
		s.state = StatePaused
	}
	s.mu.Unlock()
}

func (s *Session) closedErrLocked() error {
	if s.fatal != nil {
		return s.fatal
	}
	return errcode.New(errcode.SessionNotFound, "session %s has ended (%s)", s.id, s.endReason).WithHint("start a new session")
}

// usable says whether actions are accepted now.
func (s *Session) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == StateCreated:
		return errcode.New(errcode.InvalidAction, "session %s is not started", s.id).WithHint("call Start first")
	case s.state == StateClosed || s.ending:
		return s.closedErrLocked()
	case s.state == StatePaused:
		return errcode.New(errcode.HumanRequired, "session %s is paused: a human is needed", s.id).WithHint("solve the login wall or CAPTCHA in the browser, then resume the session")
	case s.fatal != nil:
		return s.fatal
	}
	return nil
}

// anyTab returns an open tab, nil when there is none.
func (s *Session) anyTab() *tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tabs) == 0 {
		return nil
	}
	return s.tabs[0]
}

// Do runs one action and records it in the audit trail. The blocklist is
// checked before the action (the tab's current page and, for navigate and
// open_tab, the target URL) and on every navigation it causes.
func (s *Session) Do(ctx context.Context, a Action) (Result, error) {
	s.actMu.Lock()
	defer s.actMu.Unlock()
	start := time.Now()
	handle := a.Tab
	if a.Type == ActSwitchTab || a.Type == ActCloseTab || a.Type == ActOpenTab {
		handle = ""
	}
	var res Result
	err := s.usable()
	if err != nil && s.Info().State == StateClosed {
		return res, err // nothing to attribute the attempt to
	}
	var t *tab
	if err == nil {
		// A named tab may be a popup that is still opening: wait for it
		// as long as the action may take.
		timeout := a.Timeout
		if timeout <= 0 {
			timeout = s.o.ActionTimeout
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		t, err = s.tabFor(wctx, handle)
		cancel()
		if err != nil && handle == "" && (a.Type == ActSwitchTab || a.Type == ActOpenTab || a.Type == ActCloseTab && a.Tab != "") {
			// The current tab closed itself: these actions name where to
			// go on, and run from any open tab.
			if other := s.anyTab(); other != nil {
				t, err = other, nil
			}
		}
	}
	activity := a.Type != ActSleep // a sleeping session is idle
	if err == nil {
		if activity {
			s.stopIdle()
		}
		err = s.checkPolicy(ctx, t, a)
		if err == nil {
			res, err = s.run(ctx, t, a)
		}
		err = s.classify(ctx, err)
		s.mu.Lock()
		s.actions++
		s.lastActionAt = time.Now()
		s.mu.Unlock()
		if activity {
			s.resetIdle()
		}
	}
	e := Event{Kind: EventAction, Action: string(a.Type), Duration: time.Since(start), Code: codeOf(err), Detail: detailOf(a)}
	if t != nil {
		e.Tab = t.handle
		e.Domain = Host(s.urlOf(t))
	}
	if res.Tab != "" {
		e.Tab = res.Tab
	}
	if a.Type == ActNavigate || a.Type == ActOpenTab || a.Type == ActLoginCheck {
		if h := Host(a.URL); h != "" {
			e.Domain = h
		}
	}
	s.record(ctx, e)
	return res, err
}

func codeOf(err error) errcode.Code {
	if err == nil {
		return ""
	}
	return errcode.Of(err)
}

// detailOf describes an action for the audit trail without secrets: never
// typed text, values or expressions; at most their length.
func detailOf(a Action) string {
	switch a.Type {
	case ActType:
		return fmt.Sprintf("selector=%s len=%d", a.Selector, len(a.Text))
	case ActEvaluate:
		return fmt.Sprintf("expression len=%d", len(a.Expression))
	case ActSelect:
		return fmt.Sprintf("selector=%s len=%d", a.Selector, len(a.Value))
	case ActSleep:
		return a.Duration.String()
	case ActSwitchTab, ActCloseTab:
		return a.Tab
	case ActPress:
		if a.Selector != "" {
			return "selector=" + a.Selector
		}
		return ""
	}
	if a.Selector != "" {
		return "selector=" + a.Selector
	}
	return ""
}

// checkPolicy refuses an action whose page or target is not allowed; that
// ends the session with domain_blocked.
func (s *Session) checkPolicy(ctx context.Context, t *tab, a Action) error {
	check := func(u, what string) error {
		why := s.o.Policy.Check(u)
		if why == "" {
			return nil
		}
		err := errcode.New(errcode.DomainBlocked, "%s %s refused: %s", what, Host(u), why).
			WithHint("%s", s.o.Policy.hint(u))
		s.mu.Lock()
		if s.fatal == nil {
			s.fatal = err
		}
		s.mu.Unlock()
		go s.end(context.WithoutCancel(ctx), EndDomainBlocked, err)
		return err
	}
	if err := check(s.urlOf(t), "acting on"); err != nil {
		return err
	}
	switch a.Type {
	case ActNavigate, ActOpenTab, ActLoginCheck:
		return check(a.URL, "navigation to")
	}
	return nil
}

// classify prefers the error that ended the session (blocked domain,
// limits) over the error an action saw because of it.
func (s *Session) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if f := s.Err(); f != nil {
		return f
	}
	if ctx.Err() == nil && errcode.Of(err) == errcode.Internal && errors.Is(err, context.Canceled) {
		// The action's own context ended, not the caller's: the browser
		// went away under it, and watch may not have ended the session yet.
		if f := s.crashed(crashWait); f != nil {
			return f
		}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// The caller stopped the action (Ctrl-C, SIGTERM): whatever the
		// action saw of that (a cancelled command, a wait cut short) is
		// an interruption, not a failure of the step.
		switch errcode.Of(err) {
		case errcode.Internal, errcode.Timeout, errcode.ElementNotFound, errcode.ElementStale:
			return interrupted(ctx)
		}
	}
	if ctx.Err() != nil && errcode.Of(err) == errcode.Internal {
		return errcode.Hinted(context.Cause(ctx), errcode.Timeout, "give the run more time", "the caller's deadline passed")
	}
	return err
}

// crashWait bounds how long classify waits to learn whether a cancelled
// action's browser exited.
const crashWait = 3 * time.Second

// crashed waits up to limit for the session's browser to exit and watch to
// end the session, and returns the session's error then; nil when the
// browser still runs.
func (s *Session) crashed(limit time.Duration) error {
	s.mu.Lock()
	b := s.browser
	s.mu.Unlock()
	if b == nil {
		return s.Err()
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	select {
	case <-b.Done():
	case <-deadline.C:
		return nil
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if f := s.Err(); f != nil {
			return f
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return s.Err()
		}
	}
}

// interrupted is the error of an action whose caller cancelled ctx.
func interrupted(ctx context.Context) error {
	return errcode.Hinted(context.Cause(ctx), errcode.Interrupted, "the run was stopped (Ctrl-C or SIGTERM); run it again when ready", "interrupted")
}

// cdpErr turns a chromedp error into a coded one.
func (s *Session) cdpErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return err
	}
	switch {
	case staleMessage(err.Error()):
		return errcode.Hinted(err, errcode.ElementStale, "the page changed under the action; add a wait_for before it or set retries", format, args...)
	case errors.Is(err, context.DeadlineExceeded):
		return errcode.Hinted(err, errcode.Timeout, "raise the step's timeout or browser.timeout", format, args...)
	}
	return errcode.Wrap(err, errcode.Internal, format, args...)
}

// staleMessage reports whether a CDP error message says that the node an
// action resolved left the document (or its page's JavaScript context went
// away) before the action used it.
func staleMessage(msg string) bool {
	for _, m := range []string{"No node with given id", "Could not find node", "Node with given id does not belong",
		"Node is detached from document", "Cannot find context with specified id"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// Restart closes the browser gracefully, calls between (for example a
// snapshot of the now closed profile), launches the browser again and
// reopens every tab at its URL, keeping the tab handles. The limits keep
// running; the session stays the same. When Chrome had to be killed at the
// close, between is not called and Restart fails with ErrKilledAtClose
// under its error, after the relaunch.
func (s *Session) Restart(ctx context.Context, between func(context.Context) error) error {
	s.actMu.Lock()
	defer s.actMu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.stopIdle()
	s.mu.Lock()
	s.restarting = true
	b := s.browser
	tabs := append([]*tab(nil), s.tabs...)
	curHandle := ""
	if s.cur != nil {
		curHandle = s.cur.handle
	}
	urls := make([]string, len(tabs))
	for i, t := range tabs {
		urls[i] = t.url
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.restarting = false
		s.mu.Unlock()
		s.resetIdle()
	}()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	err := b.Close(cctx)
	cancel()
	if err != nil {
		s.o.Log.Warn("closing the browser for a restart", "session", s.id, "err", err)
	}
	for _, t := range tabs {
		if t.cancel != nil {
			t.cancel()
		}
	}
	var betweenErr error
	switch {
	case wasKilled(b):
		// What between would read (a snapshot) may lack Chrome's last
		// writes: it is not called, and the restart goes on.
		betweenErr = killedAtClose()
	case between != nil:
		betweenErr = between(ctx)
	}
	nb, err := s.o.Launch(ctx)
	if err != nil {
		if errcode.Of(err) == errcode.Internal {
			err = errcode.Wrap(err, errcode.BrowserLaunchFailed, "cannot restart the browser")
		}
		s.mu.Lock()
		s.browser = nil
		s.mu.Unlock()
		go s.end(context.WithoutCancel(ctx), EndFailed, err)
		return errors.Join(betweenErr, err)
	}
	s.mu.Lock()
	s.browser = nb
	s.tabs = nil
	s.cur = nil
	clear(s.pending)
	clear(s.reserved)
	s.notifyLocked()
	s.mu.Unlock()
	s.watch(nb)
	if err := s.guard(nb); err != nil {
		go s.end(context.WithoutCancel(ctx), EndFailed, err)
		return errors.Join(betweenErr, err)
	}
	if err := s.follow(nb); err != nil {
		go s.end(context.WithoutCancel(ctx), EndFailed, err)
		return errors.Join(betweenErr, err)
	}
	for i, old := range tabs {
		// A popup comes back as a plain tab at its URL: same handle, no
		// window.opener any more.
		t := &tab{handle: old.handle, popup: old.popup, opener: old.opener}
		if i == 0 {
			t.ctx = nb.Context()
		} else {
			t.ctx, t.cancel = chromedp.NewContext(nb.Context())
		}
		s.mu.Lock()
		s.tabs = append(s.tabs, t)
		s.mu.Unlock()
		if err := s.attach(t); err != nil {
			return errors.Join(betweenErr, err)
		}
		if u := urls[i]; strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			if s.o.Policy.Check(u) == "" {
				actx, cancel := context.WithTimeout(t.ctx, s.o.ActionTimeout)
				if err := chromedp.Do(actx, chromedp.Navigate(u)); err != nil {
					s.o.Log.Warn("reopening a tab after restart", "session", s.id, "tab", t.handle, "err", err)
				}
				cancel()
			}
		}
		if t.handle == curHandle {
			s.mu.Lock()
			s.cur = t
			s.mu.Unlock()
		}
	}
	return betweenErr
}
