package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"director/catalog"
	"director/snapshot"
)

// director version says which archive formats and catalog schema this
// build knows (what machines sharing a store must agree on), as text and
// as one JSON object, and touches no home.
func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the text output
	}{
		{"text", []string{"version"}, []string{
			fmt.Sprintf("archive format  writes %d, reads 1 to %d", snapshot.FormatVersion, snapshot.FormatVersion),
			"catalog schema  " + strconv.Itoa(catalog.SchemaVersion()),
		}},
		{"json", []string{"--json", "version"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			code, out, errOut := runDirector(t, append([]string{"--home", home}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q does not say %q", out, w)
				}
			}
			if tc.want == nil {
				var got struct {
					Status  string      `json:"status"`
					Version versionJSON `json:"version"`
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("not one JSON object: %v\n%s", err, out)
				}
				v := got.Version
				if got.Status != "ok" || v.ArchiveFormat != snapshot.FormatVersion || len(v.ReadsFormats) != snapshot.FormatVersion || v.ReadsFormats[0] != 1 ||
					v.CatalogSchema != catalog.SchemaVersion() || v.Go == "" {
					t.Errorf("version %+v (status %q)", v, got.Status)
				}
			}
			if _, err := os.Stat(home); !os.IsNotExist(err) {
				t.Errorf("version made the home %s (%v)", home, err)
			}
		})
	}
}
