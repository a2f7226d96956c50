package workflows

import (
	"strings"
	"testing"
)

// TestSelectorProblem: the structural check refuses broken selectors and
// lets through every selector the browser takes (escapes, strings with
// brackets, :not(), :has() with a relative selector, lists).
func TestSelectorProblem(t *testing.T) {
	cases := []struct {
		sel  string
		want string // "" when the selector passes
	}{
		{"#whoami", ""},
		{"form#login", ""},
		{"a[href^='https://x/?a=[1]']", ""},
		{`#a\:b`, ""},
		{`#a\[b`, ""},
		{"div > p + span ~ em", ""},
		{"ul li:nth-child(2n+1)", ""},
		{"div:has(> img), a:not([href])", ""},
		{`input[name="q"]`, ""},
		{`[data-x="a,b"]`, ""},
		{"form[[", "[ inside the attribute selector"},
		{"form[", "no attribute after it"},
		{"a[href", ""},
		{"a /* [ */", ""},
		{"a /* it's */ b", ""},
		{"a /* unfinished", ""},
		{"a\u00a0", ""},
		{"a]", "] without a matching ["},
		{":not(a", ""},
		{"a)", ") without a matching ("},
		{"a[]", "empty attribute selector"},
		{`a[title="x]`, ""},
		{"a[title=\"x\ny\"]", "a line break cuts"},
		{"a,", "ends with a comma"},
		{"a,,b", "empty selector"},
		{"div >", `ends with the combinator '>'`},
		{"> div", `starts with the combinator '>'`},
	}
	for _, c := range cases {
		got := selectorProblem(c.sel)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("selectorProblem(%q) = %q, want ~%q", c.sel, got, c.want)
		}
	}
}
