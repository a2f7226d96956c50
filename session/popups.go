package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"director/errcode"
)

// Popups. A page of the session that opens a new window (a target=_blank
// link, window.open) creates a page target whose opener is one of the
// session's tabs. The session follows those targets on the browser session
// (Target.setDiscoverTargets, then targetCreated / targetInfoChanged /
// targetDestroyed) and gives each the next handle once its first document
// has committed and the domain policy let it through:
//
//   - targetCreated (type page, opener a tab of the session or a popup still
//     pending): the popup is pending, with no handle yet.
//   - Fetch.requestPaused for the popup's frame with a refused URL marks it
//     refused, on the same event loop and so before its commit (see guard).
//   - the first targetInfoChanged with a URL (the commit): a refused popup
//     is closed and never gets a handle; any other one gets the next handle,
//     in the order the commits arrive, and is attached in the background.
//   - targetDestroyed of a tab: the tab leaves the session; its handle is
//     remembered as gone, so a later step on it fails with tab_not_found and
//     says why.
//
// A popup never becomes the current tab by itself: steps keep acting on the
// tab they acted on until a switch_tab (or an action's Tab) names the popup.
// When the current tab closes itself, the session has no current tab until
// a switch_tab: a step without a tab then fails with tab_not_found and names
// the opener, rather than running on whichever tab the timing gives.

// pendingPopup is a page a tab opened that has no handle yet.
type pendingPopup struct {
	opener  target.ID
	refused bool // the policy refused its first navigation
}

// whyPageClosed is why a tab whose page closed itself left the session
// (the value of Session.gone).
const whyPageClosed = "the page closed it"

// notifyLocked wakes the waiters of tabFor. Call it with s.mu held after
// any change to the tabs, the pending popups or the reserved handles.
func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// follow makes the session follow the new pages that the tabs of browser b
// open (see above). It runs once per browser, after the first tab is
// attached.
func (s *Session) follow(b Browser) error {
	ctx := b.Context()
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil {
		return errcode.New(errcode.Internal, "session: the browser context has no browser").WithHint("this is a bug in director; report it")
	}
	// The func runs on the loop that reads the browser's messages: it only
	// updates the bookkeeping and hands slow work to goroutines.
	if err := chromedp.ListenBrowser(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *target.EventTargetCreated:
			s.onTargetCreated(ev.TargetInfo)
		case *target.EventTargetInfoChanged:
			s.onTargetInfoChanged(b, ev.TargetInfo)
		case *target.EventTargetDestroyed:
			s.onTargetGone(b, ev.TargetID, whyPageClosed)
		case *target.EventTargetCrashed:
			s.onTargetGone(b, ev.TargetID, "its page crashed")
		}
	}); err != nil {
		return s.cdpErr(err, "cannot watch the browser's tabs")
	}
	_, err := cdp.Call(ctx, c.Browser, target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true})
	return s.cdpErr(err, "cannot watch the browser's tabs")
}

// ownsLocked reports whether id is a tab of the session or a popup it
// follows.
func (s *Session) ownsLocked(id target.ID) bool {
	if _, ok := s.pending[id]; ok {
		return true
	}
	for _, t := range s.tabs {
		if t.targetID == id {
			return true
		}
	}
	return false
}

func (s *Session) handleOfLocked(id target.ID) string {
	for _, t := range s.tabs {
		if t.targetID == id {
			return t.handle
		}
	}
	return ""
}

func (s *Session) onTargetCreated(in *target.Info) {
	if in == nil || in.Type != "page" || in.OpenerID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending || s.restarting || s.state == StateClosed || !s.ownsLocked(in.OpenerID) {
		return // a page some other client of a shared browser opened
	}
	s.pending[in.TargetID] = &pendingPopup{opener: in.OpenerID}
	s.notifyLocked()
}

// refusePopup marks a pending popup whose navigation to u the policy
// refuses. It runs on the browser's message loop, before the popup's
// commit.
func (s *Session) refusePopup(frame cdp.FrameID, u string) {
	if s.o.Policy.Check(u) == "" {
		return
	}
	s.mu.Lock()
	if p, ok := s.pending[target.ID(frame)]; ok {
		p.refused = true
	}
	s.mu.Unlock()
}

