package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"filippo.io/age"

	"director/errcode"
	"director/internal/s3test"
)

// Targets of issue 4.
const (
	targetOverheadPct = 15
	targetPeakRSSMB   = 100
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childCmd {
		os.Exit(childMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(mainStatus(os.Args[1:], os.Stdout, os.Stderr))
}

func mainStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench_store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.SizeMB, "size", 600, "size of the generated profile-like tree in MB (MiB)")
	fs.IntVar(&cfg.Reps, "reps", 3, "repetitions of each case; the median is reported")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	fs.StringVar(&cfg.PprofDir, "pprof", "", "write CPU and heap profiles of every child into this folder")
	fs.StringVar(&cfg.Server, "versitygw", s3test.Binary(), "the versitygw binary")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	fs.IntVar(&cfg.PartSizeMB, "part-size", 0, "S3 multipart part size in MiB for the children (0: storage's default)")
	verbose := fs.Bool("v", false, "pass the children's stderr through (e.g. with GODEBUG=gctrace=1)")
	if err := fs.Parse(args); err != nil {
		return errcode.ExitUsage
	}
	if cfg.SizeMB < 1 || cfg.Reps < 1 {
		fmt.Fprintln(stderr, "bench_store: -size and -reps must be at least 1")
		return errcode.ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *verbose {
		cfg.ChildStderr = stderr
	}
	cfg.Command = strings.Join(append([]string{"go run ./bench_store"}, args...), " ")
	log := slog.New(slog.NewTextHandler(stderr, nil))
	rep, err := run(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "bench_store:", err)
		if h := errcode.HintOf(err); h != "" {
			fmt.Fprintln(stderr, "hint:", h)
		}
		return errcode.ExitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return errcode.ExitFailure
		}
		return errcode.ExitOK
	}
	printTable(stdout, rep)
	return errcode.ExitOK
}

// config is one benchmark run.
type config struct {
	SizeMB   int
	Reps     int
	PprofDir string
	// PartSizeMB overrides storage.Options.PartSize (0: the default), to
	// weigh memory against upload speed.
	PartSizeMB int
	Server     string // versitygw binary
	Command    string // how it was invoked, for the report
	// ChildStderr, when set, also receives the children's stderr.
	ChildStderr io.Writer
	// Self is the executable re-run for the children; "" means this one.
	Self string
	// started, when set, is told the work folder and the server endpoint
	// (tests check that both are gone afterwards).
	started func(work, endpoint string)
}

// Report is everything one run measured.
type Report struct {
	Command    string    `json:"command"`
	SizeMB     int       `json:"size_mb"`
	Reps       int       `json:"reps"`
	PartSizeMB int       `json:"part_size_mb,omitempty"` // 0: storage's default
	TreeFiles  int       `json:"tree_files"`
	TreeBytes  int64     `json:"tree_bytes"`
	GoVersion  string    `json:"go_version"`
	NumCPU     int       `json:"num_cpu"`
	Server     string    `json:"server"`
	Cases      []*Case   `json:"cases"`
	Ratios     Ratios    `json:"ratios"`
	StartedAt  time.Time `json:"started_at"`
	ElapsedSec float64   `json:"elapsed_seconds"`
}

// Ratios compares the cases against the targets of issue 4.
type Ratios struct {
	SnapshotEncryptionOverheadPct float64 `json:"snapshot_encryption_overhead_pct"`
	RestoreEncryptionOverheadPct  float64 `json:"restore_encryption_overhead_pct"`
	// The same on the children's CPU time, steadier than wall time on a
	// shared machine.
	SnapshotEncryptionCPUOverheadPct float64 `json:"snapshot_encryption_cpu_overhead_pct"`
	// The same on the fastest run of each case.
	SnapshotEncryptionMinOverheadPct float64 `json:"snapshot_encryption_min_overhead_pct"`
	PeakRSSMB                        float64 `json:"peak_rss_mb"`
	TargetOverheadPct                float64 `json:"target_snapshot_encryption_overhead_pct"`
	TargetPeakRSSMB                  float64 `json:"target_peak_rss_mb"`
	OverheadMet                      bool    `json:"overhead_target_met"`
	PeakRSSMet                       bool    `json:"peak_rss_target_met"`
}

