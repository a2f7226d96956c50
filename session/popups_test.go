package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"director/errcode"
	"director/internal/testsite"
)

// eventually waits until cond holds, failing the test after a generous
// bound: a wait on a condition, not a timing assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tabOf(s *Session, handle string) (TabInfo, bool) {
	for _, ti := range s.Info().Tabs {
		if ti.Handle == handle {
			return ti, true
		}
	}
	return TabInfo{}, false
}

func (r *recorder) find(action, tab string) (Event, bool) {
	for _, e := range r.all() {
		if e.Kind == EventAction && e.Action == action && e.Tab == tab {
			return e, true
		}
	}
	return Event{}, false
}

func TestPopupsGetHandles(t *testing.T) {
	cases := []struct {
		name, opener, via string
		hasOpener         bool // target=_blank implies noopener
	}{
		{"target=_blank link", "#popup-link", "link", false},
		{"window.open", "#open-popup", "open", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := start(t, Options{Profile: "p1", Policy: Policy{Blocklist: []string{testsite.BlockedHost}}})
			f.do(t, Action{Type: ActNavigate, URL: f.site.At("/popups")})
			f.do(t, Action{Type: ActClick, Selector: c.opener})

			// A step on t2 waits for the popup to get its handle.
			res := f.do(t, Action{Type: ActExtract, Tab: "t2", Selector: "#via"})
			if res.Value != c.via || res.Tab != "t2" || !strings.Contains(res.URL, "/popup?via="+c.via) {
				t.Fatalf("extract on t2: %+v", res)
			}
			t2, ok := tabOf(f.s, "t2")
			if !ok || t2.Opener != "t1" || t2.Current {
				t.Fatalf("tabs: %+v", f.s.Info().Tabs)
			}
			if t1, _ := tabOf(f.s, "t1"); !t1.Current {
				t.Fatalf("the popup took the current tab: %+v", f.s.Info().Tabs)
			}
			if e, ok := f.rec.find(EventActionPopup, "t2"); !ok || e.Detail != "opened by t1" || e.Domain != "127.0.0.1" || e.Code != "" {
				t.Fatalf("popup event %+v (found %v) in %+v", e, ok, f.rec.all())
			}

			// A popup of a popup is t3, opened by t2; close_tab closes it.
			f.do(t, Action{Type: ActClick, Tab: "t2", Selector: "#open-nested"})
			if got := f.do(t, Action{Type: ActExtract, Tab: "t3", Selector: "#via"}).Value; got != "nested" {
				t.Fatalf("t3 shows %v", got)
			}
			if t3, _ := tabOf(f.s, "t3"); t3.Opener != "t2" {
				t.Fatalf("tabs: %+v", f.s.Info().Tabs)
			}
			f.do(t, Action{Type: ActCloseTab, Tab: "t3"})
			_, err := f.s.Do(context.Background(), Action{Type: ActExtract, Tab: "t3", Selector: "h1"})
			wantCode(t, err, errcode.TabNotFound)

			// The popup closes itself while it is the current tab: no tab
			// is current until a switch_tab, a step without a tab names the
			// opener, and a step on t2 says why it cannot run.
			f.do(t, Action{Type: ActSwitchTab, Tab: "t2"})
			f.do(t, Action{Type: ActClick, Selector: "#close-me"})
			eventually(t, "t2 to leave the tab list", func() bool { _, ok := tabOf(f.s, "t2"); return !ok })
			if tabs := f.s.Info().Tabs; len(tabs) != 1 || tabs[0].Handle != "t1" || tabs[0].Current {
				t.Fatalf("after the popup closed: %+v", tabs)
			}
			_, err = f.s.Do(context.Background(), Action{Type: ActExtract, Selector: "h1"})
			wantCode(t, err, errcode.TabNotFound)
			if !strings.Contains(errcode.HintOf(err), "switch_tab") || !strings.Contains(errcode.HintOf(err), "t1") {
				t.Fatalf("error on the gone current tab: %v (hint %q)", err, errcode.HintOf(err))
			}
			f.do(t, Action{Type: ActSwitchTab, Tab: "t1"})
			_, err = f.s.Do(context.Background(), Action{Type: ActExtract, Tab: "t2", Selector: "h1"})
			wantCode(t, err, errcode.TabNotFound)
			if !strings.Contains(err.Error(), "gone") || !strings.Contains(errcode.HintOf(err), "popup") {
				t.Fatalf("error on a closed popup: %v (hint %q)", err, errcode.HintOf(err))
			}
			eventually(t, "the tab_closed event", func() bool { _, ok := f.rec.find(EventActionTabClosed, "t2"); return ok })
			if c.hasOpener {
				f.do(t, Action{Type: ActAssert, Selector: "#note", Text: "closed by the popup"})
			}
			// A later popup gets the next handle, not a reused one.
			f.do(t, Action{Type: ActClick, Selector: "#open-popup"})
			if got := f.do(t, Action{Type: ActExtract, Tab: "t4", Selector: "#via"}).Value; got != "open" {
				t.Fatalf("t4 shows %v", got)
			}
		})
	}
}

