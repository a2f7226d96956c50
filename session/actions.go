package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"director/errcode"
)

// captchaSelector finds the common CAPTCHA frames and widgets.
const captchaSelector = `iframe[src*="recaptcha"], iframe[src*="hcaptcha"], iframe[src*="challenges.cloudflare.com/turnstile"], .g-recaptcha, .h-captcha, #cf-challenge`

// js quotes s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// GlobRegexp turns a URL glob (* any run of characters, ? one character)
// into an anchored regular expression.
func GlobRegexp(glob string) string {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return b.String()
}

// MatchURL reports whether u matches the glob.
func MatchURL(glob, u string) bool {
	ok, _ := regexp.MatchString(GlobRegexp(glob), u)
	return ok
}

// actionCtx derives the context of one action on tab t: it ends at the
// timeout, when the caller's ctx ends, or when the session ends.
func (s *Session) actionCtx(ctx context.Context, t *tab, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = s.o.ActionTimeout
	}
	actx, cancel := context.WithTimeout(t.ctx, timeout)
	stop1 := context.AfterFunc(ctx, cancel)
	stop2 := context.AfterFunc(s.ctx, cancel)
	// A page that closes (a popup closing itself) ends the action at once:
	// some waits would otherwise sit on the dead page until the timeout.
	if gone, err := chromedp.Detached(t.ctx); err == nil {
		go func() {
			select {
			case <-gone:
				cancel()
			case <-actx.Done():
			}
		}()
	}
	return actx, func() {
		stop1()
		stop2()
		cancel()
	}
}

func (s *Session) run(ctx context.Context, t *tab, a Action) (Result, error) {
	res := Result{Tab: t.handle}
	actx, cancel := s.actionCtx(ctx, t, a.Timeout)
	defer cancel()
	var err error
	switch a.Type {
	case ActNavigate:
		err = s.navigate(actx, t, a.URL)
		err = s.afterPageChange(ctx, t, err)
	case ActClick:
		err = s.element(actx, ctx, t, a.Selector, chromedp.Click(chromedp.CSS(a.Selector)))
		err = s.afterPageChange(ctx, t, err)
	case ActType:
		steps := []chromedp.Action[chromedp.Void]{}
		if a.Clear {
			steps = append(steps, chromedp.WaitReady(chromedp.CSS(a.Selector)), chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+js(a.Selector)+`); if (!e) return false;
					e.value = ''; e.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`)(c, tg)
				return err
			}))
		}
		steps = append(steps, sendKeys(a.Selector, a.Text))
		err = s.element(actx, ctx, t, a.Selector, chromedp.Steps(steps...))
	case ActPress:
		key, ok := KeyByName(a.Key)
		if !ok {
			return res, errcode.New(errcode.InvalidAction, "unknown key %q", a.Key).WithHint("use one character or a name such as Enter, Tab, Escape, ArrowDown")
		}
		if a.Selector != "" {
			err = s.element(actx, ctx, t, a.Selector, sendKeys(a.Selector, key))
		} else {
			err = s.cdpErr(chromedp.Do(actx, chromedp.KeyEvent(key)), "press %s", a.Key)
		}
		err = s.afterPageChange(ctx, t, err)
	case ActSelect:
		err = s.element(actx, ctx, t, a.Selector, chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
			got, err := chromedp.Evaluate[string](`(() => { const e = document.querySelector(`+js(a.Selector)+`);
				if (!e) return "gone";
				if (!(e instanceof HTMLSelectElement)) return e.tagName.toLowerCase();
				if (![...e.options].some(o => o.value === `+js(a.Value)+`)) return "no option";
				e.value = `+js(a.Value)+`;
				e.dispatchEvent(new Event('input', {bubbles: true}));
				e.dispatchEvent(new Event('change', {bubbles: true}));
				return "ok"; })()`)(c, tg)
			switch {
			case err != nil:
				return err
			case got == "ok":
				return nil
			case got == "gone":
				return errcode.Wrap(errDetached, errcode.ElementStale, "%s left the page before its option was chosen", a.Selector)
			case got == "no option":
				return errcode.New(errcode.ElementNotFound, "%s has no option with value %q", a.Selector, a.Value).WithHint("check the option values of the select element")
			}
			article := "a"
			if strings.ContainsRune("aeiou", rune(got[0])) {
				article = "an"
			}
			return errcode.New(errcode.InvalidAction, "%s is %s <%s>, not a <select>", a.Selector, article, got).
				WithHint("select chooses an option of a <select> element; for a text field use type, for a custom dropdown click it and then click the option")
		}), chromedp.WaitReady(chromedp.CSS(a.Selector)))
	case ActWaitFor:
		err = s.waitFor(actx, t, a)
		err = s.afterPageChange(ctx, t, err)
	case ActExtract:
		res.Value, err = s.extract(actx, ctx, t, a)
	case ActScreenshot:
		res.File, err = s.screenshot(actx, ctx, t, a)
	case ActEvaluate:
		res.Value, err = chromedp.Run(actx, evaluate(a.Expression))
		if err != nil && errcode.Of(err) != errcode.InvalidAction {
			var ex *chromedp.ExceptionError
			if errors.As(err, &ex) {
				err = errcode.Hinted(err, errcode.InvalidAction, "fix the JavaScript expression", "the expression threw")
			} else {
				err = s.cdpErr(err, "evaluate")
			}
		}
	case ActAssert:
		err = s.assert(actx, ctx, t, a)
	case ActSleep:
		timer := time.NewTimer(a.Duration)
		select {
		case <-timer.C:
		case <-ctx.Done():
			err = s.classify(ctx, errcode.Wrap(ctx.Err(), errcode.Internal, "sleep cut short"))
		case <-s.ctx.Done():
			err = errcode.Wrap(context.Cause(s.ctx), errcode.Internal, "session ended during sleep")
		}
		timer.Stop()
	case ActOpenTab:
		res.Tab, err = s.openTab(ctx, a)
		if err == nil {
			nt, _ := s.tabFor(ctx, res.Tab)
			t = nt
		}
	case ActSwitchTab:
		var nt *tab
		if nt, err = s.tabFor(actx, a.Tab); err == nil {
			s.mu.Lock()
			s.cur = nt
			s.mu.Unlock()
			_, _ = cdp.Call(actx, s.browserTarget(t), target.ActivateTarget, target.ActivateTargetParams{TargetID: nt.targetID})
			t = nt
			res.Tab = nt.handle
		}
	case ActCloseTab:
		res.Tab, err = s.closeTab(actx, t, a.Tab)
		if c, e := s.tabFor(ctx, ""); e == nil {
			t = c
		}
	case ActLoginCheck:
		err = s.loginCheck(actx, ctx, t, a)
	default:
		err = errcode.New(errcode.InvalidAction, "unknown action %q", a.Type).WithHint("use navigate, click, type, press, select, wait_for, extract, screenshot, evaluate, assert, sleep, open_tab, switch_tab or close_tab")
	}
	if err != nil && t != nil && (errors.Is(err, chromedp.ErrTargetDetached) || s.pageGone(t)) {
		err = s.closedUnder(t, a, err)
	}
	err = stepMistake(a, err)
	if err != nil && t != nil && a.Type != ActLoginCheck {
		err = s.explainFailure(ctx, t, a, err)
	}
	if t != nil {
		res.URL = s.urlOf(t)
	}
	return res, err
}

