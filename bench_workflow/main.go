// Command bench_workflow measures what director's workflow runner costs
// over a plain chromedp program doing the same 20 steps against the local
// test site, side by side in one run (alternating, so both see the same
// machine load), and how long a restore plus a launch takes.
//
//	go run ./bench_workflow [-n 5] [-json]
//
// Both sides launch headless Chromium with the same flags (launcher.Args) on a fresh
// profile, run the same steps, and close Chrome gracefully. Director's side
// is the real runner: session engine, blocklist interception (Fetch),
// CAPTCHA checks, audit events into a SQLite catalog, and the launcher.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"director/catalog"
	"director/internal/testsite"
	"director/launcher"
	"director/profiles"
	"director/storage"
	"director/workflows"
)

// steps is the 20-step workflow; SITE is the test site's URL.
const steps = `
  - navigate: SITE/login
  - type: {selector: "#username", text: alice}
  - type: {selector: "#password", text: secret}
  - click: "#submit"
  - wait_for: "#whoami"
  - extract: {selector: "#whoami", as: who}
  - navigate: SITE/widgets
  - type: {selector: "#name", text: bench}
  - select: {selector: "#color", value: green}
  - click: "#go"
  - extract: {selector: "#out", as: out}
  - wait_for: "#later"
  - press: {key: Enter, selector: "#name"}
  - extract: {selector: "#keys", as: keys}
  - extract: {selector: "#items li", kind: list, as: items}
  - extract: {selector: "#ext", kind: attribute, attribute: href, as: link}
  - evaluate: {expression: "document.title", as: title}
  - navigate: SITE/storage?set=bench
  - wait_for: "#ready"
  - extract: {selector: "#ls", as: ls}
`

type sample struct {
	total       time.Duration // launch + steps + graceful close
	launch      time.Duration // until the first tab is ready
	firstAction time.Duration // launch start until the first action is done
	steps       time.Duration
}

type report struct {
	Iterations         int     `json:"iterations"`
	Chrome             string  `json:"chrome"`
	DirectorTotalMS    float64 `json:"director_total_ms"`
	PlainTotalMS       float64 `json:"plain_chromedp_total_ms"`
	OverheadPct        float64 `json:"overhead_pct"`
	DirectorStepsMS    float64 `json:"director_steps_ms"`
	PlainStepsMS       float64 `json:"plain_chromedp_steps_ms"`
	StepsOverheadPct   float64 `json:"steps_overhead_pct"`
	DirectorLaunchMS   float64 `json:"director_launch_ms"`
	PlainLaunchMS      float64 `json:"plain_chromedp_launch_ms"`
	DirectorFirstMS    float64 `json:"director_launch_to_first_action_ms"`
	PlainFirstMS       float64 `json:"plain_chromedp_launch_to_first_action_ms"`
	RestoreMS          float64 `json:"restore_ms"`
	RestorePlusLaunch  float64 `json:"restore_plus_launch_ms"`
	ProfileRawBytes    int64   `json:"profile_raw_bytes"`
	ProfileArchiveSize int64   `json:"profile_archive_bytes"`
	TargetOverheadPct  float64 `json:"target_overhead_pct"`
	Pass               bool    `json:"pass"`
}

func main() {
	n := flag.Int("n", 5, "iterations of each side")
	asJSON := flag.Bool("json", false, "print one JSON object")
	chrome := flag.String("chrome", os.Getenv("CHROME_PATH"), "Chrome or Chromium binary")
	flag.Parse()
	if err := run(*n, *asJSON, *chrome, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench_workflow:", err)
		os.Exit(1)
	}
}

