// Command bench measures director's snapshot format against the tools a user
// would otherwise script, side by side in one run on the same file set:
//
//	snapshot.Create        vs  tar czf  vs  tar -I 'zstd -3 -T0' -cf
//	snapshot.Restore       vs  tar xzf  vs  tar -I zstd -xf
//
// It builds a profile-like tree (a few thousand small files, several large
// SQLite/LevelDB-like files, about half compressible and half random, plus
// cache directories the default excludes drop), and, when Chromium is
// installed, a real profile (about 30 MB) that headless Chromium writes while
// a page served here stores cookies, localStorage, IndexedDB records and
// blobs and loads cacheable scripts and images (see chromium.go).
// Every measured command runs as a child process, so that its peak RSS is
// its own (our side re-executes this binary with a subcommand).
//
//	go run ./bench              # 150 MB tree (+ Chromium profile)
//	go run ./bench -size 600    # 600 MB tree
//	go run ./bench -json        # one JSON object on stdout
//	go run ./bench -restore=false -level 3   # create only, at another level
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"director/internal/memlimit"

	"director/snapshot"
)

func main() {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "child-") {
		if err := child(os.Args[1], os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	size := flag.Int("size", 150, "size of the generated tree in MB")
	reps := flag.Int("reps", 3, "repetitions of each measurement (the median is reported)")
	asJSON := flag.Bool("json", false, "print one JSON object instead of a table")
	chromium := flag.String("chromium", "/usr/bin/chromium", "Chromium binary for the real-profile case (\"\" to skip)")
	keep := flag.Bool("keep", false, "keep the work directory")
	level := flag.Int("level", 0, "zstd level for snapshot.Create (0 = snapshot.DefaultLevel)")
	restore := flag.Bool("restore", true, "measure restore too (false: create only, much quicker)")
	flag.Parse()

	work, err := os.MkdirTemp("", "director-snapshot-bench-")
	if err != nil {
		fatal(err)
	}
	if !*keep {
		defer os.RemoveAll(work)
	}
	var results []caseResult
	tree := filepath.Join(work, "tree")
	logf("building a %d MB profile-like tree in %s ...", *size, tree)
	files, err := genTree(tree, int64(*size)<<20)
	if err != nil {
		fatal(err)
	}
	debug.FreeOSMemory()
	floor := measure(1, cmd("true", "", nil, "true"))[0]
	logf("RSS floor (a child running `true`): %.1f MB", floor.PeakRSSMB)
	results = append(results, runCase(work, fmt.Sprintf("generated %d MB", *size), tree, files, *reps, *level, *restore))

	if *chromium != "" {
		if _, err := os.Stat(*chromium); err == nil {
			prof := filepath.Join(work, "chromium-profile")
			logf("making a real Chromium profile in %s ...", prof)
			if err := makeChromiumProfile(*chromium, prof); err != nil {
				logf("skipping the Chromium case: %v", err)
			} else {
				n, _ := countFiles(prof)
				results = append(results, runCase(work, "chromium profile", prof, n, *reps, *level, *restore))
			}
		}
	}

	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"reps": *reps, "rss_floor_mb": floor.PeakRSSMB, "cases": results})
		return
	}
	fmt.Printf("median of %d runs each; page cache warm; peak RSS floor (a child running `true`) %.1f MB\n", *reps, floor.PeakRSSMB)
	for _, r := range results {
		printCase(r)
	}
}