func (s *Session) onTargetInfoChanged(b Browser, in *target.Info) {
	if in == nil || in.URL == "" {
		return
	}
	s.mu.Lock()
	p, ok := s.pending[in.TargetID]
	if !ok {
		s.mu.Unlock()
		return
	}
	delete(s.pending, in.TargetID)
	if p.refused || s.o.Policy.Check(in.URL) != "" {
		s.notifyLocked()
		s.mu.Unlock()
		// The blocked navigation ends the session (onRequestPaused); the
		// popup itself is closed at once and never gets a handle.
		go s.closeTarget(b, in.TargetID)
		return
	}
	if s.ending || s.restarting || s.state == StateClosed {
		s.notifyLocked()
		s.mu.Unlock()
		return
	}
	s.nextTab++
	handle := fmt.Sprintf("t%d", s.nextTab)
	s.reserved[handle] = true
	s.notifyLocked()
	s.mu.Unlock()
	go s.adopt(b, in.TargetID, p.opener, handle)
}

// adopt attaches to the popup id under handle and adds it to the tabs.
func (s *Session) adopt(b Browser, id, opener target.ID, handle string) {
	ctx, cancel := chromedp.NewContext(b.Context(), chromedp.WithTargetID(id))
	t := &tab{handle: handle, ctx: ctx, cancel: cancel, popup: true}
	err := s.attach(t)
	s.mu.Lock()
	t.opener = s.handleOfLocked(opener)
	current := s.browser == b && !s.ending && !s.restarting && s.state != StateClosed
	u := t.url
	s.mu.Unlock()
	if err == nil && current {
		// Recorded while the handle is still reserved, so that the audit
		// trail lists the popup before any action on it.
		s.record(context.Background(), Event{Kind: EventAction, Action: EventActionPopup, Tab: handle, Domain: Host(u),
			Detail: "opened by " + nonEmpty(t.opener, "an unknown tab")})
	}
	s.mu.Lock()
	delete(s.reserved, handle)
	current = s.browser == b && !s.ending && !s.restarting && s.state != StateClosed
	switch {
	case err != nil:
		s.gone[handle] = "it closed before director could attach to it"
	case !current:
		s.gone[handle] = "the session ended or restarted while it opened"
	default:
		s.tabs = append(s.tabs, t)
	}
	s.notifyLocked()
	s.mu.Unlock()
	if err != nil || !current {
		go cancel()
		s.o.Log.Debug("popup not adopted", "session", s.id, "tab", handle, "err", err)
		if current {
			s.record(context.Background(), Event{Kind: EventAction, Action: EventActionPopup, Tab: handle,
				Code: errcode.TabNotFound, Detail: "opened by " + nonEmpty(t.opener, "an unknown tab") + "; closed before it could be attached"})
		}
		return
	}
	s.o.Log.Info("popup opened", "session", s.id, "tab", handle, "opener", t.opener, "host", Host(u))
}

// onTargetGone drops a tab whose page went away without close_tab.
func (s *Session) onTargetGone(b Browser, id target.ID, why string) {
	s.mu.Lock()
	if _, ok := s.pending[id]; ok {
		delete(s.pending, id)
		s.notifyLocked()
	}
	if s.browser != b || s.ending || s.restarting || s.state == StateClosed {
		s.mu.Unlock()
		return
	}
	var gone *tab
	var rest []*tab
	for _, t := range s.tabs {
		if t.targetID == id && gone == nil {
			gone = t
			continue
		}
		rest = append(rest, t)
	}
	if gone == nil {
		s.mu.Unlock()
		return
	}
	s.tabs = rest
	s.gone[gone.handle] = why
	if s.cur == gone {
		// No silent fallback to another tab: whether the next step would
		// run before or after the close is up to the page, so a step
		// without a tab fails until a switch_tab says where to go on.
		s.cur = nil
		s.curGone = gone
	}
	s.notifyLocked()
	host := Host(gone.url)
	s.mu.Unlock()
	if gone.cancel != nil {
		// Frees the chromedp context; the target is gone already. It also
		// ends an action running on the tab, before the target may have
		// seen its detach: run asks pageGone, which reads s.gone above.
		go gone.cancel()
	}
	go s.record(context.Background(), Event{Kind: EventAction, Action: EventActionTabClosed, Tab: gone.handle, Domain: host, Detail: why})
	s.o.Log.Info("tab closed by its page", "session", s.id, "tab", gone.handle, "why", why)
}