// stepMistake recodes as invalid_action the errors that the step itself
// causes, which the browser reports like any other failure: a selector that
// is not valid CSS, and a key sent to an element that cannot take it.
//
// A selector the browser refuses is marked (IsSelectorError), so that a
// caller can tell it from the other invalid_action errors of the same step
// (a login check's page answered 404).
func stepMistake(a Action, err error) error {
	if err == nil || errcode.Of(err) != errcode.Internal {
		return err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "DOM Error while querying") || strings.Contains(msg, "is not a valid selector"):
		var sels []string
		for _, sel := range []string{a.Selector, a.LoggedInSelector, a.LoginWallSelector} {
			if sel != "" {
				sels = append(sels, strconv.Quote(sel))
			}
		}
		what := strings.Join(sels, " or ")
		if what == "" {
			what = "the selector"
		}
		return errcode.Hinted(selectorError{err}, errcode.InvalidAction,
			"fix the selector of the "+string(a.Type)+" step: it must be valid CSS (an id or class with special characters needs escaping, e.g. #a\\:b)",
			"%s is not a valid CSS selector", what)
	case (a.Type == ActType || a.Type == ActPress) && strings.Contains(msg, "Element is not focusable"):
		return errcode.Hinted(err, errcode.InvalidAction,
			"point the step at the field itself: an input, a textarea, a select or an element with contenteditable or tabindex",
			"%s cannot take keys: the element it matches is not focusable", strconv.Quote(a.Selector))
	}
	return err
}

// pageGone reports whether the page of tab t went away: its target
// detached, or the session saw the target destroyed and dropped the tab.
// The session can see that first (Target.targetDestroyed on the browser
// session): onTargetGone then cancels t.ctx, which ends the action's
// context, so the action fails with a bare "context canceled", and a target
// whose context ended never reports its detach, so tabClosed alone can stay
// false for a page that closed.
func (s *Session) pageGone(t *tab) bool {
	if tabClosed(t.ctx) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone[t.handle] != whyPageClosed {
		return false
	}
	for _, x := range s.tabs {
		if x == t {
			return false
		}
	}
	return true
}

// closedUnder judges an action whose page closed while it ran. A click, a
// key press or a script can close their own window (a popup's "Done"
// button, window.close()): that is the action's effect, and it succeeded;
// the tab leaves the session when its target is destroyed. Any other
// action could not finish.
func (s *Session) closedUnder(t *tab, a Action, err error) error {
	switch a.Type {
	case ActClick, ActPress, ActEvaluate:
		return nil
	}
	s.mu.Lock()
	open := s.openHandlesLocked()
	s.mu.Unlock()
	return errcode.Hinted(err, errcode.TabNotFound,
		"the page closed itself; act on it before the step that closes it, then switch_tab to another tab (open: "+open+")",
		"tab %s closed during %s", t.handle, a.Type)
}

// errDetached is the cause of element_stale when the element an action
// resolved left the document before the action used it.
var errDetached = errors.New("the element left the document")

