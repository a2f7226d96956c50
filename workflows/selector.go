package workflows

import (
	"fmt"
	"strings"
)

// selectorProblem returns why sel cannot be a CSS selector that
// document.querySelector accepts, or "" when it may be one. It only looks at
// the structure (brackets, parentheses, quotes, commas and combinators), as
// CSS's own tokenizer reads it: comments are skipped, and a string, a [ or a
// ( still open at the end is closed there, as browsers do (`a[href` is
// `a[href]`). So it never refuses a selector the browser takes
// (selector_chromium_test.go checks that against Chromium); the browser
// still judges the rest (an unknown pseudo-class, an id starting with a
// digit) when the workflow runs.
func selectorProblem(sel string) string {
	type open struct {
		r   rune
		pos int
	}
	var stack []open
	top := func() rune {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1].r
	}
	// part is the current comma-separated selector at the top level.
	var part strings.Builder
	endPart := func(last bool) string {
		p := strings.Trim(part.String(), cssSpace)
		part.Reset()
		switch {
		case p == "" && last:
			return "ends with a comma: a selector list needs a selector after each comma"
		case p == "":
			return "has an empty selector in its comma-separated list"
		case strings.ContainsRune(">+~", rune(p[0])):
			return fmt.Sprintf("starts with the combinator %q: it needs a selector on its left", p[0])
		case strings.ContainsRune(">+~", rune(p[len(p)-1])) && !strings.HasSuffix(p, `\`+p[len(p)-1:]):
			return fmt.Sprintf("ends with the combinator %q: it needs a selector on its right", p[len(p)-1])
		}
		return ""
	}
	rs := []rune(sel)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '/' && i+1 < len(rs) && rs[i+1] == '*':
			// A comment, to its end or the selector's.
			j := i + 2
			for j+1 < len(rs) && (rs[j] != '*' || rs[j+1] != '/') {
				j++
			}
			i = j + 1 // on the comment's closing /, or past the end
			if len(stack) == 0 {
				part.WriteRune(' ')
			}
			continue
		case r == '\\':
			// An escape: the next character is literal.
			if i+1 < len(rs) {
				if len(stack) == 0 {
					part.WriteRune(r)
					part.WriteRune(rs[i+1])
				}
				i++
			}
			continue
		case r == '"' || r == '\'':
			j := i + 1
			for ; j < len(rs) && rs[j] != r; j++ {
				if rs[j] == '\\' {
					j++
				} else if rs[j] == '\n' {
					break
				}
			}
			if j < len(rs) && rs[j] != r { // a newline ends it: a bad string
				return fmt.Sprintf("has a string that a line break cuts, starting at %q", string(rs[i:j]))
			}
			j = min(j, len(rs)-1) // one still open at the end is closed there
			if len(stack) == 0 {
				part.WriteString(string(rs[i : j+1]))
			}
			i = j
			continue
		case r == '[':
			if top() == '[' {
				return fmt.Sprintf("has a [ inside the attribute selector opened at character %d", stack[len(stack)-1].pos+1)
			}
			if len(stack) == 0 {
				part.WriteRune(r)
			}
			stack = append(stack, open{r, i})
			continue
		case r == '(':
			if top() == '[' {
				return fmt.Sprintf("has a ( inside the attribute selector opened at character %d", stack[len(stack)-1].pos+1)
			}
			if len(stack) == 0 {
				part.WriteRune(r)
			}
			stack = append(stack, open{r, i})
			continue
		case r == ']' || r == ')':
			want := map[rune]rune{']': '[', ')': '('}[r]
			if top() != want {
				return fmt.Sprintf("has a %c without a matching %c", r, want)
			}
			if r == ']' && strings.TrimSpace(string(rs[stack[len(stack)-1].pos+1:i])) == "" {
				return "has an empty attribute selector []"
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				part.WriteRune(r)
			}
			continue
		case r == ',' && len(stack) == 0:
			if p := endPart(false); p != "" {
				return p
			}
			continue
		}
		if len(stack) == 0 {
			part.WriteRune(r)
		}
	}
	// A [ or ( still open is closed at the end, as the browser does; an
	// attribute selector needs a name all the same.
	for _, o := range stack {
		if o.r == '[' && strings.Trim(string(rs[o.pos+1:]), cssSpace) == "" {
			return fmt.Sprintf("has a [ at character %d with no attribute after it", o.pos+1)
		}
	}
	if len(stack) > 0 {
		return ""
	}
	return endPart(true)
}

// cssSpace is what CSS counts as white space; a no-break space is not.
const cssSpace = " \t\n\r\f"
