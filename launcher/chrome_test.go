package launcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"director/internal/testenv"

	"github.com/chromedp/chromedp"

	"director/errcode"
	"director/internal/testsite"
)

// requireChrome returns the Chrome to test with. Without one the test fails
// when CI is set (CI must run these) and skips otherwise.
func requireChrome(t *testing.T) string {
	t.Helper()
	p, err := Find("")
	testenv.Require(t, "Chromium", err)
	return p
}

// testLog writes launcher logs into the test log.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// launch starts a headless Chrome for the test site and closes it at the end
// of the test (if the test did not).
func launch(t *testing.T, site *testsite.Site, o Options) *Browser {
	t.Helper()
	o.ChromePath = requireChrome(t)
	o.Headless = true
	o.ExtraFlags = append(o.ExtraFlags, site.ChromeFlags()...)
	if o.Log == nil {
		o.Log = testLog(t)
	}
	b, err := Launch(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = b.Close(ctx)
	})
	return b
}

func login(t *testing.T, b *Browser, site *testsite.Site) {
	t.Helper()
	err := chromedp.Do(b.Context(),
		chromedp.Navigate(site.At("/login")),
		chromedp.SendKeys("#username", "alice"),
		chromedp.SendKeys("#password", "secret"),
		chromedp.Click("#submit"),
		chromedp.WaitVisible("#whoami"))
	if err != nil {
		t.Fatal(err)
	}
}