// measurement is one tool's median figures.
type measurement struct {
	Tool       string  `json:"tool"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Bytes      int64   `json:"archive_bytes,omitempty"`
	PeakRSSMB  float64 `json:"peak_rss_mb"`
}

type caseResult struct {
	Name        string        `json:"name"`
	TreeBytes   int64         `json:"tree_bytes"`
	TreeFiles   int           `json:"tree_files"`
	Create      []measurement `json:"create"`
	Restore     []measurement `json:"restore"`
	DefaultExcl *measurement  `json:"create_default_excludes"`
	// SameContent is tar -I 'zstd -3 -T0' over the tree plus the manifest
	// and digest entries director writes first and last: the same bytes as
	// our archive holds, so that the two compressors are compared on equal
	// content.
	SameContent  *measurement `json:"create_zstd_same_content"`
	Ratios       []string     `json:"ratios"`
	ReproCommand string       `json:"command"`
}

func runCase(work, name, tree string, files, reps, level int, restore bool) caseResult {
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	treeBytes := dirBytes(tree)
	warm(tree)
	res := caseResult{Name: name, TreeBytes: treeBytes, TreeFiles: files, ReproCommand: "go run ./bench " + strings.Join(os.Args[1:], " ")}
	out := filepath.Join(work, "out")
	os.MkdirAll(out, 0o700)
	arcOurs := filepath.Join(out, "snap.tar.zst")
	arcGz := filepath.Join(out, "tar.tgz")
	arcZst := filepath.Join(out, "tar.tzst")
	lv := fmt.Sprint(level)

	// The manifest our archive starts with and the digest it ends with, as
	// files, for the same-content row; in child processes, because a
	// child's peak RSS starts from this process's.
	mdir := filepath.Join(work, "manifest-"+filepath.Base(tree))
	os.MkdirAll(mdir, 0o700)
	measure(1, cmd("snapshot (manifest)", arcOurs, nil, self, "child-create", tree, arcOurs, "none", lv),
		cmd("tar -x manifest", "", nil, "tar", "-I", "zstd", "-xf", arcOurs, "-C", mdir, snapshot.ManifestPath, snapshot.DigestPath))

	logf("[%s] create x%d ...", name, reps)
	arcDef := filepath.Join(out, "snap-default.tar.zst")
	arcZstM := filepath.Join(out, "tar-manifest.tzst")
	ms := measure(reps,
		cmd("snapshot (director)", arcOurs, nil, self, "child-create", tree, arcOurs, "none", lv),
		cmd("tar czf", arcGz, nil, "tar", "czf", arcGz, "-C", tree, "."),
		cmd("tar -I 'zstd -3 -T0'", arcZst, nil, "tar", "-I", "zstd -3 -T0", "-cf", arcZst, "-C", tree, "."),
		cmd("snapshot, default excludes", arcDef, nil, self, "child-create", tree, arcDef, "default", lv),
		cmd("zstd -3 -T0, tree + manifest", arcZstM, nil, "tar", "-I", "zstd -3 -T0", "-cf", arcZstM, "-C", mdir, ".director", "-C", tree, "."))
	res.Create = ms[:3]
	d, sc := ms[3], ms[4]
	res.DefaultExcl, res.SameContent = &d, &sc

	c := res.Create
	res.Ratios = []string{
		fmt.Sprintf("create: snapshot %s than tar czf (cpu %s), archive %.3fx its size", faster(c[0], c[1]), fasterCPU(c[0], c[1]), float64(c[0].Bytes)/float64(c[1].Bytes)),
		fmt.Sprintf("create: snapshot %s than tar -I 'zstd -3 -T0' (cpu %s), archive %.4fx its size (%+d bytes)", faster(c[0], c[2]), fasterCPU(c[0], c[2]), float64(c[0].Bytes)/float64(c[2].Bytes), c[0].Bytes-c[2].Bytes),
		fmt.Sprintf("default excludes: archive %.2fx, time %.2fx of excludes=none", float64(d.Bytes)/float64(c[0].Bytes), d.Seconds/c[0].Seconds),
		fmt.Sprintf("same content (tree + director's manifest and digest, %+d bytes compressed): snapshot archive %.4fx the size of tar -I 'zstd -3 -T0''s (%+d bytes)",
			sc.Bytes-c[2].Bytes, float64(c[0].Bytes)/float64(sc.Bytes), c[0].Bytes-sc.Bytes),
	}
	if !restore {
		return res
	}
	logf("[%s] restore x%d ...", name, reps)
	// Every run restores into an empty dst. The previous run's tree is moved
	// aside, not deleted: ext4 without a journal (as on the development
	// machine) skips inodes freed in the last 60-360 s when it allocates new
	// ones (recently_deleted in fs/ext4/ialloc.c), and perf showed that scan
	// taking most of a restore right after a 150 MB delete, by an amount that
	// changed from run to run for every tool alike.
	dst := filepath.Join(work, "dst")
	aside := filepath.Join(work, "restored")
	os.MkdirAll(aside, 0o700)
	moved := 0
	fresh := func() {
		if _, err := os.Stat(dst); err == nil {
			moved++
			if err := os.Rename(dst, filepath.Join(aside, strconv.Itoa(moved))); err != nil {
				fatal(err)
			}
		}
		os.MkdirAll(dst, 0o700)
	}
	res.Restore = measure(reps,
		cmd("snapshot restore+verify", "", fresh, self, "child-restore", arcOurs, filepath.Join(dst, "profile")),
		cmd("tar xzf", "", fresh, "tar", "xzf", arcGz, "-C", dst),
		cmd("tar -I zstd -xf", "", fresh, "tar", "-I", "zstd", "-xf", arcZst, "-C", dst),
		// Restore makes the tree durable (syncfs) before the swap; tar does
		// not, so this row is the like-for-like figure.
		cmd("tar xzf && sync -f", "", fresh, "sh", "-c", `tar xzf "$0" -C "$1" && sync -f "$1"`, arcGz, dst))
	os.RemoveAll(dst)
	os.RemoveAll(aside)

	r := res.Restore
	res.Ratios = append(res.Ratios,
		fmt.Sprintf("restore: snapshot (verified, synced) %s than tar xzf, %s than tar -I zstd -xf, %s than tar xzf && sync -f", faster(r[0], r[1]), faster(r[0], r[2]), faster(r[0], r[3])))
	return res
}

// run is one measured command: tool is its label, file the archive whose
// size is reported (removed before each run), before prepares each run.
type run struct {
	tool, file string
	before     func()
	name       string
	args       []string
}

func cmd(tool, file string, before func(), name string, args ...string) run {
	return run{tool, file, before, name, args}
}

// measure runs the commands reps times each, interleaved (one of each in
// turn, so that a noisy neighbour weighs on all of them alike), and returns
// for each its median wall time, with the CPU time and peak RSS of that run
// and the size of its file afterwards.
func measure(reps int, runs ...run) []measurement {
	all := make([][]measurement, len(runs))
	for i := 0; i < reps; i++ {
		for k, r := range runs {
			all[k] = append(all[k], runOnce(r))
		}
	}
	out := make([]measurement, len(runs))
	for k, ms := range all {
		sort.Slice(ms, func(i, j int) bool { return ms[i].Seconds < ms[j].Seconds })
		out[k] = ms[len(ms)/2]
	}
	return out
}

func runOnce(r run) measurement {
	tool, file, before, name, args := r.tool, r.file, r.before, r.name, r.args
	if before != nil {
		before()
	}
	if file != "" {
		os.Remove(file)
	}
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fatal(fmt.Errorf("%s: %v", tool, err))
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	m := measurement{
		Tool:       tool,
		Seconds:    wall.Seconds(),
		CPUSeconds: (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Seconds(),
		PeakRSSMB:  float64(ru.Maxrss) / 1024, // KiB on Linux
	}
	if file != "" {
		if fi, err := os.Stat(file); err == nil {
			m.Bytes = fi.Size()
		}
	}
	return m
}

// faster says how a compares with b on wall time: "2.1x faster" or "1.3x slower".
func faster(a, b measurement) string { return ratio(a.Seconds, b.Seconds) }

func fasterCPU(a, b measurement) string { return ratio(a.CPUSeconds, b.CPUSeconds) }

func ratio(a, b float64) string {
	if a <= b {
		return fmt.Sprintf("%.2fx faster", b/a)
	}
	return fmt.Sprintf("%.2fx slower", a/b)
}

// child runs our side of a measurement in its own process.
func child(cmd string, args []string) error {
	memlimit.Apply() // as cmd/director does, so the RSS measured is what a user gets
	ctx := context.Background()
	switch cmd {
	case "child-create": // TREE OUT none|default LEVEL
		f, err := os.Create(args[1])
		if err != nil {
			return err
		}
		opts := snapshot.CreateOptions{ID: "bench", Profile: "bench"}
		if args[2] == "none" {
			opts.Excludes = []string{}
		}
		fmt.Sscan(args[3], &opts.Level)
		if _, err := snapshot.Create(ctx, args[0], f, opts); err != nil {
			return err
		}
		return f.Close()
	case "child-restore": // ARCHIVE DST
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = snapshot.Restore(ctx, f, args[1], snapshot.RestoreOptions{
			ExtractOptions: snapshot.ExtractOptions{MaxArchiveBytes: 8 << 30, MaxUnpackedBytes: 16 << 30}})
		return err
	}
	return fmt.Errorf("unknown subcommand %s", cmd)
}

func printCase(r caseResult) {
	fmt.Printf("\n== %s: %d files, %.1f MB ==\n", r.Name, r.TreeFiles, float64(r.TreeBytes)/(1<<20))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "create\twall s\tcpu s\tarchive MB\tpeak RSS MB\t")
	for _, m := range append(r.Create, *r.DefaultExcl, *r.SameContent) {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f\t\n", m.Tool, m.Seconds, m.CPUSeconds, float64(m.Bytes)/(1<<20), m.PeakRSSMB)
	}
	if len(r.Restore) > 0 {
		fmt.Fprintln(tw, "restore\twall s\tcpu s\t\tpeak RSS MB\t")
	}
	for _, m := range r.Restore {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t\t%.1f\t\n", m.Tool, m.Seconds, m.CPUSeconds, m.PeakRSSMB)
	}
	tw.Flush()
	for _, s := range r.Ratios {
		fmt.Println("  " + s)
	}
}

func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	return n, err
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// warm reads the whole tree once, so every tool starts from a warm page cache.
func warm(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if f, err := os.Open(p); err == nil {
				io.Copy(io.Discard, f)
				f.Close()
			}
		}
		return nil
	})
}

// logf reports progress on stderr, so that -json output stays clean.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