// Case is one operation in one mode, over all repetitions.
type Case struct {
	Name         string  `json:"name"`
	Op           string  `json:"op"` // snapshot or restore
	Encrypted    bool    `json:"encrypted"`
	Runs         []Run   `json:"runs"`
	MedianSec    float64 `json:"median_seconds"`
	MinSec       float64 `json:"min_seconds"` // least disturbed by the machine's other load
	ArchiveBytes int64   `json:"archive_bytes"`
	RawBytes     int64   `json:"raw_bytes"`
	MBPerSec     float64 `json:"raw_mb_per_second"` // raw profile data, MiB/s at the median
	PeakRSSMB    float64 `json:"peak_rss_mb"`       // the highest of the runs
	MedianCPUSec float64 `json:"median_cpu_seconds"`
}

// Run is one child process.
type Run struct {
	childResult
	WallNS     int64   `json:"child_wall_ns"` // the whole child process
	PeakRSSKiB int64   `json:"peak_rss_kib"`
	CPUSec     float64 `json:"cpu_seconds"`
}

// mode is plain or encrypted: its own prefix in the bucket and its own catalog.
type mode struct {
	name      string
	encrypted bool
	store     string
	catalog   string
	snap      *Case
	restore   *Case
}

// run generates the tree, starts the server and measures every case. All it
// creates is under one temporary folder, removed with the server on return.
func run(ctx context.Context, cfg config, log *slog.Logger) (rep *Report, err error) {
	if cfg.Server == "" {
		return nil, errcode.New(errcode.Internal, "versitygw not found").
			WithHint("go install github.com/versity/versitygw/cmd/versitygw@v1.8.0, or pass -versitygw PATH")
	}
	self := cfg.Self
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "run it with go run ./bench_store from the module root", "finding this executable")
		}
	}
	rep = &Report{Command: cfg.Command, SizeMB: cfg.SizeMB, Reps: cfg.Reps, PartSizeMB: cfg.PartSizeMB, GoVersion: runtime.Version(),
		NumCPU: runtime.NumCPU(), Server: cfg.Server, StartedAt: time.Now().UTC()}
	work, err := os.MkdirTemp("", "director-bench-store-")
	if err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check $TMPDIR: it must be writable", "creating a work folder")
	}
	defer func() {
		if rerr := os.RemoveAll(work); rerr != nil && err == nil {
			err = errcode.Hinted(rerr, errcode.Internal, "remove it by hand", "removing %s", work)
		}
	}()
	if cfg.PprofDir != "" {
		if err := os.MkdirAll(cfg.PprofDir, 0o700); err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "pass a writable folder to -pprof", "creating %s", cfg.PprofDir)
		}
	}

	srcRoot := filepath.Join(work, "profiles")
	log.Info("generating profile-like tree", "mb", cfg.SizeMB, "dir", srcRoot)
	t0 := time.Now()
	tree, err := genTree(filepath.Join(srcRoot, "bench"), int64(cfg.SizeMB)<<20)
	if err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check the free space of $TMPDIR (about 3x -size is needed)", "generating the tree")
	}
	rep.TreeFiles, rep.TreeBytes = tree.Files, tree.Bytes
	log.Info("tree ready", "files", tree.Files, "bytes", tree.Bytes, "took", time.Since(t0).Round(time.Millisecond))

	srv, err := startServer(ctx, cfg.Server, mkdir(work, "s3"), log)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	if cfg.started != nil {
		cfg.started(work, srv.Endpoint)
	}

	ident, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "run it again", "generating an age identity")
	}
	keyFile := filepath.Join(work, "age.key")
	if err := os.WriteFile(keyFile, []byte(ident.String()+"\n"), 0o600); err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check the free space of $TMPDIR", "writing the age identity")
	}
	env := append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey)

	modes := []*mode{
		{name: "plain", store: srv.StoreURL("plain"), catalog: filepath.Join(work, "plain.db")},
		{name: "age", encrypted: true, store: srv.StoreURL("age"), catalog: filepath.Join(work, "age.db")},
	}
	for _, md := range modes {
		label := map[bool]string{false: "no encryption", true: "age"}[md.encrypted]
		md.snap = &Case{Name: "snapshot+upload, " + label, Op: "snapshot", Encrypted: md.encrypted}
		md.restore = &Case{Name: "download+restore, " + label, Op: "restore", Encrypted: md.encrypted}
	}
	child := func(md *mode, op string, r int, root, id string) (Run, error) {
		args := []string{childCmd, "-op", op, "-store", md.store, "-catalog", md.catalog, "-root", root}
		if md.encrypted {
			args = append(args, "-identity", keyFile)
		}
		if cfg.PartSizeMB > 0 {
			args = append(args, "-part-size", fmt.Sprint(cfg.PartSizeMB<<20))
		}
		if id != "" {
			args = append(args, "-id", id)
		}
		if cfg.PprofDir != "" {
			base := filepath.Join(cfg.PprofDir, fmt.Sprintf("%s-%s-%d", op, md.name, r))
			args = append(args, "-cpuprofile", base+".cpu.pprof", "-memprofile", base+".allocs.pprof")
		}
		return runChildProcess(ctx, self, args, env, cfg.ChildStderr)
	}

	// Alternate the order of plain and encrypted in every repetition, so
	// that a drift of the machine's load weighs on both alike.
	order := func(r int) []*mode {
		if r%2 == 1 {
			return []*mode{modes[1], modes[0]}
		}
		return modes
	}
	lastID := map[*mode]string{}
	for r := 0; r < cfg.Reps; r++ {
		for _, md := range order(r) {
			log.Info("measuring", "case", md.snap.Name, "rep", r+1)
			res, err := child(md, "snapshot", r, srcRoot, "")
			if err != nil {
				return nil, fmt.Errorf("%s, repetition %d: %w", md.snap.Name, r+1, err)
			}
			md.snap.Runs = append(md.snap.Runs, res)
			lastID[md] = res.ID
		}
	}
	for r := 0; r < cfg.Reps; r++ {
		for _, md := range order(r) {
			log.Info("measuring", "case", md.restore.Name, "rep", r+1)
			root := filepath.Join(work, fmt.Sprintf("restore-%s-%d", md.name, r))
			res, err := child(md, "restore", r, root, lastID[md])
			if err != nil {
				return nil, fmt.Errorf("%s, repetition %d: %w", md.restore.Name, r+1, err)
			}
			if err := os.RemoveAll(root); err != nil {
				return nil, errcode.Hinted(err, errcode.Internal, "check the free space and permissions of $TMPDIR", "removing %s", root)
			}
			snapRaw := md.snap.Runs[len(md.snap.Runs)-1].RawBytes
			if res.RawBytes != snapRaw {
				return nil, errcode.New(errcode.SnapshotCorrupt, "%s restored %d bytes of %d", md.restore.Name, res.RawBytes, snapRaw).
					WithHint("run the profiles tests: a restore must give back what was snapshotted")
			}
			md.restore.Runs = append(md.restore.Runs, res)
		}
	}
	for _, md := range modes {
		rep.Cases = append(rep.Cases, md.snap)
	}
	for _, md := range modes {
		md.restore.ArchiveBytes = md.snap.Runs[len(md.snap.Runs)-1].ArchiveBytes
		rep.Cases = append(rep.Cases, md.restore)
	}
	for _, c := range rep.Cases {
		summarize(c)
	}
	rep.Ratios = ratios(rep.Cases)
	rep.ElapsedSec = time.Since(rep.StartedAt).Seconds()
	return rep, nil
}