func text(t *testing.T, b *Browser, url, sel string) string {
	t.Helper()
	if err := chromedp.Do(b.Context(), chromedp.Navigate(url), chromedp.WaitVisible(sel)); err != nil {
		t.Fatalf("%s %s: %v", url, sel, err)
	}
	s, err := chromedp.Run(b.Context(), chromedp.Text(sel))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storage returns the localStorage and IndexedDB values the test site's
// storage page shows. The page fills them from a script, which adds #ready
// last: reading #ls as soon as it exists could read it still empty.
func storage(t *testing.T, b *Browser, url string) (ls, idb string) {
	t.Helper()
	text(t, b, url, "#ready")
	var err error
	if ls, err = chromedp.Run(b.Context(), chromedp.Text("#ls")); err != nil {
		t.Fatal(err)
	}
	if idb, err = chromedp.Run(b.Context(), chromedp.Text("#idb")); err != nil {
		t.Fatal(err)
	}
	return ls, idb
}

// browserCookies returns the cookies the site sees from the browser.
func browserCookies(t *testing.T, b *Browser, site *testsite.Site) map[string]string {
	t.Helper()
	m := map[string]string{}
	if err := json.Unmarshal([]byte(text(t, b, site.At("/cookies"), "#cookies")), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func closeNow(t *testing.T, b *Browser) {
	t.Helper()
	if err := b.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

// processesUsing counts live processes whose command line names dir.
func processesUsing(dir string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(stat), ") Z ") {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if arg == "--user-data-dir="+dir {
				n++
				break
			}
		}
	}
	return n
}

func TestLaunchLoginPersistsAcrossGracefulClose(t *testing.T) {
	site := testsite.New(t)
	dir := filepath.Join(t.TempDir(), "work")
	b := launch(t, site, Options{UserDataDir: dir, Viewport: Viewport{1024, 700}})
	if b.Version() == "" || b.PID() == 0 || b.UserDataDir() != dir || b.Incognito() {
		t.Errorf("version %q pid %d dir %q incognito %v", b.Version(), b.PID(), b.UserDataDir(), b.Incognito())
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("profile dir mode: %v %v", st.Mode(), err)
	}
	login(t, b, site)
	if got := text(t, b, site.At("/storage?set=v1"), "#ready"); got != "ready" {
		t.Fatal(got)
	}
	if ls, idb := storage(t, b, site.At("/storage")); ls != "v1" || idb != "v1" {
		t.Fatalf("storage ls=%q idb=%q", ls, idb)
	}
	info, inUse, err := ProfileInUse(dir)
	if err != nil || !inUse || info.PID != b.PID() || !info.Local {
		t.Fatalf("while running: inUse=%v info=%+v err=%v", inUse, info, err)
	}
	if _, err := CleanRuntimeFiles(dir); errcode.Of(err) != errcode.ProfileInUse {
		t.Errorf("CleanRuntimeFiles on a live profile: %v", err)
	}
	// A persistent cookie set just before the close must still reach the disk.
	if got := text(t, b, site.At("/setcookie?name=late&value=L&max_age=3600"), "#set"); got != "late" {
		t.Fatal(got)
	}
	pid := b.PID()
	closeNow(t, b)
	select {
	case <-b.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if !processGone(pid) || b.Killed() || b.ExitErr() != nil || !b.Closing() {
		t.Fatalf("after Close: gone=%v killed=%v exit=%v", processGone(pid), b.Killed(), b.ExitErr())
	}
	if n := processesUsing(dir); n != 0 {
		t.Errorf("%d Chrome processes still use the profile", n)
	}
	if _, inUse, _ := ProfileInUse(dir); inUse {
		t.Error("profile still in use after Close")
	}
	for _, f := range RuntimeFiles() {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s left behind by a graceful close", f)
		}
	}
	// Linux Chrome keeps the cookie database at Default/Cookies (the
	// Network/ location is Windows' sandboxed network service).
	_, err1 := os.Stat(filepath.Join(dir, "Default", "Cookies"))
	_, err2 := os.Stat(filepath.Join(dir, "Default", "Network", "Cookies"))
	if err1 != nil && err2 != nil {
		t.Errorf("no cookie database on disk: %v; %v", err1, err2)
	}

	logins := site.Logins()
	b2 := launch(t, site, Options{UserDataDir: dir})
	if got := text(t, b2, site.At("/account"), "#whoami"); got != "Logged in as alice" {
		t.Errorf("after relaunch: %q", got)
	}
	if site.Logins() != logins {
		t.Error("relaunch needed a new login")
	}
	if c := browserCookies(t, b2, site); c["late"] != "L" {
		t.Errorf("cookie set just before close lost: %v", testsite.SortedCookieNames(c))
	}
	if ls, idb := storage(t, b2, site.At("/storage")); ls != "v1" || idb != "v1" {
		t.Errorf("storage after relaunch ls=%q idb=%q", ls, idb)
	}
}

func TestSessionCookieSurvival(t *testing.T) {
	requireChrome(t)
	site := testsite.New(t)
	tests := []struct {
		name     string
		keep     bool
		wantSess bool
	}{
		// The control: Chrome's default drops session cookies at exit.
		{name: "default drops session cookies", keep: false, wantSess: false},
		{name: "KeepSessionCookies keeps them", keep: true, wantSess: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := launch(t, site, Options{UserDataDir: dir, KeepSessionCookies: tc.keep})
			login(t, b, site)
			if c := browserCookies(t, b, site); c[testsite.SessionCookie] == "" {
				t.Fatalf("no session cookie after login: %v", testsite.SortedCookieNames(c))
			}
			closeNow(t, b)
			b2 := launch(t, site, Options{UserDataDir: dir, KeepSessionCookies: tc.keep})
			c := browserCookies(t, b2, site)
			if c[testsite.PersistentCookie] == "" {
				t.Errorf("persistent cookie lost: %v", testsite.SortedCookieNames(c))
			}
			if got := c[testsite.SessionCookie] != ""; got != tc.wantSess {
				t.Errorf("session cookie present=%v, want %v", got, tc.wantSess)
			}
			tabs, err := b2.Tabs(testCtx(t))
			if err != nil || len(tabs) != 1 {
				t.Errorf("relaunch has %d tabs (%v), want 1: saved tabs must not come back", len(tabs), err)
			}
		})
	}
}

func TestCloseKillsStubbornChrome(t *testing.T) {
	site := testsite.New(t)
	dir := t.TempDir()
	b := launch(t, site, Options{UserDataDir: dir, CloseTimeout: 1500 * time.Millisecond})
	if got := text(t, b, site.At("/landing"), "#host"); got == "" {
		t.Fatal("no page")
	}
	pid := b.PID()
	sockDir := socketDir(t, dir)
	// A real Chrome that cannot answer: stopped, it ignores Browser.close.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	b.log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := b.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !b.Killed() || !processGone(pid) {
		t.Fatalf("killed=%v gone=%v", b.Killed(), processGone(pid))
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "killing it") {
		t.Errorf("no warning logged: %s", logs.String())
	}
	if n := processesUsing(dir); n != 0 {
		t.Errorf("%d leftover Chrome processes", n)
	}
	// The kill leaves Chrome's runtime files behind, and its socket
	// directory in /tmp; Close removes them.
	assertNoRuntimeLeft(t, dir, sockDir)
	if !strings.Contains(logs.String(), "removed the runtime files Chrome left behind") {
		t.Errorf("the cleanup is not logged: %s", logs.String())
	}
	b2 := launch(t, site, Options{UserDataDir: dir})
	if got := text(t, b2, site.At("/landing"), "#host"); got == "" {
		t.Error("relaunch after a kill failed")
	}
}

func TestSecondLaunchOnProfileRefused(t *testing.T) {
	site := testsite.New(t)
	dir := t.TempDir()
	launch(t, site, Options{UserDataDir: dir})
	_, err := Launch(testCtx(t), Options{UserDataDir: dir, Headless: true})
	if errcode.Of(err) != errcode.ProfileInUse || errcode.HintOf(err) == "" {
		t.Fatalf("second launch: %v (%s)", err, errcode.Of(err))
	}
}

