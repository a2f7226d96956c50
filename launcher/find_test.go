package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"director/errcode"
)

func TestFindOrder(t *testing.T) {
	tmp := t.TempDir()
	fallback := filepath.Join(tmp, "Google Chrome")
	if err := os.WriteFile(fallback, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		explicit  string
		env       string
		onPath    []string
		fallbacks []string
		want      string
		wantCode  errcode.Code
	}{
		{name: "explicit wins over everything", explicit: "/opt/x/chrome", env: "/env/chrome", onPath: []string{"chromium", "/opt/x/chrome"}, want: "/opt/x/chrome"},
		{name: "CHROME_PATH next", env: "/env/chrome", onPath: []string{"chromium", "/env/chrome"}, want: "/env/chrome"},
		{name: "explicit name on PATH", explicit: "google-chrome", onPath: []string{"chromium", "google-chrome"}, want: "/bin/google-chrome"},
		{name: "missing explicit does not fall back", explicit: "/nope/chrome", onPath: []string{"chromium"}, wantCode: errcode.BrowserLaunchFailed},
		{name: "chromium before google-chrome", onPath: []string{"google-chrome", "chromium"}, want: "/bin/chromium"},
		{name: "chromium-browser before google-chrome", onPath: []string{"google-chrome", "chromium-browser"}, want: "/bin/chromium-browser"},
		{name: "google-chrome before google-chrome-stable", onPath: []string{"google-chrome-stable", "google-chrome"}, want: "/bin/google-chrome"},
		{name: "google-chrome-stable before chrome", onPath: []string{"chrome", "google-chrome-stable"}, want: "/bin/google-chrome-stable"},
		{name: "chrome last on PATH", onPath: []string{"chrome"}, want: "/bin/chrome"},
		{name: "install path when PATH has none", fallbacks: []string{filepath.Join(tmp, "missing"), fallback}, want: fallback},
		{name: "nothing anywhere", fallbacks: []string{filepath.Join(tmp, "missing")}, wantCode: errcode.BrowserLaunchFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "CHROME_PATH" {
					return tc.env
				}
				return ""
			}
			lookPath := func(name string) (string, error) {
				if !slices.Contains(tc.onPath, name) {
					return "", errors.New("not found")
				}
				if strings.HasPrefix(name, "/") {
					return name, nil
				}
				return "/bin/" + name, nil
			}
			got, err := find(tc.explicit, getenv, lookPath, tc.fallbacks)
			if tc.wantCode != "" {
				if errcode.Of(err) != tc.wantCode || errcode.HintOf(err) == "" {
					t.Fatalf("got %q, %v; want %s with a hint", got, err, tc.wantCode)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFindHintNamesInstall(t *testing.T) {
	_, err := find("", func(string) string { return "" }, func(string) (string, error) { return "", errors.New("no") }, nil)
	if h := errcode.HintOf(err); !strings.Contains(h, "apt-get install chromium") || !strings.Contains(h, "CHROME_PATH") {
		t.Errorf("hint %q", h)
	}
}

func TestInstallPaths(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"HOME": "/Users/a", "ProgramFiles": `C:\PF`, "LocalAppData": `C:\L`}[k]
	}
	if p := installPaths("darwin", env); p[0] != "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" || !strings.Contains(strings.Join(p, "|"), "Chromium.app") {
		t.Errorf("darwin: %v", p)
	}
	if p := installPaths("windows", env); len(p) != 4 || !strings.Contains(p[0], "chrome.exe") {
		t.Errorf("windows: %v", p)
	}
}

func TestArgs(t *testing.T) {
	args := Args(Options{Headless: true, Viewport: Viewport{1280, 800}, ExtraFlags: []string{"--lang=en"}}, "/p")
	for _, want := range []string{"--user-data-dir=/p", "--remote-debugging-pipe", "--password-store=basic", "--use-mock-keychain",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-quic", "--headless=new", "--window-size=1280,800", "--lang=en"} {
		if !slices.Contains(args, want) {
			t.Errorf("missing %s in %v", want, args)
		}
	}
	if args[len(args)-1] != "about:blank" {
		t.Errorf("last arg %q", args[len(args)-1])
	}
	headed := Args(Options{}, "/p")
	if slices.Contains(headed, "--headless=new") {
		t.Error("headed run has --headless")
	}
	if os.Geteuid() == 0 && !slices.Contains(headed, "--no-sandbox") {
		t.Error("root run lacks --no-sandbox")
	}
	if !slices.Contains(Args(Options{NoSandbox: true}, "/p"), "--no-sandbox") {
		t.Error("NoSandbox ignored")
	}
}

// TestFindOnRealPath uses real executables on a real PATH.
func TestFindOnRealPath(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"google-chrome", "chrome", "chromium"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	t.Setenv("CHROME_PATH", "")
	if got, err := Find(""); err != nil || got != filepath.Join(dir, "chromium") {
		t.Errorf("Find = %q, %v; want chromium first", got, err)
	}
	if err := os.Remove(filepath.Join(dir, "chromium")); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(""); err != nil || got != filepath.Join(dir, "google-chrome") {
		t.Errorf("Find = %q, %v; want google-chrome next", got, err)
	}
	t.Setenv("CHROME_PATH", filepath.Join(dir, "chrome"))
	if got, err := Find(""); err != nil || got != filepath.Join(dir, "chrome") {
		t.Errorf("Find = %q, %v; want CHROME_PATH", got, err)
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		t.Setenv("CHROME_PATH", "")
		t.Setenv("PATH", t.TempDir())
		if got, err := Find(""); err != nil || got != "/usr/bin/chromium" {
			t.Errorf("Find with an empty PATH = %q, %v; want the install path /usr/bin/chromium", got, err)
		}
	}
}
