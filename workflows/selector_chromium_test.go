package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"director/launcher"
)

// TestSelectorProblemNeverRefusesWhatChromiumTakes: every selector that
// Chromium's document.querySelectorAll accepts passes selectorProblem, so
// the load-time check never refuses a workflow that would run. The list
// has comments, escapes, strings holding brackets, groups left open at the
// end, namespaces, relative :has, Unicode, and invalid ones for contrast.
func TestSelectorProblemNeverRefusesWhatChromiumTakes(t *testing.T) {
	path := chromePath(t)
	sels := []string{
		`#whoami`, `form#login`, `a[href^='https://x/?a=[1]']`, `#a\:b`, `#a\[b`, `.a\,b`, `.a\(b`, `.a\)b`, `.a\"b`, `.a\'b`, `.a\\`, `.a\+`, `.a\>`,
		`#\31 23`, `.\3e a`, `.x\2c y`, `.a\3e`, `.a\3e `,
		`div > p + span ~ em`, `div>p+span~em`, `ul li:nth-child(2n+1)`, `li:nth-child(2n+1 of .x)`, `li:nth-child(2n + 1 of .x, .y)`, `li:nth-last-child(-n+3)`,
		`div:has(> img)`, `div:has(+ p)`, `div:has(~ p, > a)`, `a:not([href])`, `a:not(.x, .y)`, `:is(a, b) > c`, `:where(.a,.b)`,
		`input[name="q"]`, `[data-x="a,b"]`, `[data-x="a)b"]`, `[data-x='a]b']`, `[data-x="a\"b"]`, `[data-x='it\'s']`, `[data-x="(["]`,
		`[data-x="a" i]`, `[data-x="a" s]`, `[data-x=abc]`, `[ data-x = "v" ]`, `[*|href]`, `[|href]`, `*|a`, `|a`, `svg|a`,
		`a:nth-of-type(odd)`, `p::first-line`, `a:lang(en)`, `p:dir(ltr)`, `:root`, `:scope > a`,
		"div\n>\tp", "a,\nb", `a , b`, `a ,b`,
		`a/* x */`, `a /*,*/ b`, `a /* [ */`, `a /* it's */`, `/* > */ a`, `a /* ( */ b`,
		`a[title="x`, `a[title="x]`, `a[href`, `:not(a`, `:is(a, b`, `a:not([href`,
		`.a\`, `a\`, "\u00a0", "div >\u00a0", "div\u00a0", `a:has(> b, + c)`, `:host`, `a:-webkit-any(b, c)`,
		`[data-x="\"]"]`, `.a\\ > b`, `a > \+b`, `a +\~b`,
		"a\u2003", "\u2003a", `#é`, `.日本`,
		// invalid ones, to see both sides
		`form[[`, `form[`, `a]`, `a)`, `a[]`, `a,`, `a,,b`, `div >`, `> div`,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	br, err := launcher.Launch(ctx, launcher.Options{ChromePath: path, Headless: true, UserDataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close(context.Background())
	b, _ := json.Marshal(sels)
	js := `(` + string(b) + `).map(s => { try { document.querySelectorAll(s); return true } catch (e) { return false } })`
	ok, err := chromedp.Run(br.Context(), chromedp.Evaluate[[]bool](js))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sels {
		p := selectorProblem(s)
		switch {
		case ok[i] && p != "":
			t.Errorf("Chromium accepts %q, selectorProblem refuses it: %q", s, p)
		case !ok[i] && p == "":
			t.Logf("passes check, Chromium refuses (fine, browser judges): %q", s)
		case !ok[i]:
			t.Logf("both refuse: %q (%s)", s, strings.SplitN(p, ":", 2)[0])
		}
	}
}
