package shellquote

import (
	"os/exec"
	"testing"
)

// Each quoted word, given to a real sh and bash, comes back as one
// argument, byte for byte.
func TestQuoteRoundTrips(t *testing.T) {
	cases := []struct{ in, want string }{
		{"work", "work"},
		{"http://127.0.0.1:8080/account", "http://127.0.0.1:8080/account"},
		{"http://127.0.0.1/account?a=1&next=/x y", "'http://127.0.0.1/account?a=1&next=/x y'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
		{"$HOME", "'$HOME'"},
		{"`id`", "'`id`'"},
		{"a\nb", "'a\nb'"},
		{"*", "'*'"},
		{"~root", "'~root'"},
		{"=ls", "'=ls'"},
		{"--user-data-dir=/tmp/p", "--user-data-dir=/tmp/p"},
		{"!x", "'!x'"},
		{"ünï", "'ünï'"},
		{`back\slash`, `'back\slash'`},
	}
	for _, c := range cases {
		got := Quote(c.in)
		if got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
		for _, sh := range []string{"sh", "bash"} {
			path, err := exec.LookPath(sh)
			if err != nil {
				t.Fatalf("%s: %v", sh, err)
			}
			out, err := exec.Command(path, "-c", `printf '%s\0' `+got, "_").Output()
			if err != nil {
				t.Fatalf("%s -c with %s: %v", sh, got, err)
			}
			if want := c.in + "\x00"; string(out) != want {
				t.Errorf("%s: Quote(%q) comes back as %q", sh, c.in, out)
			}
		}
	}
}