func run(n int, asJSON bool, chrome string, out io.Writer) error {
	ctx := context.Background()
	path, err := launcher.Find(chrome)
	if err != nil {
		return err
	}
	site, err := testsite.Start(testsite.Options{})
	if err != nil {
		return err
	}
	defer site.Close()
	work, err := os.MkdirTemp("", "bench-workflow-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	st, err := storage.Open(ctx, "file://"+filepath.Join(work, "snapshots"), storage.Options{})
	if err != nil {
		return err
	}
	cat, err := catalog.Open(ctx, filepath.Join(work, "director.db"))
	if err != nil {
		return err
	}
	defer cat.Close()
	m := &profiles.Manager{Root: filepath.Join(work, "browser-profiles"), Store: st, Catalog: cat}
	runner := &workflows.Runner{Profiles: m, Catalog: cat, TempDir: work,
		Launch: workflows.ChromeLauncher(workflows.ChromeOptions{ChromePath: path})}

	src := strings.ReplaceAll("name: bench\nprofile: null\nsession:\n  blocklist: [blocked.test]\nsteps:"+steps, "SITE", site.URL)
	wf, err := workflows.Parse("bench.yaml", []byte(src), workflows.LoadOptions{})
	if err != nil {
		return err
	}

	// Warm up both (page cache, Chrome's first start).
	if _, err := directorOnce(ctx, runner, wf); err != nil {
		return err
	}
	if _, err := plainOnce(ctx, path, work, site.URL); err != nil {
		return err
	}
	var dir, plain []sample
	for i := 0; i < n; i++ {
		d, err := directorOnce(ctx, runner, wf)
		if err != nil {
			return err
		}
		p, err := plainOnce(ctx, path, work, site.URL)
		if err != nil {
			return err
		}
		dir, plain = append(dir, d), append(plain, p)
		if !asJSON {
			fmt.Fprintf(os.Stderr, "iteration %d/%d: director %s, plain chromedp %s\n", i+1, n, d.total.Round(time.Millisecond), p.total.Round(time.Millisecond))
		}
	}

	// Restore plus launch: a logged-in profile, snapshotted, restored and launched.
	login := strings.ReplaceAll("name: login\nprofile: bench\nrestore: none\nsnapshot: on_success\n"+
		"login_check: {url: SITE/account, logged_in_selector: \"#whoami\", login_wall_selector: form#login}\nsteps:"+steps, "SITE", site.URL)
	lw, err := workflows.Parse("login.yaml", []byte(login), workflows.LoadOptions{})
	if err != nil {
		return err
	}
	res, err := runner.Run(ctx, lw)
	if err != nil {
		return fmt.Errorf("login run: %w", err)
	}
	snaps, err := m.Snapshots(ctx, "bench")
	if err != nil || len(snaps) == 0 {
		return fmt.Errorf("no snapshot after the login run: %v", err)
	}
	rw, err := workflows.Parse("restore.yaml", []byte(strings.ReplaceAll(
		"name: restore\nprofile: bench\nrestore: latest\nsnapshot: never\nsteps:\n  - navigate: SITE/account\n  - wait_for: \"#whoami\"\n", "SITE", site.URL)), workflows.LoadOptions{})
	if err != nil {
		return err
	}
	var restore, restoreLaunch []time.Duration
	for i := 0; i < n; i++ {
		rr, err := runner.Run(ctx, rw)
		if err != nil {
			return fmt.Errorf("restore run: %w", err)
		}
		restore = append(restore, time.Duration(rr.Durations.RestoreMS)*time.Millisecond)
		restoreLaunch = append(restoreLaunch, time.Duration(rr.Durations.RestoreMS+rr.Durations.LaunchMS)*time.Millisecond)
	}
	_ = res

	med := func(s []sample, f func(sample) time.Duration) float64 {
		v := make([]time.Duration, len(s))
		for i := range s {
			v[i] = f(s[i])
		}
		return median(v)
	}
	rep := report{
		Iterations:         n,
		Chrome:             path,
		DirectorTotalMS:    med(dir, func(s sample) time.Duration { return s.total }),
		PlainTotalMS:       med(plain, func(s sample) time.Duration { return s.total }),
		DirectorStepsMS:    med(dir, func(s sample) time.Duration { return s.steps }),
		PlainStepsMS:       med(plain, func(s sample) time.Duration { return s.steps }),
		DirectorLaunchMS:   med(dir, func(s sample) time.Duration { return s.launch }),
		PlainLaunchMS:      med(plain, func(s sample) time.Duration { return s.launch }),
		DirectorFirstMS:    med(dir, func(s sample) time.Duration { return s.firstAction }),
		PlainFirstMS:       med(plain, func(s sample) time.Duration { return s.firstAction }),
		RestoreMS:          median(restore),
		RestorePlusLaunch:  median(restoreLaunch),
		ProfileRawBytes:    snaps[0].RawSize,
		ProfileArchiveSize: snaps[0].ArchiveSize,
		TargetOverheadPct:  15,
	}
	rep.OverheadPct = 100 * (rep.DirectorTotalMS - rep.PlainTotalMS) / rep.PlainTotalMS
	rep.StepsOverheadPct = 100 * (rep.DirectorStepsMS - rep.PlainStepsMS) / rep.PlainStepsMS
	rep.Pass = rep.OverheadPct <= rep.TargetOverheadPct
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printReport(out, rep)
	return nil
}

func median(v []time.Duration) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	var d time.Duration
	if len(s)%2 == 1 {
		d = s[len(s)/2]
	} else {
		d = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(d.Microseconds()) / 1000
}

func printReport(w io.Writer, r report) {
	fmt.Fprintf(w, "workflow benchmark: 20 steps against the local test site, median of %d runs each, side by side\n", r.Iterations)
	fmt.Fprintf(w, "%-40s %12s %12s %10s\n", "", "director", "chromedp", "overhead")
	fmt.Fprintf(w, "%-40s %10.0fms %10.0fms %9.1f%%\n", "launch + 20 steps + graceful close", r.DirectorTotalMS, r.PlainTotalMS, r.OverheadPct)
	fmt.Fprintf(w, "%-40s %10.0fms %10.0fms %9.1f%%\n", "20 steps only", r.DirectorStepsMS, r.PlainStepsMS, r.StepsOverheadPct)
	fmt.Fprintf(w, "%-40s %10.0fms %10.0fms\n", "launch (first tab ready)", r.DirectorLaunchMS, r.PlainLaunchMS)
	fmt.Fprintf(w, "%-40s %10.0fms %10.0fms\n", "launch to first action done", r.DirectorFirstMS, r.PlainFirstMS)
	fmt.Fprintf(w, "restore (%.1f MB profile, %.1f MB archive): %.0fms; restore + launch: %.0fms\n",
		float64(r.ProfileRawBytes)/1e6, float64(r.ProfileArchiveSize)/1e6, r.RestoreMS, r.RestorePlusLaunch)
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "target: overhead <= %.0f%%: %s (%.1f%%)\n", r.TargetOverheadPct, verdict, r.OverheadPct)
}