func TestTabHandleErrors(t *testing.T) {
	f := start(t, Options{})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/popups")})
	cases := []struct {
		name string
		a    Action
		msg  string
	}{
		// t2 is the next handle: the step waits for a popup, up to its timeout.
		{"next handle never opened", Action{Type: ActExtract, Tab: "t2", Selector: "h1", Timeout: 300 * time.Millisecond}, "appeared"},
		{"switch to it", Action{Type: ActSwitchTab, Tab: "t2", Timeout: 300 * time.Millisecond}, "appeared"},
		// t7 cannot be given by then: no wait.
		{"handle far ahead", Action{Type: ActExtract, Tab: "t7", Selector: "h1"}, "no tab t7"},
		{"not a handle", Action{Type: ActSwitchTab, Tab: "main"}, "no tab main"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.s.Do(context.Background(), c.a)
			wantCode(t, err, errcode.TabNotFound)
			if !strings.Contains(err.Error(), c.msg) || !strings.Contains(errcode.HintOf(err), "t1") {
				t.Fatalf("error %v, hint %q", err, errcode.HintOf(err))
			}
		})
	}
}

func TestPopupUnderBlocklist(t *testing.T) {
	t.Run("popup to a blocked domain", func(t *testing.T) {
		f := start(t, Options{Profile: "p1", Policy: Policy{Blocklist: []string{testsite.BlockedHost}}})
		f.do(t, Action{Type: ActNavigate, URL: f.site.At("/popups")})
		// The click returns before the popup navigates; the refused
		// navigation ends the session on its own.
		if _, err := f.s.Do(context.Background(), Action{Type: ActClick, Selector: "#blocked-popup"}); err != nil {
			wantCode(t, err, errcode.DomainBlocked)
		}
		waitDone(t, f.s, 30*time.Second)
		wantCode(t, f.s.Err(), errcode.DomainBlocked)
		if f.s.EndReason() != EndDomainBlocked {
			t.Fatalf("end reason %q", f.s.EndReason())
		}
		if tabs := f.s.Info().Tabs; len(tabs) != 1 || tabs[0].Handle != "t1" {
			t.Fatalf("the refused popup got a handle: %+v", tabs)
		}
		if n := f.site.Hits("/landing"); n != 0 {
			t.Fatalf("the blocked popup reached the server %d times", n)
		}
		var blocked bool
		for _, e := range f.rec.all() {
			if e.Action == EventActionPopup {
				t.Fatalf("popup event for a refused popup: %+v", e)
			}
			if e.Code == errcode.DomainBlocked && e.Domain == testsite.BlockedHost && e.Tab == "popup" {
				blocked = true
			}
		}
		if !blocked {
			t.Fatalf("no domain_blocked event for the popup: %+v", f.rec.all())
		}
	})
	t.Run("a popup navigating to a blocked domain", func(t *testing.T) {
		f := start(t, Options{Policy: Policy{Blocklist: []string{testsite.BlockedHost}}})
		f.do(t, Action{Type: ActNavigate, URL: f.site.At("/popups")})
		f.do(t, Action{Type: ActClick, Selector: "#open-popup"})
		f.do(t, Action{Type: ActWaitFor, Tab: "t2", Selector: "#via"})
		_, err := f.s.Do(context.Background(), Action{Type: ActNavigate, Tab: "t2", URL: f.site.On(testsite.BlockedHost, "/landing")})
		wantCode(t, err, errcode.DomainBlocked)
		waitDone(t, f.s, 30*time.Second)
		if f.s.EndReason() != EndDomainBlocked {
			t.Fatalf("end reason %q", f.s.EndReason())
		}
		if e, ok := f.rec.find(string(ActNavigate), "t2"); !ok || e.Code != errcode.DomainBlocked {
			t.Fatalf("navigate event on t2: %+v (found %v)", e, ok)
		}
	})
}