// closeTarget closes a page that must not stay open (a refused popup).
func (s *Session) closeTarget(b Browser, id target.ID) {
	c := chromedp.FromContext(b.Context())
	if c == nil || c.Browser == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.Context()), 10*time.Second)
	defer cancel()
	if _, err := cdp.Call(ctx, c.Browser, target.CloseTarget, target.CloseTargetParams{TargetID: id}); err != nil {
		s.o.Log.Debug("close a refused popup", "session", s.id, "err", err)
	}
}

// tabFor resolves the tab an action runs on: the current tab for "", else
// the tab with that handle. A handle that a popup may still get (it is being
// attached, or it is the next free handle while popups are opening) is
// waited for until ctx ends; a handle that was never given, or whose tab is
// gone, fails at once with tab_not_found.
func (s *Session) tabFor(ctx context.Context, handle string) (*tab, error) {
	if handle == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cur == nil && s.curGone != nil {
			next := s.openHandlesLocked()
			if s.curGone.opener != "" && s.hasHandleLocked(s.curGone.opener) {
				next = s.curGone.opener
			}
			return nil, errcode.New(errcode.TabNotFound, "the current tab %s of session %s is gone: %s", s.curGone.handle, s.id, s.gone[s.curGone.handle]).
				WithHint("add a switch_tab step (to %s) after the step that makes the popup close itself", next)
		}
		if s.cur == nil {
			return nil, errcode.New(errcode.TabNotFound, "session %s has no open tab", s.id).WithHint("open one with open_tab")
		}
		return s.cur, nil
	}
	for {
		s.mu.Lock()
		for _, t := range s.tabs {
			if t.handle == handle {
				s.mu.Unlock()
				return t, nil
			}
		}
		open := s.openHandlesLocked()
		if why, ok := s.gone[handle]; ok {
			s.mu.Unlock()
			return nil, errcode.New(errcode.TabNotFound, "tab %s of session %s is gone: %s", handle, s.id, why).
				WithHint("open tabs: %s; a popup that closes itself (after a login or an export) must be read before it closes: act on it right after it opens, or check the result on its opener", open)
		}
		n, numbered := handleNumber(handle)
		wait := numbered && (s.reserved[handle] || n > s.nextTab && n <= s.nextTab+len(s.pending)+1)
		changed := s.changed
		s.mu.Unlock()
		if !wait {
			return nil, errcode.New(errcode.TabNotFound, "no tab %s in session %s", handle, s.id).WithHint("open tabs: %s", open)
		}
		select {
		case <-changed:
		case <-s.ctx.Done():
			return nil, errcode.Hinted(context.Cause(s.ctx), errcode.TabNotFound, "start a new session",
				"no tab %s in session %s: the session ended", handle, s.id)
		case <-ctx.Done():
			s.mu.Lock()
			open = s.openHandlesLocked()
			s.mu.Unlock()
			return nil, errcode.Hinted(context.Cause(ctx), errcode.TabNotFound,
				"open tabs: "+open+"; a popup gets the next free handle once its page loads: check that the step before opens it, or raise the step's timeout",
				"no tab %s appeared in session %s", handle, s.id)
		}
	}
}

func (s *Session) hasHandleLocked(h string) bool {
	for _, t := range s.tabs {
		if t.handle == h {
			return true
		}
	}
	return false
}

func (s *Session) openHandlesLocked() string {
	hs := make([]string, 0, len(s.tabs))
	for _, t := range s.tabs {
		hs = append(hs, t.handle)
	}
	if len(hs) == 0 {
		return "none"
	}
	return strings.Join(hs, ", ")
}

// handleNumber returns N of a handle tN.
func handleNumber(h string) (int, bool) {
	rest, ok := strings.CutPrefix(h, "t")
	if !ok || rest == "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

func nonEmpty(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