// directorOnce runs the workflow through director's runner.
func directorOnce(ctx context.Context, r *workflows.Runner, wf *workflows.Workflow) (sample, error) {
	var s sample
	var launchStart, firstDone time.Time
	r.Progress = func(ev workflows.ProgressEvent) {
		switch {
		case ev.Stage == "launch" && !ev.Done:
			launchStart = time.Now()
		case ev.Stage == "step" && ev.Done && ev.Step.Index == 0 && firstDone.IsZero():
			firstDone = time.Now()
		}
	}
	defer func() { r.Progress = nil }()
	t0 := time.Now()
	res, err := r.Run(ctx, wf)
	s.total = time.Since(t0)
	if err != nil {
		return s, fmt.Errorf("director run: %w", err)
	}
	if res.Outputs["ls"] != "bench" || res.Outputs["who"] != "Logged in as alice" {
		return s, fmt.Errorf("director run: unexpected outputs %v", res.Outputs)
	}
	s.launch = time.Duration(res.Durations.LaunchMS) * time.Millisecond
	s.steps = time.Duration(res.Durations.StepsMS) * time.Millisecond
	s.firstAction = firstDone.Sub(launchStart)
	return s, nil
}

// plainOnce is what a user would script by hand with chromedp: the same
// flags, the same steps, a graceful close.
func plainOnce(ctx context.Context, path, work, site string) (sample, error) {
	var s sample
	dir, err := os.MkdirTemp(work, "plain-")
	if err != nil {
		return s, err
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	// The same command line as director's launcher.
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(dir)}
	for _, a := range launcher.Args(launcher.Options{Headless: true, Viewport: launcher.Viewport{W: 1280, H: 800}}, dir) {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case !strings.HasPrefix(a, "--"), name == "user-data-dir", name == "remote-debugging-pipe":
		case hasVal:
			opts = append(opts, chromedp.Flag(name, val))
		default:
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil {
		return s, err
	}
	s.launch = time.Since(t0)
	tctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	u := func(p string) string { return site + p }
	t1 := time.Now()
	first := true
	do := func(a ...chromedp.Action[chromedp.Void]) error {
		err := chromedp.Do(tctx, a...)
		if first {
			s.firstAction = time.Since(t0)
			first = false
		}
		return err
	}
	text := func(sel string) (string, error) { return chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel))) }
	steps := []func() error{
		func() error { return do(chromedp.Navigate(u("/login"))) },
		func() error { return do(chromedp.SendKeys(chromedp.CSS("#username"), "alice")) },
		func() error { return do(chromedp.SendKeys(chromedp.CSS("#password"), "secret")) },
		func() error { return do(chromedp.Click(chromedp.CSS("#submit"))) },
		func() error { return do(chromedp.WaitVisible(chromedp.CSS("#whoami"))) },
		func() error { _, err := text("#whoami"); return err },
		func() error { return do(chromedp.Navigate(u("/widgets"))) },
		func() error { return do(chromedp.SendKeys(chromedp.CSS("#name"), "bench")) },
		func() error { return do(chromedp.SetValue(chromedp.CSS("#color"), "green")) },
		func() error { return do(chromedp.Click(chromedp.CSS("#go"))) },
		func() error { _, err := text("#out"); return err },
		func() error { return do(chromedp.WaitVisible(chromedp.CSS("#later"))) },
		func() error { return do(chromedp.SendKeys(chromedp.CSS("#name"), "\r")) },
		func() error { _, err := text("#keys"); return err },
		func() error {
			_, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#items li")].map(e => e.innerText)`))
			return err
		},
		func() error {
			_, err := chromedp.Run(tctx, chromedp.AttributeValue(chromedp.CSS("#ext"), "href"))
			return err
		},
		func() error { _, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.title`)); return err },
		func() error { return do(chromedp.Navigate(u("/storage?set=bench"))) },
		func() error { return do(chromedp.WaitVisible(chromedp.CSS("#ready"))) },
		func() error {
			v, err := text("#ls")
			if err == nil && v != "bench" {
				err = fmt.Errorf("localStorage %q", v)
			}
			return err
		},
	}
	for i, st := range steps {
		if err := st(); err != nil {
			return s, fmt.Errorf("plain chromedp step %d: %w", i+1, err)
		}
	}
	s.steps = time.Since(t1)
	cctx, ccancel := context.WithTimeout(bctx, 15*time.Second)
	err = chromedp.Cancel(cctx) // Browser.close and wait for the exit
	ccancel()
	s.total = time.Since(t0)
	return s, err
}