func mkdir(parts ...string) string {
	p := filepath.Join(parts...)
	_ = os.MkdirAll(p, 0o700)
	return p
}

// runChildProcess runs one child and adds its peak RSS and CPU time to the
// JSON line it prints.
func runChildProcess(ctx context.Context, self string, args, env []string, stderr io.Writer) (Run, error) {
	var out bytes.Buffer
	errOut := &capBuffer{max: 64 << 10}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, errOut
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(errOut, stderr)
	}
	cmd.SysProcAttr = childAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Run{}, errcode.Hinted(ctx.Err(), errcode.Timeout, "the run was interrupted or hit -timeout; run it again, with a larger -timeout for a large -size", "interrupted")
		}
		return Run{}, errcode.Hinted(err, errcode.Internal, "the child's own error is above; rerun with the same -size to reproduce",
			"child %s: %s", strings.Join(args[:3], " "), strings.TrimSpace(errOut.String()))
	}
	run := Run{WallNS: int64(time.Since(start))}
	if err := json.Unmarshal(out.Bytes(), &run.childResult); err != nil {
		return Run{}, errcode.Hinted(err, errcode.Internal, "a child prints one JSON line; look at its stderr: "+errOut.String(),
			"reading the child's result %q", out.String())
	}
	run.PeakRSSKiB, run.CPUSec = usage(cmd.ProcessState)
	return run, nil
}

