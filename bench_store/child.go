package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"director/internal/memlimit"

	"director/catalog"
	"director/encrypt"
	"director/errcode"
	"director/profiles"
	"director/storage"
)

// childCmd is the hidden subcommand that runs one measured operation.
const childCmd = "__bench_store_child"

// childResult is the JSON line a child prints on stdout.
type childResult struct {
	Op           string `json:"op"`
	ID           string `json:"id"`
	DurationNS   int64  `json:"duration_ns"` // the Manager call alone
	ArchiveBytes int64  `json:"archive_bytes,omitempty"`
	RawBytes     int64  `json:"raw_bytes"`
	Files        int    `json:"files"`
	GoSysBytes   uint64 `json:"go_sys_bytes"` // memory the Go runtime obtained from the OS
}

// childMain runs one snapshot or restore through the real profiles.Manager
// and prints a childResult; it returns the process exit status.
func childMain(args []string, stdout, stderr io.Writer) int {
	memlimit.Apply() // as cmd/director does, so the RSS measured is what a user gets
	fs := flag.NewFlagSet(childCmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	op := fs.String("op", "", "snapshot or restore")
	store := fs.String("store", "", "store URL")
	cat := fs.String("catalog", "", "catalog database")
	root := fs.String("root", "", "profile root")
	name := fs.String("profile", "bench", "profile name")
	identity := fs.String("identity", "", "age identity file; empty means no encryption")
	id := fs.String("id", "", "snapshot to restore")
	cpuProf := fs.String("cpuprofile", "", "write a CPU profile here")
	partSize := fs.Uint64("part-size", 0, "S3 part size in bytes (0: storage's default)")
	memProf := fs.String("memprofile", "", "write a heap profile here")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := runChild(ctx, childArgs{
		op: *op, store: *store, catalog: *cat, root: *root, name: *name, identity: *identity, id: *id,
		cpuProfile: *cpuProf, memProfile: *memProf, partSize: *partSize, log: log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "bench_store child %s: %v\n", *op, err)
		if h := errcode.HintOf(err); h != "" {
			fmt.Fprintf(stderr, "hint: %s\n", h)
		}
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

type childArgs struct {
	op, store, catalog, root, name, identity, id string
	cpuProfile, memProfile                       string
	partSize                                     uint64
	log                                          *slog.Logger
}

func runChild(ctx context.Context, a childArgs) (res *childResult, err error) {
	st, err := storage.Open(ctx, a.store, storage.Options{
		AWSAccessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
		AWSSecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		PartSize:           a.partSize,
		Log:                a.log,
	})
	if err != nil {
		return nil, err
	}
	db, err := catalog.Open(ctx, a.catalog)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	m := &profiles.Manager{
		Root: a.root, Store: st, Catalog: db, Log: a.log,
		InsecureNoEncryption: a.identity == "",
		MaxSize:              1 << 40, // the benchmark measures, it does not bound
	}
	if a.identity != "" {
		ids, err := encrypt.LoadIdentities(a.identity)
		if err != nil {
			return nil, err
		}
		m.Identities = ids
		m.Recipients = encrypt.IdentityRecipients(ids)
	}
	if err := os.MkdirAll(a.root, 0o700); err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check the free space and permissions of $TMPDIR", "creating %s", a.root)
	}

	if a.cpuProfile != "" {
		f, err := os.Create(a.cpuProfile)
		if err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "check that the -pprof folder is writable", "creating CPU profile")
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "run without -pprof", "starting CPU profile")
		}
		defer pprof.StopCPUProfile()
	}

	res = &childResult{Op: a.op}
	start := time.Now()
	switch a.op {
	case "snapshot":
		r, err := m.Snapshot(ctx, a.name, profiles.SnapshotOptions{})
		if err != nil {
			return nil, err
		}
		res.ID, res.ArchiveBytes, res.RawBytes, res.Files = r.ID, r.ArchiveSize, r.RawSize, r.FileCount
	case "restore":
		r, err := m.Restore(ctx, a.name, a.id, profiles.RestoreOptions{})
		if err != nil {
			return nil, err
		}
		res.ID, res.RawBytes, res.Files = r.ID, r.RawSize, r.FileCount
	default:
		return nil, errcode.New(errcode.InvalidInput, "unknown child op %q", a.op).WithHint("use -op snapshot or -op restore")
	}
	res.DurationNS = int64(time.Since(start))

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.GoSysBytes = ms.Sys
	if a.memProfile != "" {
		f, err := os.Create(a.memProfile)
		if err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "check that the -pprof folder is writable", "creating heap profile")
		}
		defer f.Close()
		runtime.GC() // the profile shows the state as of the last GC
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "check that the -pprof folder is writable", "writing heap profile")
		}
	}
	return res, nil
}