func TestRestartKeepsPopup(t *testing.T) {
	f := start(t, Options{})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/popups")})
	f.do(t, Action{Type: ActClick, Selector: "#open-popup"})
	f.do(t, Action{Type: ActWaitFor, Tab: "t2", Selector: "#via"})
	if err := f.s.Restart(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if t2, ok := tabOf(f.s, "t2"); !ok || t2.Opener != "t1" || !strings.Contains(t2.URL, "/popup?via=open") {
		t.Fatalf("tabs after restart: %+v", f.s.Info().Tabs)
	}
	if got := f.do(t, Action{Type: ActExtract, Tab: "t2", Selector: "#via"}).Value; got != "open" {
		t.Fatalf("t2 after restart shows %v", got)
	}
	// The new browser is followed too.
	f.do(t, Action{Type: ActClick, Selector: "#popup-link"})
	if got := f.do(t, Action{Type: ActExtract, Tab: "t3", Selector: "#via"}).Value; got != "link" {
		t.Fatalf("t3 shows %v", got)
	}
}

// TestElementStale: the page replaces the element an action resolved
// before the action uses it. The action fails with element_stale, and
// running it again (what a step's retries do) acts on the element the page
// put in its place.
func TestElementStale(t *testing.T) {
	cases := []struct {
		name  string
		act   Action
		check Action
		want  string
	}{
		{"type into an input swapped on focus",
			Action{Type: ActType, Selector: "#editor", Text: "abc"},
			Action{Type: ActExtract, Selector: "#editor", Extract: "value"}, "abc"},
		{"click a button re-rendered once measured",
			Action{Type: ActClick, Selector: "#rerender"},
			Action{Type: ActExtract, Selector: "#clicks"}, "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := start(t, Options{})
			f.do(t, Action{Type: ActNavigate, URL: f.site.At("/stale")})
			_, err := f.s.Do(context.Background(), c.act)
			wantCode(t, err, errcode.ElementStale)
			if errcode.HintOf(err) == "" {
				t.Fatalf("element_stale without a hint: %v", err)
			}
			if ev, _ := f.rec.last(EventAction); ev.Code != errcode.ElementStale || ev.Action != string(c.act.Type) {
				t.Fatalf("audit event %+v", ev)
			}
			f.do(t, c.act)
			if got := f.do(t, c.check).Value; got != c.want {
				t.Fatalf("after the retry: %v, want %q", got, c.want)
			}
		})
	}
}

// TestBackgroundTabGetsFocusEvents: every tab of a session behaves as the
// focused page, in front or not. An unfocused page gets no focus event when
// one of its elements is focused, so a page that reacts to focus (an editor
// swapped in on focus, a date picker that opens on it) would behave
// differently depending on which tab happens to be in front, and element_stale
// detection on type would depend on winning a race with the window's focus.
func TestBackgroundTabGetsFocusEvents(t *testing.T) {
	f := start(t, Options{})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/stale")})
	f.do(t, Action{Type: ActOpenTab, URL: f.site.At("/stale")}) // t2, in front of t1
	const focusFires = `(() => {
  let fired = false;
  const b = document.getElementById("rerender");
  b.addEventListener("focus", () => { fired = true; }, {once: true});
  b.focus();
  return fired && document.hasFocus();
})()`
	for _, tab := range []string{"t1", "t2"} {
		if got := f.do(t, Action{Type: ActEvaluate, Tab: tab, Expression: focusFires}).Value; got != true {
			t.Errorf("%s: focusing a button fired its focus event and the page has the focus: %v, want true", tab, got)
		}
	}
}

// TestPageGoneBeforeDetach: the browser session can report that a tab's
// page closed (targetDestroyed) before the tab's own target has seen its
// detach. The session then drops the tab and cancels its context, which
// ends the action running on it with a bare "context canceled", and the
// target never reports the detach. The action must still be judged as one
// whose page closed under it: a click that closes its popup succeeded, any
// other action fails with tab_not_found, never internal_error. The real
// order is a race (a popup's "close" button failed about once in 200
// clicks); here the session hears of the close while the page stays open.
func TestPageGoneBeforeDetach(t *testing.T) {
	f := start(t, Options{})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/popups")})
	f.do(t, Action{Type: ActClick, Selector: "#open-popup"})
	f.do(t, Action{Type: ActWaitFor, Tab: "t2", Selector: "#via"})
	f.s.mu.Lock()
	b, id := f.s.browser, target.ID("")
	for _, tb := range f.s.tabs {
		if tb.handle == "t2" {
			id = tb.targetID
		}
	}
	f.s.mu.Unlock()
	time.AfterFunc(300*time.Millisecond, func() { f.s.onTargetGone(b, id, whyPageClosed) })
	_, err := f.s.Do(context.Background(), Action{Type: ActWaitFor, Tab: "t2", Selector: "#never"})
	wantCode(t, err, errcode.TabNotFound)
	if !strings.Contains(err.Error(), "closed during wait_for") {
		t.Fatalf("wait_for on a page that closed under it: %v", err)
	}
	if f.s.Err() != nil || f.s.Info().State != StateActive {
		t.Fatalf("the session did not survive: %v", f.s.Err())
	}
}