// sendKeys focuses the first visible element matching sel and types keys
// into it. Unlike chromedp.SendKeys it checks, after the focus, that the
// element is still in the document: a page that swaps an element on focus
// (a placeholder replaced by the real editor) would otherwise receive the
// keys nowhere, and the step would pass with the text lost. That case is
// element_stale, which a step's retries act on.
func sendKeys(sel, keys string) chromedp.Action[chromedp.Void] {
	return chromedp.QueryAfter(chromedp.CSS(sel), func(ctx context.Context, t *chromedp.Target, nodes []*chromedp.Node) (chromedp.Void, error) {
		if len(nodes) == 0 {
			return chromedp.Void{}, fmt.Errorf("no element matches %s", sel)
		}
		n := nodes[0]
		// The focus below fires the page's focus handlers now (attach
		// makes every tab behave as the focused page), so that a page
		// that swaps the element on focus does it before the check. The
		// tab also comes to the front, where a person watching a visible
		// browser expects the typing to happen.
		if _, err := cdp.Call(ctx, t, page.BringToFront, cdp.Empty{}); err != nil {
			return chromedp.Void{}, err
		}
		if _, err := cdp.Call(ctx, t, dom.Focus, dom.FocusParams{NodeID: n.NodeID}); err != nil {
			return chromedp.Void{}, err
		}
		connected, err := isConnected(ctx, t, n.NodeID)
		if err != nil && !staleMessage(err.Error()) {
			return chromedp.Void{}, err
		}
		if !connected {
			return chromedp.Void{}, errcode.Hinted(errDetached, errcode.ElementStale,
				"the page replaced the element when it got the focus; set retries on the step (or wait_for the element the page puts in its place)",
				"%s left the page when it was focused, before the keys were sent", sel)
		}
		return chromedp.KeyEvent(keys)(ctx, t)
	}, chromedp.NodeVisible)
}

// isConnected reports whether the node is still in its document.
func isConnected(ctx context.Context, t *chromedp.Target, id cdp.NodeID) (bool, error) {
	r, err := cdp.Call(ctx, t, dom.ResolveNode, dom.ResolveNodeParams{NodeID: id})
	if err != nil {
		return false, err
	}
	if r.Object == nil || r.Object.ObjectID == "" {
		return false, nil
	}
	defer func() {
		_, _ = cdp.Call(ctx, t, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: r.Object.ObjectID})
	}()
	res, err := cdp.Call(ctx, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: `function() { return this.isConnected; }`,
		ObjectID:            r.Object.ObjectID,
		ReturnByValue:       &[]bool{true}[0],
	})
	if err != nil {
		return false, err
	}
	if res.ExceptionDetails != nil || res.Result == nil {
		return false, fmt.Errorf("cannot tell whether the element is in the page")
	}
	return string(res.Result.Value) == "true", nil
}

// browserTarget is the browser-level session of tab t's browser.
func (s *Session) browserTarget(t *tab) cdp.Session {
	return chromedp.FromContext(t.ctx).Browser
}

// selectorError marks the browser's refusal of a selector as CSS.
type selectorError struct{ error }

func (e selectorError) Unwrap() error { return e.error }

// IsSelectorError says whether err is, or wraps, the browser's refusal of
// an action's selector as CSS.
func IsSelectorError(err error) bool {
	var se selectorError
	return errors.As(err, &se)
}

// unreachable says, for the Chrome errors (net/base/net_error_list.h) of
// a page whose site could not be reached, what happened; ok is false for
// every other error.
func unreachable(errorText string) (what string, ok bool) {
	switch errorText {
	case "net::ERR_NAME_NOT_RESOLVED":
		return "its host name does not resolve", true
	case "net::ERR_NAME_RESOLUTION_FAILED":
		return "its host name could not be resolved", true
	case "net::ERR_CONNECTION_REFUSED":
		return "the connection was refused", true
	case "net::ERR_CONNECTION_RESET":
		return "the connection was reset", true
	case "net::ERR_CONNECTION_CLOSED":
		return "the connection was closed", true
	case "net::ERR_CONNECTION_FAILED":
		return "the connection failed", true
	case "net::ERR_CONNECTION_TIMED_OUT":
		return "the connection timed out", true
	case "net::ERR_TIMED_OUT":
		return "the request timed out", true
	case "net::ERR_ADDRESS_UNREACHABLE":
		return "its address is unreachable", true
	case "net::ERR_INTERNET_DISCONNECTED":
		return "this machine is offline", true
	case "net::ERR_NETWORK_CHANGED":
		return "the network changed during the load", true
	case "net::ERR_EMPTY_RESPONSE":
		return "the server closed the connection without an answer", true
	}
	return "", false
}

