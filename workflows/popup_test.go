package workflows

import (
	"context"
	"strings"
	"testing"

	"director/catalog"
	"director/errcode"
)

// TestPopupSteps: a page opens a popup, which gets the handle t2; later
// steps reach it with switch_tab/close_tab (tab: t2).
func TestPopupSteps(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, steps string
		code        errcode.Code // "" = the run succeeds
		failed      int
		via         string
	}{
		{"window.open, read, close_tab", `  - navigate: SITE/popups
  - click: "#open-popup"
  - switch_tab: {tab: t2}
  - extract: {selector: "#via", as: via}
  - close_tab: {tab: t2}
  - assert: {selector: h1, text: Popups}
`, "", 0, "open"},
		{"target=_blank link, shorthand handles", `  - navigate: SITE/popups
  - click: "#popup-link"
  - switch_tab: t2
  - extract: {selector: "#via", as: via}
  - switch_tab: t1
  - close_tab: t2
`, "", 0, "link"},
		// The popup closes itself while a step waits on it: tab_not_found,
		// not a timeout.
		{"popup that closes itself", `  - navigate: SITE/popups
  - click: "#popup-link"
  - switch_tab: t2
  - click: "#close-me"
  - wait_for: "#not-on-the-page"
    timeout: 60s
  - switch_tab: t1
`, errcode.TabNotFound, 4, ""},
		{"popup that never opens", `  - navigate: SITE/popups
  - switch_tab: t2
    timeout: 500ms
`, errcode.TabNotFound, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.wf(t, "name: popup\nprofile: null\nsession:\n  blocklist: [blocked.test]\nsteps:\n"+c.steps)
			res, err := e.run(t, w)
			if c.code == "" {
				mustOK(t, res, err)
				if res.Outputs["via"] != c.via {
					t.Fatalf("outputs %v", res.Outputs)
				}
			} else {
				if errcode.Of(err) != c.code || res.FailedStep == nil || res.FailedStep.Index != c.failed {
					t.Fatalf("got %v [%s], failed step %+v", err, errcode.Of(err), res.FailedStep)
				}
				if !strings.Contains(errcode.HintOf(err), "t1") {
					t.Fatalf("hint %q does not list the open tabs", errcode.HintOf(err))
				}
			}
			evs, err := e.cat.ListEvents(context.Background(), catalog.EventFilter{Session: res.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			var popup bool
			for _, ev := range evs {
				if ev.Action == "popup" && ev.Tab == "t2" && ev.Detail == "opened by t1" && ev.ResultCode == "ok" {
					popup = true
				}
			}
			if popup != (c.failed != 1) {
				t.Fatalf("popup event in the audit log: %v, events %+v", popup, evs)
			}
		})
	}
}

// TestStaleElementRetries: /stale swaps its input on the first focus. The
// type step fails with element_stale; with retries it types into the new
// input.
func TestStaleElementRetries(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name     string
		retries  int
		code     errcode.Code
		attempts int
	}{
		{"no retries", 0, errcode.ElementStale, 1},
		{"one retry", 1, "", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := e.wf(t, `name: stale
profile: null
steps:
  - navigate: SITE/stale
  - type: {selector: "#editor", text: typed}
    retries: `+string(rune('0'+c.retries))+`
  - extract: {selector: "#editor", kind: value, as: editor}
`)
			res, err := e.run(t, w)
			if errcode.Of(err) != c.code {
				t.Fatalf("got %v [%s], want %q", err, errcode.Of(err), c.code)
			}
			if res.Steps[1].Attempts != c.attempts {
				t.Fatalf("attempts %d, want %d", res.Steps[1].Attempts, c.attempts)
			}
			if c.code == "" && res.Outputs["editor"] != "typed" {
				t.Fatalf("outputs %v", res.Outputs)
			}
		})
	}
}
