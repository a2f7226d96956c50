package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"director/errcode"
)

// TestNoXServerIsOneLine: a headed Chrome that exits at its start because
// it finds no X server ("Missing X server or $DISPLAY", among pages of
// D-Bus and zygote errors) fails with one line naming the DISPLAY and a
// hint to use --headless, not Chrome's output and a generic hint.
func TestNoXServerIsOneLine(t *testing.T) {
	chromeSays := "[1:2:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket /run/dbus/system_bus_socket\n" +
		"[1:1:ERROR:ui/ozone/platform/x11/ozone_platform_x11.cc:257] Missing X server or $DISPLAY\n" +
		"[1:1:ERROR:ui/aura/env.cc:253] The platform failed to initialize.  Exiting.\n"
	tests := []struct {
		name    string
		display string
		says    string
		want    string // in the message; "" means the generic failure
	}{
		{"dead display", ":99", chromeSays, "could not open a window on DISPLAY=:99"},
		{"no display", "", chromeSays, "no display to open its window on (DISPLAY is unset)"},
		{"another failure", ":99", "[1:1:ERROR:something else] it broke\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DISPLAY", tt.display)
			dir := t.TempDir()
			fake := filepath.Join(dir, "chrome")
			script := "#!/bin/sh\nprintf '%s' '" + strings.ReplaceAll(tt.says, "'", "") + "' >&2\nexit 1\n"
			if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := Launch(context.Background(), Options{ChromePath: fake, UserDataDir: filepath.Join(dir, "profile")})
			if errcode.Of(err) != errcode.BrowserLaunchFailed {
				t.Fatalf("err = %v (%s), want browser_launch_failed", err, errcode.Of(err))
			}
			if tt.want == "" {
				if strings.Contains(errcode.HintOf(err), "--headless") {
					t.Errorf("a failure that is not the display's got the display's hint: %v", err)
				}
				return
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "dbus") {
				t.Errorf("message %q, want one line with %q and none of Chrome's output", err, tt.want)
			}
			if !strings.Contains(errcode.HintOf(err), "--headless") {
				t.Errorf("hint %q does not name --headless", errcode.HintOf(err))
			}
		})
	}
}