func (s *Session) navigate(actx context.Context, t *tab, u string) error {
	err := chromedp.Do(actx, chromedp.Navigate(u))
	if err == nil {
		return nil
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) && t.ctx.Err() == nil {
		// Out of time while the page still loads: stop it, or the next
		// navigation of the tab (a retry of this step) is aborted by it
		// (net::ERR_ABORTED).
		sctx, cancel := context.WithTimeout(t.ctx, 2*time.Second)
		_ = chromedp.Do(sctx, chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(c, tg, page.StopLoading, cdp.Empty{})
			return err
		}))
		cancel()
	}
	var le *chromedp.LoadError
	if errors.As(err, &le) {
		if what, ok := unreachable(le.ErrorText); ok {
			// The site could not be reached: a wrong URL, a site that is
			// down, or this machine's network. Not a bug of director, so
			// not internal_error (whose hint says to report it). The codes
			// have no "site unreachable"; timeout is the one whose contract
			// fits: the page did not come, exit 1 (a failure, not exit 2's
			// "fix the workflow", which a DNS or network outage would make
			// a lie for a cron job's unchanged workflow), and a step's
			// retries try it again, as a site restarting needs. The
			// message names Chrome's error, so a refusal is not mistaken
			// for a slow site. A host that the session's policy refuses
			// (which the host resolver rules also make fail to resolve)
			// is never this: the Fetch check refuses its request first
			// and the session ends with domain_blocked, which classify
			// reports in place of this error.
			return errcode.Hinted(err, errcode.Timeout,
				"the site could not be reached: check the URL (host and port) and this machine's network, and that the site is up; then run again",
				"cannot load %s: %s", u, what)
		}
		if le.ErrorText == "net::ERR_UNSAFE_PORT" {
			// Chrome refuses ports of other protocols (1, 9, 25, 6000…,
			// net/base/port_util.cc): the URL must change, not the site.
			return errcode.Hinted(err, errcode.InvalidAction,
				"use another port: Chrome never loads this one (it belongs to another protocol, such as SMTP on 25 or X11 on 6000)",
				"cannot load %s: Chrome refuses its port", u)
		}
		return errcode.Hinted(err, errcode.Internal, "check that the site is up and the URL is right", "cannot load %s", u)
	}
	return s.cdpErr(err, "navigate to %s", u)
}

// afterPageChange looks for a CAPTCHA after actions that can change the
// page and succeeded (explainFailure looks after failures). A CAPTCHA
// pauses the session with human_required.
func (s *Session) afterPageChange(ctx context.Context, t *tab, err error) error {
	if err != nil || s.Err() != nil {
		return err
	}
	if s.needsHuman(ctx, t, 3*time.Second) == "captcha" {
		return s.captcha(t)
	}
	return nil
}

// explainFailure looks at the page after an action failed for want of an
// element or in time: a CAPTCHA, or the site's login wall
// (Options.LoginWallSelector), explains the failure better than the
// missing element does. Either pauses the session with human_required,
// which carries err as its cause.
func (s *Session) explainFailure(ctx context.Context, t *tab, a Action, err error) error {
	switch errcode.Of(err) {
	case errcode.ElementNotFound, errcode.Timeout, errcode.ElementStale:
	default:
		return err
	}
	if s.Err() != nil {
		return err
	}
	// Briefly: a page too busy to answer would add this wait to every
	// failed attempt.
	found := s.needsHuman(ctx, t, time.Second)
	switch found {
	case "captcha":
		return s.captcha(t)
	case "wall":
		s.pause()
		return errcode.Hinted(err, errcode.HumanRequired, "log in again in a headed browser on this profile",
			"%s shows the login wall (%s), so the profile is logged out; what the step itself saw", Host(s.urlOf(t)), s.o.LoginWallSelector)
	}
	if a.Type == ActNavigate || a.Type == ActOpenTab {
		return err // a load that failed says why itself
	}
	switch found {
	case "error":
		// The step waited on a page that never loaded: say so, not only
		// that the element did not come.
		return errcode.Hinted(err, errcode.Of(err), "the site did not load (see the navigate before this step): check its URL, or run again when the site is back",
			"the page is Chrome's error page for %s, not the site", Host(s.urlOf(t)))
	}
	if code, ok := strings.CutPrefix(found, "http:"); ok {
		hint := "the site answered an error: check the URL of the navigate before this step"
		if n, _ := strconv.Atoi(code); n >= 500 || n == 408 || n == 429 {
			hint = "the site is failing or busy: run again later"
		}
		return errcode.Hinted(err, errcode.Of(err), hint, "%s answered HTTP %s to this page", Host(s.urlOf(t)), code)
	}
	return err
}

func (s *Session) captcha(t *tab) error {
	s.pause()
	return errcode.New(errcode.HumanRequired, "a CAPTCHA on %s needs a human", Host(s.urlOf(t))).
		WithHint("solve it in a headed browser on this profile, then run again")
}

// needsHuman says what on t's page needs a human, or else what is wrong
// with it: "captcha", "wall" (the login wall), "error" (Chrome's error
// page), "http:CODE" (the site answered an HTTP error) or "" (nothing, or
// the page did not answer within wait). The
// wall counts only when it is shown (a login form hidden in every page is
// not one) and the logged-in selector does not match, which outweighs it
// as in the login check.
func (s *Session) needsHuman(ctx context.Context, t *tab, wait time.Duration) string {
	cctx, cancel := s.actionCtx(ctx, t, wait)
	defer cancel()
	expr := `(() => {
		if (document.querySelector(` + js(captchaSelector) + `)) return "captcha";
		const wall = ` + js(s.o.LoginWallSelector) + `, in_ = ` + js(s.o.LoggedInSelector) + `;
		try {
			if (in_ && document.querySelector(in_)) return "";
			const w = wall && document.querySelector(wall);
			if (w && w.getClientRects().length > 0 && getComputedStyle(w).visibility !== "hidden") return "wall";
		} catch (e) {}
		if (location.protocol === "chrome-error:") return "error";
		const nav = performance.getEntriesByType("navigation")[0];
		if (nav && nav.responseStatus >= 400) return "http:" + nav.responseStatus;
		return "";
	})()`
	found, err := chromedp.Run(cctx, chromedp.Evaluate[string](expr))
	if err != nil {
		return ""
	}
	return found
}

