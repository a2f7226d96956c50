package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"director/errcode"
)

func TestKeepSessionCookiesPrefs(t *testing.T) {
	t.Run("keeps other preferences, drops saved tabs", func(t *testing.T) {
		dir := t.TempDir()
		def := filepath.Join(dir, "Default")
		if err := os.MkdirAll(filepath.Join(def, "Sessions"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(def, "Sessions", "Tabs_1"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		orig := `{"profile":{"name":"Work"},"session":{"restore_on_startup":5,"startup_urls":["https://a.example/"]}}`
		if err := os.WriteFile(filepath.Join(def, "Preferences"), []byte(orig), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := keepSessionCookies(dir, true); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Profile struct{ Name string } `json:"profile"`
			Session struct {
				Restore     int      `json:"restore_on_startup"`
				StartupURLs []string `json:"startup_urls"`
			} `json:"session"`
		}
		b, _ := os.ReadFile(filepath.Join(def, "Preferences"))
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Profile.Name != "Work" || got.Session.Restore != 1 || len(got.Session.StartupURLs) != 1 {
			t.Errorf("preferences now %s", b)
		}
		if st, _ := os.Stat(filepath.Join(def, "Preferences")); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", st.Mode())
		}
		if _, err := os.Stat(filepath.Join(def, "Sessions")); !os.IsNotExist(err) {
			t.Errorf("saved tabs still there: %v", err)
		}
	})
	t.Run("fresh profile", func(t *testing.T) {
		dir := t.TempDir()
		if err := keepSessionCookies(dir, false); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "Default", "Preferences"))
		if err != nil || string(b) != `{"session":{"restore_on_startup":1}}` {
			t.Errorf("got %s, %v", b, err)
		}
	})
	t.Run("damaged preferences left alone", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "Default", "Preferences")
		_ = os.MkdirAll(filepath.Dir(p), 0o700)
		_ = os.WriteFile(p, []byte("{nope"), 0o600)
		err := keepSessionCookies(dir, false)
		if errcode.Of(err) != errcode.BrowserLaunchFailed {
			t.Fatalf("err %v", err)
		}
		if b, _ := os.ReadFile(p); string(b) != "{nope" {
			t.Errorf("rewrote a damaged file: %s", b)
		}
	})
}
