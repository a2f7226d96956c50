package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/urfave/cli/v2"

	"director/errcode"
	"director/internal/shellquote"
	"director/launcher"
	"director/profiles"
)

// How `profile open` ended the browser session.
const (
	closedByWindow    = "window_closed"
	closedByEnter     = "enter"
	closedByInterrupt = "interrupt"
)

// profileOpenCommand is "director profile open NAME": Chrome on the profile
// for a manual login, then optionally a snapshot.
func profileOpenCommand() *cli.Command {
	return &cli.Command{
		Name:      "open",
		Usage:     "open Chrome on a profile to log in by hand, then (with --snapshot) snapshot it",
		ArgsUsage: "NAME",
		Description: "Starts Chrome (headed) on the profile, creating the profile when missing. Log in, then close\n" +
			"the window or press Enter here (Ctrl-C works too): Chrome is closed gracefully so that it writes its\n" +
			"cookies, and with --snapshot the profile is snapshotted right away. Session-only cookies are kept\n" +
			"(the profile is set to \"continue where you left off\"). Refused when the profile is in use.\n" +
			"Without --snapshot, snapshot it afterwards with `director profile snapshot NAME`; until a snapshot or\n" +
			"restore, a run with restore: latest keeps this profile rather than restore an older snapshot over it.\n" +
			"The global --chrome (CHROME_PATH) names the Chrome to start, before or after the command name.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "open `URL` in the first tab (the site's login page)"},
			&cli.BoolFlag{Name: "snapshot", Usage: "snapshot the profile after the browser is closed"},
			&cli.StringFlag{Name: "note", Usage: "store `TEXT` as the note of the --snapshot (default: \"profile open\")"},
			&cli.BoolFlag{Name: "headless", Usage: "run without a window (for scripts: close with Enter or end of input)"},
			&cli.DurationFlag{Name: "close-timeout", EnvVars: []string{"DIRECTOR_CLOSE_TIMEOUT"}, Value: launcher.DefaultCloseTimeout, Usage: "wait up to `DURATION` for Chrome to exit before killing it"},
		},
		Action: func(c *cli.Context) error {
			// The recipients only for --snapshot: a login without one
			// encrypts nothing.
			return withManager(recipientsIf(c.Bool("snapshot")), checkOpen, profileOpen)(c)
		},
	}
}

// openResult is the --json answer of `profile open`.
type openResult struct {
	Status   string                   `json:"status"`
	Profile  string                   `json:"profile"`
	Path     string                   `json:"path"`
	Created  bool                     `json:"created,omitempty"`
	ClosedBy string                   `json:"closed_by"`
	Killed   bool                     `json:"killed,omitempty"`
	Chrome   string                   `json:"chrome_version,omitempty"`
	Open     time.Duration            `json:"open_ns"`
	Snapshot *profiles.SnapshotResult `json:"snapshot,omitempty"`
}

// checkOpen refuses what profile open would refuse before Chrome starts
// (a bad name or URL, a --snapshot the store would refuse, no Chrome, no
// display for a window) before anything is created: the home, director.db
// or the profile.
func checkOpen(c *cli.Context, m *profiles.Manager, _ bool) error {
	if _, err := closeTimeout(c); err != nil {
		return err
	}
	name, err := oneArg(c, "profile NAME")
	if err != nil {
		return err
	}
	if _, err := m.Exists(name); err != nil {
		return err // a bad name, or a file where the profile would be
	}
	if err := checkOpenURL(c.String("url")); err != nil {
		return err
	}
	if c.Bool("snapshot") {
		// Refuse a snapshot the store would refuse (a remote store without
		// encryption) now, not after the person has logged in by hand.
		if err := m.SnapshotAllowed(); err != nil {
			return fmt.Errorf("profile open %s --snapshot: %w", name, err)
		}
	}
	if _, err := findChrome(c); err != nil {
		return err
	}
	if !c.Bool("headless") {
		return needDisplay(openDisplayHint(name, c.String("url"), c.Bool("snapshot")))
	}
	return nil
}