func TestIncognitoLeavesNothing(t *testing.T) {
	site := testsite.New(t)
	b := launch(t, site, Options{})
	dir := b.UserDataDir()
	if !b.Incognito() || dir == "" {
		t.Fatalf("incognito=%v dir=%q", b.Incognito(), dir)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("temp dir: %v %v", st, err)
	}
	login(t, b, site)
	closeNow(t, b)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("incognito dir still there: %v", err)
	}
	if n := processesUsing(dir); n != 0 {
		t.Errorf("%d processes still use the incognito dir", n)
	}
}

func TestDoneWhenChromeDies(t *testing.T) {
	site := testsite.New(t)
	dir := t.TempDir()
	b := launch(t, site, Options{UserDataDir: dir})
	sockDir := socketDir(t, dir)
	if err := syscall.Kill(b.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Done not closed after the browser died")
	}
	if b.Closing() || b.ExitErr() == nil {
		t.Errorf("closing=%v exit=%v: a crash must not look like a Close", b.Closing(), b.ExitErr())
	}
	if err := b.Close(testCtx(t)); err != nil {
		t.Errorf("Close after a crash: %v", err)
	}
	assertNoRuntimeLeft(t, dir, sockDir)
}

// socketDir returns the temp directory that holds the SingletonSocket of the
// Chrome running on the user-data-dir dir.
func socketDir(t *testing.T, dir string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(dir, "SingletonSocket"))
	if err != nil {
		t.Fatalf("a running Chrome has no SingletonSocket link: %v", err)
	}
	sd := filepath.Dir(target)
	if st, err := os.Lstat(sd); err != nil || !st.IsDir() {
		t.Fatalf("socket directory %s: %v %v", sd, st, err)
	}
	return sd
}

// assertNoRuntimeLeft fails unless Chrome's runtime files are gone from the
// user-data-dir dir and its socket directory sockDir is gone.
func assertNoRuntimeLeft(t *testing.T, dir, sockDir string) {
	t.Helper()
	for _, f := range RuntimeFiles() {
		if _, err := os.Lstat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s left in the profile: %v", f, err)
		}
	}
	if _, err := os.Lstat(sockDir); !os.IsNotExist(err) {
		t.Errorf("Chrome's socket directory %s left behind: %v", sockDir, err)
	}
}

