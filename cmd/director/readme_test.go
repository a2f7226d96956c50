package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"director/snapshot"
)

// README's table of default excludes lists exactly snapshot.DefaultExcludes,
// in order.
func TestREADMEListsDefaultExcludes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "### What is excluded")
	end := strings.Index(readme[max(start, 0):], "The runtime files")
	if start < 0 || end < 0 {
		t.Fatal("README has no \"What is excluded\" section")
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(readme[start:start+end], -1) {
		listed = append(listed, m[1])
	}
	if want := snapshot.DefaultExcludes(); !slices.Equal(listed, want) {
		t.Errorf("README lists %q\nthe code excludes %q", listed, want)
	}
}