// summarize fills the medians and the peak of a case's runs.
func summarize(c *Case) {
	var secs, cpus []float64
	for _, r := range c.Runs {
		secs = append(secs, float64(r.DurationNS)/1e9)
		cpus = append(cpus, r.CPUSec)
		c.PeakRSSMB = max(c.PeakRSSMB, float64(r.PeakRSSKiB)/1024)
		c.RawBytes = r.RawBytes
		if r.ArchiveBytes > 0 {
			c.ArchiveBytes = r.ArchiveBytes
		}
	}
	c.MedianSec, c.MedianCPUSec = median(secs), median(cpus)
	if len(secs) > 0 {
		c.MinSec = slices.Min(secs)
	}
	if c.MedianSec > 0 {
		c.MBPerSec = float64(c.RawBytes) / (1 << 20) / c.MedianSec
	}
}

// median of xs; the mean of the middle two for an even count, 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// overheadPct is how much slower enc is than plain, in percent.
func overheadPct(plain, enc float64) float64 {
	if plain <= 0 {
		return 0
	}
	return (enc/plain - 1) * 100
}

func ratios(cases []*Case) Ratios {
	r := Ratios{TargetOverheadPct: targetOverheadPct, TargetPeakRSSMB: targetPeakRSSMB}
	find := func(op string, enc bool) *Case {
		for _, c := range cases {
			if c.Op == op && c.Encrypted == enc {
				return c
			}
		}
		return &Case{}
	}
	r.SnapshotEncryptionOverheadPct = overheadPct(find("snapshot", false).MedianSec, find("snapshot", true).MedianSec)
	r.RestoreEncryptionOverheadPct = overheadPct(find("restore", false).MedianSec, find("restore", true).MedianSec)
	r.SnapshotEncryptionCPUOverheadPct = overheadPct(find("snapshot", false).MedianCPUSec, find("snapshot", true).MedianCPUSec)
	r.SnapshotEncryptionMinOverheadPct = overheadPct(find("snapshot", false).MinSec, find("snapshot", true).MinSec)
	for _, c := range cases {
		r.PeakRSSMB = max(r.PeakRSSMB, c.PeakRSSMB)
	}
	r.OverheadMet = r.SnapshotEncryptionOverheadPct <= targetOverheadPct
	r.PeakRSSMet = r.PeakRSSMB > 0 && r.PeakRSSMB < targetPeakRSSMB
	return r
}

// printTable writes the human report.
func printTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "%s\n", rep.Command)
	fmt.Fprintf(w, "profile-like tree: %d files, %.1f MB raw; %d repetitions, median shown; %s, %d CPUs; server %s\n\n",
		rep.TreeFiles, float64(rep.TreeBytes)/(1<<20), rep.Reps, rep.GoVersion, rep.NumCPU, filepath.Base(rep.Server))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\twall time\t(fastest)\tCPU time\tarchive size\traw MB/s\tpeak RSS\t")
	for _, c := range rep.Cases {
		fmt.Fprintf(tw, "%s\t%.2f s\t%.2f s\t%.2f s\t%.1f MB\t%.1f\t%.1f MB\t\n",
			c.Name, c.MedianSec, c.MinSec, c.MedianCPUSec, float64(c.ArchiveBytes)/(1<<20), c.MBPerSec, c.PeakRSSMB)
	}
	tw.Flush()
	r := rep.Ratios
	fmt.Fprintf(w, "\nencryption adds %.1f%% to snapshot time (target <= %d%%): %s\n",
		r.SnapshotEncryptionOverheadPct, targetOverheadPct, verdict(r.OverheadMet))
	fmt.Fprintf(w, "  (fastest runs: %.1f%%; CPU time: %.1f%%); encryption adds %.1f%% to restore time\n",
		r.SnapshotEncryptionMinOverheadPct, r.SnapshotEncryptionCPUOverheadPct, r.RestoreEncryptionOverheadPct)
	fmt.Fprintf(w, "peak RSS %.1f MB (target < %d MB): %s\n", r.PeakRSSMB, targetPeakRSSMB, verdict(r.PeakRSSMet))
	fmt.Fprintf(w, "(MB = MiB; times are the Manager call in the child; RSS is the child's getrusage maximum)\n")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