func TestTabs(t *testing.T) {
	site := testsite.New(t)
	b := launch(t, site, Options{})
	ctx := testCtx(t)
	tctx, cancel, err := b.NewTab(ctx, site.At("/landing"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := chromedp.Run(tctx, chromedp.Text("#host")); err != nil || !strings.HasPrefix(s, "127.0.0.1:") {
		t.Fatalf("new tab: %q %v", s, err)
	}
	tabs, err := b.Tabs(ctx)
	if err != nil || len(tabs) != 2 {
		t.Fatalf("tabs %d %v", len(tabs), err)
	}
	cancel()
	tabs, _ = b.Tabs(ctx)
	if len(tabs) != 1 {
		t.Errorf("after closing the tab: %d tabs", len(tabs))
	}
	// The second domain of the test site resolves through ChromeFlags.
	if got := text(t, b, site.On(testsite.BlockedHost, "/landing"), "#host"); !strings.HasPrefix(got, testsite.BlockedHost+":") {
		t.Errorf("blocked host landing: %q", got)
	}
}

func TestAttachToRemoteBrowser(t *testing.T) {
	chrome := requireChrome(t)
	site := testsite.New(t)
	dir := t.TempDir()
	cmd := exec.Command(chrome, append(Args(Options{Headless: true}, dir)[:0:0],
		"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+dir,
		"--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", "about:blank")...)
	// Its own process group, so that the cleanup stops the zygote, GPU and
	// renderer processes too: a helper still writing into dir made
	// t.TempDir's removal fail now and then.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopGroup(t, cmd)
		// Stopped by a signal, Chrome leaves its socket directory in /tmp.
		if _, err := CleanRuntimeFiles(dir); err != nil {
			t.Error(err)
		}
	})
	var port string
	for i := 0; i < 200 && port == ""; i++ {
		if f, err := os.Open(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			sc := bufio.NewScanner(f)
			if sc.Scan() {
				port = sc.Text()
			}
			f.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	if port == "" {
		t.Fatal("remote Chrome wrote no DevToolsActivePort")
	}
	b, err := Launch(testCtx(t), Options{CDPURL: "http://127.0.0.1:" + port, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Remote() || b.PID() != 0 || b.Version() == "" {
		t.Errorf("remote=%v pid=%d version=%q", b.Remote(), b.PID(), b.Version())
	}
	if got := text(t, b, site.At("/landing"), "#host"); !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("landing via remote: %q", got)
	}
	closeNow(t, b)
	time.Sleep(200 * time.Millisecond)
	if processGone(cmd.Process.Pid) {
		t.Fatal("Close killed a remote browser")
	}
	if _, err := Launch(testCtx(t), Options{CDPURL: "http://127.0.0.1:1"}); errcode.Of(err) != errcode.BrowserLaunchFailed {
		t.Errorf("attach to nothing: %v", err)
	}
}

// stopGroup stops a Chromium started in its own process group: SIGTERM to
// the group (a clean shutdown), SIGKILL after 10 s, and then it waits until
// no process of the group is left.
func stopGroup(t *testing.T, cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { _, _ = cmd.Process.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	for i := 0; syscall.Kill(-pgid, 0) == nil; i++ {
		if i == 100 { // 5 s after the main process ended
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		if i == 200 {
			t.Logf("processes of group %d still listed 10 s after Chromium exited (zombies nobody reaps?)", pgid)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a log destination shared by Chrome's output reader and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLaunchLogsCommandLine: at debug level the launcher logs Chrome's
// command line (the binary and its flags, without a URL's credentials)
// before it starts, so a Chrome that fails to start can be rerun by hand as
// the launch error's hint says.
func TestLaunchLogsCommandLine(t *testing.T) {
	chrome := requireChrome(t)
	cases := []struct {
		name     string
		headless bool
		env      map[string]string
		fails    bool
	}{
		{"started", true, nil, false},
		{"failed: headed without a display", false, map[string]string{"DISPLAY": "", "WAYLAND_DISPLAY": ""}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var logs syncBuffer
			dir := filepath.Join(t.TempDir(), "profile")
			b, err := Launch(testCtx(t), Options{
				ChromePath:  chrome,
				UserDataDir: dir,
				Headless:    c.headless,
				ExtraFlags:  []string{"--homepage=http://someone:sekrit@127.0.0.1:1/"},
				Log:         slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			if err == nil {
				closeNow(t, b)
			}
			if (err != nil) != c.fails {
				t.Fatalf("launch error %v, want failure %v", err, c.fails)
			}
			if c.fails && !strings.Contains(errcode.HintOf(err), "--log-level debug") {
				t.Errorf("hint %q does not point at the logged command line", errcode.HintOf(err))
			}
			var line string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, `msg="starting chrome"`) {
					line = l
				}
			}
			for _, want := range []string{chrome, "--user-data-dir=" + dir, "--password-store=basic", "http://REDACTED@127.0.0.1:1/"} {
				if !strings.Contains(line, want) {
					t.Errorf("debug log line %q lacks %q", line, want)
				}
			}
			if strings.Contains(logs.String(), "sekrit") {
				t.Errorf("the log holds a URL's password:\n%s", logs.String())
			}
			if strings.Contains(line, "--remote-debugging-pipe") {
				t.Errorf("the logged command line has --remote-debugging-pipe, which makes it exit at once when run by hand: %s", line)
			}
			if !c.fails {
				return
			}
			// Run by hand, as the hint says, it shows why Chrome exits.
			_, cmdline, _ := strings.Cut(line, `command="`)
			cmdline = strings.TrimSuffix(cmdline, `"`)
			cmdline = strings.ReplaceAll(cmdline, `\"`, `"`)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, _ := exec.CommandContext(ctx, "sh", "-c", cmdline).CombinedOutput()
			if !strings.Contains(string(out), "DISPLAY") {
				t.Errorf("the logged command line, run by hand, does not say why Chrome exits (no display):\n%s\n%s", cmdline, out)
			}
		})
	}
}

// TestChromeHasItsOwnProcessGroup: the signals a terminal sends to its
// foreground process group (SIGINT on Ctrl-C, SIGHUP when it closes) must
// reach director alone, which closes Chrome through CDP. When Chrome shared
// director's group, closing the terminal of `profile open` killed Chrome's
// helper processes (the network service among them) before the cookies of
// the last half minute were written.
func TestChromeHasItsOwnProcessGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux-only: elsewhere Chrome keeps the caller's process group")
	}
	site := testsite.New(t)
	b := launch(t, site, Options{UserDataDir: t.TempDir()})
	ours, err := syscall.Getpgid(0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := syscall.Getpgid(b.PID()); err != nil || got == ours {
		t.Fatalf("Chrome's process group %d (%v), director's %d: want its own", got, err, ours)
	}
	// Its helpers share Chrome's group, not ours.
	want := []byte("--user-data-dir=" + b.UserDataDir())
	entries, _ := os.ReadDir("/proc")
	helpers := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == b.PID() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, want) {
			continue
		}
		if pg, err := syscall.Getpgid(pid); err == nil && pg == ours {
			t.Errorf("helper %d is in director's process group", pid)
		}
		helpers++
	}
	if helpers == 0 {
		t.Log("no helper process names the user-data-dir")
	}
}