// openDisplayHint is the hint of a profile open without a display: a
// login by hand needs a window, so the way that works comes first (log in
// where there is a display, snapshot there, restore here), then how to
// get a display here. --headless, which shows no window to log in on,
// comes last, for the uses that need no login, and never with --snapshot,
// which would snapshot whatever the profile holds.
func openDisplayHint(name, url string, snapshot bool) displayHint {
	again := "profile open " + name
	if url != "" {
		again += " --url " + shellquote.Quote(url)
	}
	return func(fix string) string {
		h := fmt.Sprintf("log in by hand on a machine with a display (%s --snapshot there, into a store both machines share), "+
			"then restore that login here: `director profile restore %s latest`; or %s", again, name, fix)
		if !snapshot {
			h += "; --headless opens the profile without a window, for uses other than a login by hand"
		}
		return h
	}
}

// profileOpen is profile open, once checkOpen has passed.
func profileOpen(c *cli.Context, g *globals, m *profiles.Manager) error {
	closeWait, err := closeTimeout(c) // checked by checkOpen
	if err != nil {
		return err
	}
	name := c.Args().First()
	headless := c.Bool("headless")
	ctx := c.Context

	// The profile lock keeps snapshot, restore and runs off the profile
	// while the person logs in; fail fast rather than wait.
	lock, err := m.Lock(ctx, name, -1)
	if err != nil {
		return err
	}
	defer lock.Unlock()

	res := openResult{Status: "ok", Profile: name, Path: m.Dir(name)}
	exists, err := m.Exists(name)
	if err != nil {
		return err
	}
	if !exists {
		if err := m.Create(ctx, name); err != nil {
			return err
		}
		res.Created = true
	}

	b, err := launcher.Launch(ctx, launcher.Options{
		ChromePath:         c.String("chrome"),
		UserDataDir:        m.Dir(name),
		Headless:           headless,
		KeepSessionCookies: true,
		CloseTimeout:       closeWait,
		Log:                g.Log,
	})
	if err != nil {
		return err
	}
	res.Chrome = b.Version()
	started := time.Now()
	closeCtx := context.WithoutCancel(ctx)
	defer b.Close(closeCtx) // a no-op after the Close below
	// From now on the profile may hold what the person does in Chrome and
	// no snapshot has: until one is taken, a run's restore: latest keeps
	// this profile rather than bring back an older login over it. It is
	// recorded now, and again when the person is done (the login's time),
	// not only once Chrome has closed: a second Ctrl-C while Chrome closes
	// quits at once, and director killed while the person logs in leaves
	// Chrome to shut down (and write its cookies) on its own.
	markUnsaved := func() {
		if err := m.MarkUnsaved(closeCtx, name); err != nil {
			g.Log.Warn("cannot record that the profile has an unsaved login; snapshot it before the next run", "profile", name, "err", err)
		}
	}
	markUnsaved()

	if u := c.String("url"); u != "" {
		nctx, cancel := context.WithTimeout(b.Context(), 30*time.Second)
		err := chromedp.Do(nctx, chromedp.Navigate(u))
		cancel()
		if err != nil {
			g.Log.Warn("could not open the URL; navigate by hand", "url", u, "err", err)
		}
	}

	say := func(format string, a ...any) {
		if !g.Quiet {
			fmt.Fprintf(g.Stderr, format, a...)
		}
	}
	if res.Created {
		say("created profile %s at %s\n", name, m.Dir(name))
	}
	if headless {
		say("Chrome %s is running headless on profile %s. Press Enter (or Ctrl-C) to close it.\n", b.Version(), name)
	} else {
		say("Chrome is open on profile %s. Log in, then close the window or press Enter here.\n", name)
	}

	res.ClosedBy = waitClosed(ctx, b.Done(), stdinOf(c), headless)
	markUnsaved()
	if res.ClosedBy != closedByWindow {
		say("closing Chrome (waiting for it to save the profile)...\n")
	}
	if err := b.Close(closeCtx); err != nil {
		return err
	}
	res.Open = time.Since(started)
	res.Killed = b.Killed()
	if res.ClosedBy == closedByWindow && b.ExitErr() != nil {
		again := "director profile open " + name // in backticks below
		if u := c.String("url"); u != "" {
			again += " --url " + shellquote.Quote(u)
		}
		return errcode.New(errcode.BrowserLaunchFailed, "Chrome exited abnormally (%v); the profile was not snapshotted", b.ExitErr()).
			WithHint("run `%s --snapshot` again and close the window normally", again)
	}
	if res.Killed {
		say("warning: Chrome did not exit in time and was killed; recent cookies may be missing\n")
	}

	if c.Bool("snapshot") {
		// The login is fresh: snapshot even after Ctrl-C. A second Ctrl-C
		// stops the snapshot (which leaves nothing half-stored); a third
		// quits at once.
		allowAnotherInterrupt(ctx)
		sctx := context.WithoutCancel(ctx)
		if sigs := snapshotStopSignals(); len(sigs) > 0 { // none would mean every signal
			var stop context.CancelFunc
			sctx, stop = signal.NotifyContext(sctx, sigs...)
			defer stop()
		}
		note := c.String("note")
		if note == "" {
			note = "profile open"
		}
		say("snapshotting %s...\n", name)
		snap, err := m.Snapshot(sctx, name, profiles.SnapshotOptions{Note: note, Lock: lock})
		if err != nil {
			return err
		}
		g.hints.hintAll(snap.Warnings)
		res.Snapshot = snap
	}

	g.emit(res, func(w io.Writer) {
		fmt.Fprintf(w, "closed Chrome on %s (%s) after %s\n", name, res.ClosedBy, res.Open.Round(time.Second))
		if s := res.Snapshot; s != nil {
			writeSnapshot(w, s)
		} else {
			fmt.Fprintf(w, "next: %s\n", g.hints.command("profile snapshot "+name))
		}
	})
	return nil
}

