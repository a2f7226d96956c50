package profiles

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"director/errcode"
	"director/internal/testenv"
	"director/internal/testsite"
	"director/launcher"
)

// chromeOrFail returns the Chromium binary. Without one the test fails in CI
// (CI=true) and is skipped elsewhere.
func chromeOrFail(t *testing.T) string {
	t.Helper()
	path, err := launcher.Find(os.Getenv("CHROME_PATH"))
	testenv.Require(t, "Chromium", err)
	return path
}

func launch(t *testing.T, ctx context.Context, chrome, dir string, site *testsite.Site) *launcher.Browser {
	t.Helper()
	b, err := launcher.Launch(ctx, launcher.Options{
		ChromePath: chrome, UserDataDir: dir, Headless: true, ExtraFlags: site.ChromeFlags(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRealProfileSurvivesSnapshotDeleteRestore is the foundation's promise:
// a profile that Chromium logged in with, snapshotted, deleted and restored,
// is still logged in, with its localStorage and IndexedDB intact.
func TestRealProfileSurvivesSnapshotDeleteRestore(t *testing.T) {
	chrome := chromeOrFail(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	site := testsite.New(t)
	m := newTestManager(t)
	if err := m.Create(ctx, "real"); err != nil {
		t.Fatal(err)
	}

	// 1. A real Chromium logs in (persistent cookie with Max-Age), writes
	// localStorage and IndexedDB, and closes gracefully.
	b := launch(t, ctx, chrome, m.Dir("real"), site)
	tab := b.Context()
	err := chromedp.Do(tab,
		chromedp.Navigate(site.At("/login")),
		chromedp.WaitVisible(`#username`),
		chromedp.SendKeys(`#username`, "alice"),
		chromedp.SendKeys(`#password`, "secret"),
		chromedp.Submit(`form#login`),
		chromedp.WaitVisible(`#whoami`),
		chromedp.Navigate(site.At("/storage?set=kept-value")),
		chromedp.WaitVisible(`#ready`),
	)
	if err != nil {
		t.Fatal(err)
	}
	ready, err := chromedp.Run(tab, chromedp.Text(`#idb`))
	if err != nil {
		t.Fatal(err)
	}
	if ready != "kept-value" {
		t.Fatalf("the page did not write IndexedDB: %q", ready)
	}

	// While Chromium runs on the profile, snapshot is refused.
	if _, err := m.Snapshot(ctx, "real", SnapshotOptions{}); errcode.Of(err) != errcode.ProfileInUse {
		t.Fatalf("snapshot of a live profile: %v, want profile_in_use", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Killed() {
		t.Fatal("Chromium had to be killed: cookies may not have been flushed")
	}

	// 2. Snapshot, delete, restore.
	res, err := m.Snapshot(ctx, "real", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ChromeVersion == "" {
		t.Error("manifest lacks the Chrome version from Last Version")
	}
	if _, err := m.Delete(ctx, "real", DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Dir("real")); !os.IsNotExist(err) {
		t.Fatal("profile still on disk after delete")
	}
	if _, err := m.Restore(ctx, "real", "latest", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}

	// 3. A new Chromium on the restored profile is logged in and sees the
	// same storage, without typing anything.
	logins := site.Logins()
	b2 := launch(t, ctx, chrome, m.Dir("real"), site)
	defer b2.Close(context.Background())
	tab2 := b2.Context()
	text := func(sel string) string {
		v, err := chromedp.Run(tab2, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return v
	}
	wctx, wcancel := context.WithTimeout(tab2, 30*time.Second)
	defer wcancel()
	if err := chromedp.Do(wctx, chromedp.Navigate(site.At("/account")), chromedp.WaitVisible(`#whoami`)); err != nil {
		t.Fatalf("the restored profile does not reach the account page: %v", err)
	}
	who := text(`#whoami`)
	if err := chromedp.Do(tab2, chromedp.Navigate(site.At("/storage")), chromedp.WaitVisible(`#ready`)); err != nil {
		t.Fatal(err)
	}
	ls, idb := text(`#ls`), text(`#idb`)
	res2, err := chromedp.Call(tab2, network.GetCookies, network.GetCookiesParams{URLs: []string{site.URL}})
	if err != nil {
		t.Fatal(err)
	}
	cookies := res2.Cookies
	if !strings.Contains(who, "alice") {
		t.Errorf("restored profile is not logged in: #whoami = %q", who)
	}
	if site.Logins() != logins {
		t.Error("the restored profile logged in again instead of reusing its cookie")
	}
	if ls != "kept-value" || idb != "kept-value" {
		t.Errorf("localStorage %q, IndexedDB %q, want kept-value", ls, idb)
	}
	found := false
	for _, c := range cookies {
		if c.Name == testsite.PersistentCookie && c.Value != "" && !c.Session {
			found = true
		}
	}
	if !found {
		t.Errorf("persistent cookie %q missing after restore: %v", testsite.PersistentCookie, cookies)
	}
}

// TestArchiveOpensWithPlainTar checks the promise in the README: an archive
// of a real profile lists and extracts with tar --zstd.
func TestArchiveOpensWithPlainTar(t *testing.T) {
	_, err := exec.LookPath("zstd")
	testenv.Require(t, "the zstd binary", err)
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "tar"); err != nil {
		t.Fatal(err)
	}
	want := writeProfile(t, m.Dir("tar"), "plain")
	res, err := m.Snapshot(ctx, "tar", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	archive := strings.TrimPrefix(m.Store.String(), "file://") + "/" + res.ObjectKey
	out := t.TempDir()
	if b, err := exec.Command("tar", "--zstd", "-xf", archive, "-C", out).CombinedOutput(); err != nil {
		t.Fatalf("tar --zstd -xf: %v\n%s", err, b)
	}
	got := readTree(t, out)
	for _, p := range []string{".director/manifest.json", ".director/digest.json"} {
		if _, ok := got[p]; !ok {
			t.Errorf("no %s in the archive", p)
		}
		delete(got, p)
	}
	sameTree(t, got, want)
}
