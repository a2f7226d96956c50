package launcher

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"director/errcode"
)

// pathNames are the executable names Find looks up on PATH, in order.
func pathNames() []string {
	return []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}
}

// installPaths are the usual install locations outside PATH, in order.
func installPaths(goos string, getenv func(string) string) []string {
	switch goos {
	case "darwin":
		home := getenv("HOME")
		return []string{
			"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
			"/Applications/Chromium.app/Contents/MacOS/Chromium",
			filepath.Join(home, "Applications/Google Chrome.app/Contents/MacOS/Google Chrome"),
			filepath.Join(home, "Applications/Chromium.app/Contents/MacOS/Chromium"),
		}
	case "windows":
		var out []string
		for _, env := range []string{"ProgramFiles", "ProgramFiles(x86)", "LocalAppData"} {
			if dir := getenv(env); dir != "" {
				out = append(out,
					filepath.Join(dir, `Google\Chrome\Application\chrome.exe`),
					filepath.Join(dir, `Chromium\Application\chrome.exe`))
			}
		}
		return out
	default:
		return []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/snap/bin/chromium"}
	}
}

// Find returns the Chrome executable to run. The order is: explicit (the
// --chrome flag), then the CHROME_PATH environment variable, then chromium,
// chromium-browser, google-chrome, google-chrome-stable and chrome on PATH,
// then the usual macOS and Windows install paths. An explicit path or
// CHROME_PATH that does not exist is an error, not a reason to look
// elsewhere. The error code is browser_launch_failed.
func Find(explicit string) (string, error) {
	return find(explicit, os.Getenv, exec.LookPath, installPaths(runtime.GOOS, os.Getenv))
}

func find(explicit string, getenv func(string) string, lookPath func(string) (string, error), fallbacks []string) (string, error) {
	source := "--chrome / CHROME_PATH" // the flag, or the variable that fills it
	if explicit == "" {
		explicit, source = getenv("CHROME_PATH"), "CHROME_PATH"
	}
	if explicit != "" {
		p, err := lookPath(explicit)
		if err != nil {
			return "", errcode.Hinted(err, errcode.BrowserLaunchFailed,
				"point "+source+" at an executable Chrome or Chromium, or unset it to search PATH",
				"%s %q is not an executable", source, explicit)
		}
		return p, nil
	}
	for _, name := range pathNames() {
		if p, err := lookPath(name); err == nil {
			return p, nil
		}
	}
	for _, p := range fallbacks {
		st, err := os.Stat(p)
		if err == nil && !st.IsDir() {
			return p, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
	}
	return "", errcode.New(errcode.BrowserLaunchFailed, "no Chrome or Chromium found on PATH or in the usual install locations").
		WithHint("install it (Debian: apt-get install chromium) or set CHROME_PATH / --chrome to its executable")
}