// element runs an action on the element sel and says element_not_found
// when it never appears in time.
func (s *Session) element(actx, ctx context.Context, t *tab, sel string, act chromedp.Action[chromedp.Void], pre ...chromedp.Action[chromedp.Void]) error {
	steps := append(pre, act)
	err := chromedp.Do(actx, chromedp.Steps(steps...))
	if err == nil {
		return nil
	}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && s.Err() == nil {
		return s.notFound(ctx, t, sel, err)
	}
	return s.cdpErr(err, "on %s", sel)
}

// notFound tells a missing element from one that exists but never became
// visible.
func (s *Session) notFound(ctx context.Context, t *tab, sel string, cause error) error {
	cctx, cancel := s.actionCtx(ctx, t, 3*time.Second)
	defer cancel()
	present, err := chromedp.Run(cctx, chromedp.Evaluate[bool](`!!document.querySelector(`+js(sel)+`)`))
	if err == nil && present {
		return errcode.Hinted(cause, errcode.ElementNotFound, "the element exists but stayed hidden or covered; wait for the page state that shows it", "%s is on %s but not visible", sel, Host(s.urlOf(t)))
	}
	return errcode.Hinted(cause, errcode.ElementNotFound, "check the selector against the page, or raise the step's timeout", "no element matches %s on %s", sel, s.urlOf(t))
}

func (s *Session) waitFor(actx context.Context, t *tab, a Action) error {
	var expr, what string
	switch {
	case a.URL != "":
		expr = `new RegExp(` + js(GlobRegexp(a.URL)) + `).test(location.href)`
		what = "the URL to match " + a.URL
	case a.State == "hidden":
		expr = `(() => { const e = document.querySelector(` + js(a.Selector) + `);
			if (!e) return true;
			const st = getComputedStyle(e);
			return st.visibility === 'hidden' || st.display === 'none' || !(e.offsetWidth || e.offsetHeight || e.getClientRects().length); })()`
		what = a.Selector + " to be hidden"
	default:
		expr = `(() => { const e = document.querySelector(` + js(a.Selector) + `);
			if (!e) return false;
			const st = getComputedStyle(e);
			return st.visibility !== 'hidden' && st.display !== 'none' && !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length); })()`
		what = a.Selector + " to be visible"
	}
	return s.poll(actx, expr, what)
}

