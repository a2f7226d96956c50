package shellquote

import "strings"

// Quote returns s as one word of a POSIX shell command (sh, bash, zsh): s
// itself when it holds only characters no shell treats specially, else s in
// single quotes, each single quote inside ending the quoted run, escaped
// with a backslash, and a new run begun.
func Quote(s string) string {
	if s != "" && s[0] != '=' && strings.Trim(s, safe+"=") == "" { // zsh expands only a leading =
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// safe are the characters that mean nothing to sh, bash or zsh anywhere in
// a word. zsh globs ? and [ and expands a leading ~ or =, so they are out
// (= is safe after the first character: --flag=value);
// so is every character above ASCII, which a locale may treat otherwise.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+:,./_-"