// snapshotStopSignals are the signals that stop open's --snapshot: Ctrl-C
// and SIGTERM, as stopSignals has them (a signal director was started with
// ignored stays ignored: listening for it would undo that). A closed
// terminal's SIGHUP does not stop the snapshot of the login just made.
func snapshotStopSignals() []os.Signal {
	var sigs []os.Signal
	for _, s := range stopSignals() {
		if s != syscall.SIGHUP {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

// checkOpenURL refuses a --url that Chrome cannot open, such as
// mail.example.com without its scheme, before Chrome starts: Chrome opened
// a blank tab, and the one warning about it scrolled by.
func checkOpenURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	e := errcode.New(errcode.InvalidInput, "--url %q is not an absolute http:// or https:// URL", s)
	if strings.Contains(s, "://") {
		return e.WithHint("give the login page's http:// or https:// address")
	}
	return e.WithHint("give the login page's whole address, e.g. --url %s", shellquote.Quote("https://"+strings.TrimPrefix(s, "//")))
}

// waitClosed waits until the person is done with the browser and says how
// they said so: the browser exited (browserDone: the window was closed), a
// line on in (Enter), or ctx ended (Ctrl-C). The end of in also means done
// when headless (scripts close it that way), but not with a window: a
// command started without a terminal (stdin /dev/null: a desktop launcher,
// nohup, `&` in a script) would otherwise close Chrome before anyone could
// log in, and snapshot the profile without the login.
func waitClosed(ctx context.Context, browserDone <-chan struct{}, in io.Reader, headless bool) string {
	enter := make(chan struct{})
	go func() {
		// The goroutine may outlive the command when nobody types; it only
		// reads stdin.
		_, err := bufio.NewReader(in).ReadString('\n')
		if inputSaysDone(err, headless) {
			close(enter)
		}
	}()
	select {
	case <-browserDone:
		return closedByWindow
	case <-enter:
		return closedByEnter
	case <-ctx.Done():
		return closedByInterrupt
	}
}

// inputSaysDone tells whether reading a line from the input, which ended
// with err, means that the person is done: a whole line does, and so does
// the end of the input when headless, never with a window.
func inputSaysDone(err error, headless bool) bool {
	return err == nil || headless
}

// displayHint makes the hint of a missing display from fix, how to get
// one ("run it in a desktop session (or over ssh -X)"), and the command's
// own ways out.
type displayHint func(fix string) string

// orElse is the displayHint that gives fix, then way.
func orElse(way string) displayHint {
	return func(fix string) string { return fix + ", or " + way }
}

// needDisplay fails with browser_launch_failed when a headed Chrome has no
// display to show its window on (Linux without DISPLAY or WAYLAND_DISPLAY):
// Chrome would only exit with "Missing X server". hint says what to do.
//
// A DISPLAY naming an X server that is not there (DISPLAY=:99 with no
// server on it) fails the same way, before anything is created: Chrome
// started, printed pages of errors ending in "Missing X server or
// $DISPLAY", and `profile open` had made the home, the catalog and the
// profile by then.
func needDisplay(hint displayHint) error {
	if runtime.GOOS != "linux" || os.Getenv("WAYLAND_DISPLAY") != "" {
		return nil
	}
	display := os.Getenv("DISPLAY")
	if display == "" {
		return errcode.New(errcode.BrowserLaunchFailed, "no display to show Chrome on (DISPLAY and WAYLAND_DISPLAY are unset)").
			WithHint("%s", hint("run it in a desktop session (or over ssh -X, which sets DISPLAY)"))
	}
	return xServerMissing(display, hint, func(network, addr string) error {
		conn, err := net.DialTimeout(network, addr, 2*time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	})
}

// xServerMissing fails with browser_launch_failed when nothing answers at
// the addresses of the X display display (as libxcb finds them) through
// dial. A display it cannot read (host/unix:0, a launchd path) is left to
// Chrome.
func xServerMissing(display string, hint displayHint, dial func(network, addr string) error) error {
	addrs := xServerAddrs(display)
	if len(addrs) == 0 {
		return nil
	}
	var tried []string
	for _, a := range addrs {
		if dial(a[0], a[1]) == nil {
			return nil
		}
		tried = append(tried, a[1])
	}
	return errcode.New(errcode.BrowserLaunchFailed, "DISPLAY=%s has no X server: nothing answers on %s", display, strings.Join(tried, " or ")).
		WithHint("%s", hint(fmt.Sprintf("start an X server on %s or set DISPLAY to one that runs", display)))
}

// xServerAddrs returns the network and address of each socket an X client
// tries for display ("[host]:N[.screen]"): for :N, the abstract and the
// file socket /tmp/.X11-unix/XN and then, as libxcb falls back to it, TCP
// localhost:6000+N (an X server on Windows under WSL, Xvfb -listen tcp);
// for unix:N the sockets only; for host:N, TCP port 6000+N.
func xServerAddrs(display string) [][2]string {
	i := strings.LastIndexByte(display, ':')
	if i < 0 {
		return nil
	}
	num, _, _ := strings.Cut(display[i+1:], ".")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 59535 || num != strconv.Itoa(n) {
		return nil
	}
	host := display[:i]
	switch {
	case strings.Contains(host, "/"):
		return nil
	case host == "" || host == "unix":
		sock := "/tmp/.X11-unix/X" + num
		addrs := [][2]string{{"unix", "@" + sock}, {"unix", sock}}
		if host == "" {
			addrs = append(addrs, [2]string{"tcp", net.JoinHostPort("localhost", strconv.Itoa(6000+n))})
		}
		return addrs
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return [][2]string{{"tcp", net.JoinHostPort(host, strconv.Itoa(6000+n))}}
}

// stdinOf is the command's input (os.Stdin unless the app sets a Reader).
func stdinOf(c *cli.Context) io.Reader {
	if c.App.Reader != nil {
		return c.App.Reader
	}
	return os.Stdin
}