// pollRetry polls expr until it is truthy, starting over when a navigation
// replaces the document under the poll.
func pollRetry[T any](actx context.Context, expr string) (T, error) {
	for {
		v, err := chromedp.Run(actx, chromedp.Poll[T](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
		if err == nil || actx.Err() != nil || !navigatedAway(err) || tabClosed(actx) {
			return v, err
		}
		select {
		case <-actx.Done():
			return v, actx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tabClosed reports whether the tab of actx is gone (its page closed):
// then no retry can succeed.
func tabClosed(actx context.Context) bool {
	ch, err := chromedp.Detached(actx)
	if err != nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// navigatedAway reports whether err says the page changed under a script.
func navigatedAway(err error) bool {
	msg := err.Error()
	for _, s := range []string{"navigated or closed", "Execution context was destroyed", "Cannot find context with specified id", "Cannot find default execution context"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// poll waits until expr is truthy; a deadline is a timeout error.
func (s *Session) poll(actx context.Context, expr, what string) error {
	_, err := pollRetry[chromedp.Void](actx, expr)
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errcode.Hinted(err, errcode.Timeout, "raise the step's timeout, or check what the page shows", "waited too long for %s", what)
	}
	return s.cdpErr(err, "wait for %s", what)
}

func (s *Session) extract(actx, ctx context.Context, t *tab, a Action) (any, error) {
	if err := s.element(actx, ctx, t, a.Selector, chromedp.WaitReady(chromedp.CSS(a.Selector))); err != nil {
		return nil, err
	}
	sel := js(a.Selector)
	attr := js(a.Attribute)
	var expr string
	switch a.Extract {
	case "", "text":
		expr = `document.querySelector(` + sel + `).innerText`
	case "html":
		expr = `document.querySelector(` + sel + `).outerHTML`
	case "value":
		expr = `String(document.querySelector(` + sel + `).value ?? '')`
	case "attribute":
		expr = `document.querySelector(` + sel + `).getAttribute(` + attr + `) ?? ''`
	case "list":
		if a.Attribute != "" {
			expr = `[...document.querySelectorAll(` + sel + `)].map(e => e.getAttribute(` + attr + `) ?? '')`
		} else {
			expr = `[...document.querySelectorAll(` + sel + `)].map(e => e.innerText)`
		}
		v, err := chromedp.Run(actx, chromedp.Evaluate[[]string](expr))
		if v == nil {
			v = []string{}
		}
		return v, s.cdpErr(err, "extract %s", a.Selector)
	default:
		return nil, errcode.New(errcode.InvalidAction, "unknown extract kind %q", a.Extract).WithHint("use text, attribute, html, value or list")
	}
	v, err := chromedp.Run(actx, chromedp.Evaluate[string](expr))
	return v, s.cdpErr(err, "extract %s", a.Selector)
}

func (s *Session) screenshot(actx, ctx context.Context, t *tab, a Action) (string, error) {
	if a.File == "" {
		return "", errcode.New(errcode.InvalidAction, "screenshot without a file").WithHint("name the PNG file to write")
	}
	var buf []byte
	var err error
	switch {
	case a.Selector != "":
		err = s.element(actx, ctx, t, a.Selector, chromedp.Func(func(c context.Context, tg *chromedp.Target) error {
			b, err := chromedp.Screenshot(chromedp.CSS(a.Selector), chromedp.NodeVisible)(c, tg)
			buf = b
			return err
		}))
	case a.FullPage:
		buf, err = chromedp.Run(actx, chromedp.FullScreenshot(100))
		err = s.cdpErr(err, "full-page screenshot")
	default:
		buf, err = chromedp.Run(actx, chromedp.CaptureScreenshot())
		err = s.cdpErr(err, "screenshot")
	}
	if err != nil {
		return "", err
	}
	path, err := writeInside(a.Dir, a.File, buf)
	if err != nil {
		return "", errcode.Hinted(err, errcode.Internal, "check that the artifacts directory is writable", "cannot write the screenshot")
	}
	return path, nil
}

// writeInside writes data to the file name (slash-separated, relative to
// dir; or a path of its own when dir is "") with mode 0600, and returns its
// path. It writes a new file and renames it over name, inside dir through
// os.Root: a symlink already at name (or on the way to it) in a shared
// artifacts directory is replaced or refused, never written through to a
// file outside it.
func writeInside(dir, name string, data []byte) (string, error) {
	if dir == "" {
		dir, name = filepath.Split(name)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	rel := filepath.FromSlash(name)
	if sub := filepath.Dir(rel); sub != "." {
		if err := root.MkdirAll(sub, 0o700); err != nil {
			return "", err
		}
	}
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tmp-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
		return "", werr
	}
	return filepath.Join(dir, rel), nil
}

func (s *Session) assert(actx, ctx context.Context, t *tab, a Action) error {
	if a.Selector != "" {
		if err := s.element(actx, ctx, t, a.Selector, chromedp.WaitReady(chromedp.CSS(a.Selector))); err != nil {
			return err
		}
	}
	if a.Text != "" {
		scope := `document.body`
		if a.Selector != "" {
			scope = `document.querySelector(` + js(a.Selector) + `)`
		}
		expr := `(() => { const e = ` + scope + `; return !!e && (e.innerText || '').includes(` + js(a.Text) + `); })()`
		if err := s.poll(actx, expr, "the text"); err != nil {
			if errcode.Of(err) == errcode.Timeout {
				where := "the page"
				if a.Selector != "" {
					where = a.Selector
				}
				return errcode.Hinted(err, errcode.ElementNotFound, "check the text the page shows", "assert: %s does not contain the expected text (%d characters)", where, len(a.Text))
			}
			return err
		}
	}
	if a.URL != "" {
		if err := s.poll(actx, `new RegExp(`+js(GlobRegexp(a.URL))+`).test(location.href)`, "the URL to match "+a.URL); err != nil {
			if errcode.Of(err) == errcode.Timeout {
				return errcode.Hinted(err, errcode.Timeout, "check where the page went, or fix the URL pattern", "assert: the URL %s does not match %s", s.urlOf(t), a.URL)
			}
			return err
		}
	}
	return nil
}

func (s *Session) openTab(ctx context.Context, a Action) (string, error) {
	s.mu.Lock()
	b := s.browser
	s.mu.Unlock()
	if b == nil {
		return "", errcode.New(errcode.SessionNotFound, "session %s has no browser", s.id).WithHint("start a new session")
	}
	nctx, ncancel := chromedp.NewContext(b.Context())
	t := &tab{ctx: nctx, cancel: ncancel}
	if err := s.attach(t); err != nil {
		ncancel()
		return "", err
	}
	s.mu.Lock()
	s.cur = t
	s.mu.Unlock()
	if a.URL != "" && a.URL != "about:blank" {
		actx, cancel := s.actionCtx(ctx, t, a.Timeout)
		defer cancel()
		if err := s.navigate(actx, t, a.URL); err != nil {
			return t.handle, err
		}
		if err := s.afterPageChange(ctx, t, nil); err != nil {
			return t.handle, err
		}
	}
	return t.handle, nil
}

func (s *Session) closeTab(actx context.Context, cur *tab, handle string) (string, error) {
	t := cur
	if handle != "" {
		var err error
		if t, err = s.tabFor(actx, handle); err != nil {
			return "", err
		}
	}
	s.mu.Lock()
	if len(s.tabs) <= 1 {
		s.mu.Unlock()
		return t.handle, errcode.New(errcode.InvalidAction, "cannot close %s, the last tab of session %s", t.handle, s.id).WithHint("end the session instead, or open another tab first")
	}
	var rest []*tab
	for _, x := range s.tabs {
		if x != t {
			rest = append(rest, x)
		}
	}
	s.tabs = rest
	s.gone[t.handle] = "close_tab closed it"
	if s.cur == t {
		s.cur = rest[len(rest)-1]
	}
	s.notifyLocked()
	s.mu.Unlock()
	if t.cancel != nil {
		t.cancel()
		return t.handle, nil
	}
	_, err := cdp.Call(actx, s.browserTarget(cur), target.CloseTarget, target.CloseTargetParams{TargetID: t.targetID})
	return t.handle, s.cdpErr(err, "close %s", t.handle)
}

// loginStatusErr is the error of a login check whose page the site answered
// with an HTTP error status.
func (s *Session) loginStatusErr(rawURL string, code int, text string) error {
	status := fmt.Sprintf("HTTP %d", code)
	if text != "" {
		status += " " + text
	}
	if code == 401 || code == 403 {
		s.pause()
		return errcode.New(errcode.HumanRequired, "login check: %s answered %s, so the profile is not logged in", rawURL, status).
			WithHint("log in again in a headed browser on this profile")
	}
	if code >= 500 || code == 408 || code == 429 {
		// The site is failing or busy: as for one that cannot be reached
		// (see navigate), timeout, exit 1, and a later run may pass.
		return errcode.New(errcode.Timeout, "login check: %s answered %s, so the check cannot tell whether the profile is logged in", rawURL, status).
			WithHint("the site is failing or busy: no snapshot is taken and the latest good one is kept; run again when the site is back")
	}
	// 404 and the rest: the page is not there, whatever the login; the
	// workflow's URL needs a look, not a rerun (invalid_action, exit 2).
	return errcode.New(errcode.InvalidAction, "login check: %s answered %s, so the check cannot tell whether the profile is logged in", rawURL, status).
		WithHint("no snapshot is taken and the latest good one is kept; check login_check.url: the site has no such page for this profile")
}

// loginCheck opens a.URL and decides whether the profile is logged in:
// LoggedInSelector must appear, LoginWallSelector must not, and no CAPTCHA.
//
// A page the site answered with an HTTP error (404, a 5xx maintenance
// page) or that Chrome replaced with its error page fails the check
// whatever it shows: a login wall selector alone would otherwise pass it,
// and a refresh would snapshot a profile it never saw logged in. 401 and
// 403 are human_required (the site refuses the profile: log in again);
// 5xx, 408 and 429 are timeout (the site is failing or busy: run again
// later); any other status (404) is invalid_action: check the URL.
func (s *Session) loginCheck(actx, ctx context.Context, t *tab, a Action) error {
	// The status of the page's last document response (after redirects).
	// Chrome fails the navigation of an error answer without a body
	// (net::ERR_HTTP_RESPONSE_CODE_FAILURE), so it comes from the events.
	var (
		mu   sync.Mutex
		resp *network.Response
	)
	s.mu.Lock()
	frame := string(t.targetID)
	s.mu.Unlock()
	lctx, lcancel := context.WithCancel(actx)
	defer lcancel()
	if err := chromedp.Listen(lctx, func(ev any) {
		if ev, ok := ev.(*network.EventResponseReceived); ok && ev.Type == network.ResourceTypeDocument && string(ev.FrameID) == frame {
			mu.Lock()
			resp = ev.Response
			mu.Unlock()
		}
	}); err != nil {
		return s.cdpErr(err, "login check")
	}
	navErr := s.navigate(actx, t, a.URL)
	mu.Lock()
	r := resp
	mu.Unlock()
	if r != nil && r.Status >= 400 {
		return s.loginStatusErr(a.URL, int(r.Status), r.StatusText)
	}
	if navErr != nil {
		// Which page of the workflow could not load: the check's.
		return errcode.Hinted(navErr, errcode.Of(navErr), errcode.HintOf(navErr), "login check")
	}
	// The document's own status too: a navigation that only changes the
	// fragment (a hash-routed app) loads nothing, so no response event
	// comes, and the page may still be the error page it was.
	expr := `(() => {
		if (location.protocol === "chrome-error:") return "error";
		const nav = performance.getEntriesByType("navigation")[0];
		if (nav && nav.responseStatus >= 400) return "http:" + nav.responseStatus;
		if (document.querySelector(` + js(captchaSelector) + `)) return "captcha";
		const inSel = ` + js(a.LoggedInSelector) + `, wallSel = ` + js(a.LoginWallSelector) + `;
		if (inSel && document.querySelector(inSel)) return "in";
		if (wallSel && document.querySelector(wallSel)) return "wall";
		return "";
	})()`
	pctx := actx
	if a.LoggedInSelector == "" {
		// Only a wall selector: a page without it, once loaded, is logged in.
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(actx, 1500*time.Millisecond)
		defer cancel()
	}
	state, err := pollRetry[string](pctx, expr)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return s.cdpErr(err, "login check")
	}
	if err != nil || state == "" {
		if ctx.Err() != nil || s.Err() != nil {
			return s.cdpErr(err, "login check")
		}
		if a.LoggedInSelector == "" {
			state = "in"
		} else {
			state = "missing"
		}
	}
	if code, ok := strings.CutPrefix(state, "http:"); ok {
		n, _ := strconv.Atoi(code)
		return s.loginStatusErr(a.URL, n, "")
	}
	switch state {
	case "in":
		return nil
	case "error":
		return errcode.New(errcode.Internal, "login check: %s shows Chrome's error page instead of the site, so the check cannot tell whether the profile is logged in", a.URL).
			WithHint("no snapshot is taken and the latest good one is kept; check login_check.url, or run again when the site is back")
	case "captcha":
		s.pause()
		return errcode.New(errcode.HumanRequired, "login check: a CAPTCHA on %s needs a human", Host(a.URL)).WithHint("solve it in a headed browser on this profile, then run again")
	case "wall":
		s.pause()
		return errcode.New(errcode.HumanRequired, "login check: %s shows the login wall (%s)", Host(a.URL), a.LoginWallSelector).WithHint("log in again in a headed browser on this profile")
	default:
		s.pause()
		return errcode.New(errcode.HumanRequired, "login check: %s does not show %s, so the profile is logged out", Host(a.URL), a.LoggedInSelector).WithHint("log in again in a headed browser on this profile")
	}
}

// evaluate runs a JavaScript expression, awaiting a promise it returns, and
// gives its value as JSON, as JSON.stringify makes it (a Date becomes its
// ISO string, NaN and Infinity null). The value is first taken as a
// reference, so that a value JSON would quietly turn into {} or nothing (a
// DOM node, a Map, a function, a BigInt…) is refused with a hint instead of
// passing for a real result; any other object is then stringified in the
// page and released.
func evaluate(expr string) chromedp.Action[any] {
	return func(ctx context.Context, t *chromedp.Target) (any, error) {
		ro, err := chromedp.Evaluate[*runtime.RemoteObject](expr, chromedp.EvalAwaitPromise)(ctx, t)
		if err != nil {
			return nil, err
		}
		if ro.ObjectID != "" {
			defer func() {
				_, _ = cdp.Call(ctx, t, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: ro.ObjectID})
			}()
		}
		if what, hint := noJSON(ro); what != "" {
			return nil, errcode.New(errcode.InvalidAction, "the expression returned %s, which has no JSON value", what).WithHint("%s", hint)
		}
		if ro.ObjectID == "" { // a primitive, null or undefined
			if ro.UnserializableValue == "-0" {
				return float64(0), nil
			}
			return jsonValue(ro.Value)
		}
		res, err := cdp.Call(ctx, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
			FunctionDeclaration: `function() { return JSON.stringify(this); }`,
			ObjectID:            ro.ObjectID,
			ReturnByValue:       new(true),
		})
		if err != nil {
			return nil, err
		}
		if res.ExceptionDetails != nil { // a cycle, a BigInt inside
			why := res.ExceptionDetails.Text
			if ex := res.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
				why, _, _ = strings.Cut(ex.Description, "\n")
			}
			return nil, errcode.New(errcode.InvalidAction, "the value of the evaluate expression cannot be returned as JSON: %s", why).
				WithHint("make the expression return plain data (strings, numbers, arrays and objects without cycles), e.g. pick the fields you need instead of returning window or an object that refers to itself")
		}
		if res.Result == nil || len(res.Result.Value) == 0 {
			return nil, nil
		}
		var text string
		if err := json.Unmarshal(res.Result.Value, &text); err != nil {
			return nil, errcode.Wrap(err, errcode.Internal, "decoding the evaluate result")
		}
		return jsonValue([]byte(text))
	}
}

// noJSON names a value that JSON.stringify would turn into {}, an object of
// indexes or nothing, with a hint that returns its data instead; "" for one
// with a faithful JSON value.
func noJSON(ro *runtime.RemoteObject) (what, hint string) {
	switch ro.Type {
	case runtime.RemoteObjectTypeBigint:
		return "a BigInt (" + string(ro.UnserializableValue) + ")", "return String(x), or Number(x) when it fits"
	case runtime.RemoteObjectTypeSymbol:
		return "a Symbol", "return its description, e.g. s.description"
	case runtime.RemoteObjectTypeFunction:
		return "a function", "call it and return its result, or return plain data"
	}
	switch ro.Subtype {
	case runtime.RemoteObjectSubtypeNode:
		return "a DOM node (" + ro.ClassName + ")", "return a property of it, e.g. `document.querySelector('h1').textContent`, or use an extract step"
	case runtime.RemoteObjectSubtypeMap:
		return "a Map", "return Object.fromEntries(m) or [...m]"
	case runtime.RemoteObjectSubtypeSet:
		return "a Set", "return [...s]"
	case runtime.RemoteObjectSubtypeTypedarray, runtime.RemoteObjectSubtypeArraybuffer, runtime.RemoteObjectSubtypeDataview:
		return "binary data (" + ro.ClassName + ")", "return Array.from(new Uint8Array(buffer)) or a string made from it"
	case runtime.RemoteObjectSubtypeError:
		return "an Error (" + ro.ClassName + ")", "return its message, e.g. e.message"
	case runtime.RemoteObjectSubtypeRegexp:
		return "a RegExp", "return its source, e.g. r.source"
	case runtime.RemoteObjectSubtypeWeakmap, runtime.RemoteObjectSubtypeWeakset, runtime.RemoteObjectSubtypeIterator,
		runtime.RemoteObjectSubtypeGenerator, runtime.RemoteObjectSubtypeWebassemblymemory, runtime.RemoteObjectSubtypeWasmvalue:
		return "a " + ro.ClassName, "return plain data (strings, numbers, arrays and objects) made from it"
	}
	return "", ""
}

// jsonValue decodes a value returned by value; none (undefined, or what
// JSON cannot hold: NaN, Infinity, a BigInt) is nil.
func jsonValue(b []byte) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, errcode.Wrap(err, errcode.Internal, "decoding the evaluate result")
	}
	return v, nil
}
