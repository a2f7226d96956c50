package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/urfave/cli/v2"

	"director/catalog"
	"director/errcode"
	"director/internal/bytesize"
	"director/internal/progress"
	"director/profiles"
	"director/snapshot"
)

// openCatalog opens <home>/director.db.
func openCatalog(ctx context.Context, g *globals) (*catalog.DB, error) {
	if err := os.MkdirAll(g.Home, 0o700); err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check --home / DIRECTOR_HOME", "creating director home %s", g.Home)
	}
	return catalog.Open(ctx, g.CatalogPath())
}

// openCatalogIfExists opens <home>/director.db for a read-only command:
// it returns a nil DB, and creates neither the home nor the catalog, when
// there is no catalog yet.
func openCatalogIfExists(ctx context.Context, g *globals) (*catalog.DB, error) {
	if _, err := os.Stat(g.CatalogPath()); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return catalog.Open(ctx, g.CatalogPath())
}

// newManager opens the store and the catalog and builds a profiles.Manager
// from the global flags, with the age keys of keys only (loadKeys), so that
// the key settings stop no command that does not use them. It creates
// nothing: without a catalog yet, m.Catalog is nil, and a command that
// writes opens one (openCatalog, which creates the home and director.db)
// once it knows it has work to do. The caller closes m.Catalog.
func newManager(c *cli.Context, keys keyUse) (*profiles.Manager, error) {
	g := getGlobals(c)
	ctx := c.Context
	maxSize, err := sizeSetting(c, "max-size", "DIRECTOR_MAX_SIZE", profiles.DefaultMaxSize)
	if err != nil {
		return nil, err
	}
	maxUnpacked, err := sizeSetting(c, "max-unpacked", "DIRECTOR_MAX_UNPACKED", snapshot.DefaultMaxUnpackedBytes)
	if err != nil {
		return nil, err
	}
	cat, err := openCatalogIfExists(ctx, g)
	if err != nil {
		return nil, err
	}
	m := &profiles.Manager{
		Root:                 g.ProfilesDir(),
		Home:                 g.Home,
		Catalog:              cat,
		Log:                  g.Log,
		InsecureNoEncryption: c.Bool("insecure-no-encryption"),
		MaxSize:              maxSize,
		MaxUnpacked:          maxUnpacked,
		ChromeVersion: func(ctx context.Context) (string, error) {
			if err := chromeSettingErr(c); err != nil {
				var e *errcode.Error
				if c.Command.Name != "run" && errors.As(err, &e) {
					e.Hint += "; or pass --force to skip the version check"
				}
				return "", err
			}
			path, err := findChrome(c)
			v := ""
			if err == nil {
				v, err = chromeVersion(ctx, path)
			}
			if err != nil && c.IsSet("chrome") {
				// A Chrome the user named must answer: skipping the check
				// would let a wrong path silently allow a downgrade.
				code, hint := errcode.InvalidInput, "fix --chrome / CHROME_PATH or unset it; --force skips the version check"
				if c.Command.Name == "run" {
					// It is also the Chrome the run would launch.
					code, hint = errcode.BrowserLaunchFailed, "point --chrome / CHROME_PATH at a Chrome or Chromium that runs, or unset it to search PATH"
				}
				return "", errcode.Hinted(err, code, hint,
					"reading the version of the Chrome named by --chrome / CHROME_PATH (%s)", c.String("chrome"))
			}
			if err != nil {
				g.Log.Debug("could not read the local Chrome version", "err", err)
				return "", nil
			}
			return v, nil
		},
	}
	fail := func(err error) (*profiles.Manager, error) {
		if cat != nil {
			_ = cat.Close()
		}
		return nil, err
	}
	if m.Store, err = openStore(ctx, c, g); err != nil {
		return fail(err)
	}
	if m.Recipients, m.Identities, m.UnusedIdentity, err = loadKeys(c, keys); err != nil {
		return fail(err)
	}
	if progress.Enabled(os.Stderr, g.Quiet, g.JSON) {
		m.NewProgress = func(label string, total int64) profiles.Progress {
			return progress.New(g.Stderr, total, label, true)
		}
	}
	return m, nil
}

// chromeVersion asks a Chrome binary for its version ("156.0.8078.73").
func chromeVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", err
	}
	v := versionRE.FindString(string(out))
	if v == "" {
		return "", fmt.Errorf("no version in %q", strings.TrimSpace(string(out)))
	}
	return v, nil
}

var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+`)

// precheck checks a command's input before withManager opens the catalog,
// which creates the home and director.db when there are none. fresh says
// the home has no catalog yet (m.Catalog is nil): the check must then also
// find what the command would fail on for want of the profile or snapshot
// it names, so that a command that fails on its input leaves a fresh home
// as it found it.
type precheck func(c *cli.Context, m *profiles.Manager, fresh bool) error

// withManager runs fn with a Manager that has the keys of keys, and closes
// it afterwards; check, when not nil, runs first (see precheck).
func withManager(keys keyUse, check precheck, fn func(c *cli.Context, g *globals, m *profiles.Manager) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		g := getGlobals(c)
		m, err := newManager(c, keys)
		if err != nil {
			return err
		}
		fresh := m.Catalog == nil
		if !fresh {
			defer m.Catalog.Close()
		}
		if check != nil {
			if err := check(c, m, fresh); err != nil {
				return err
			}
		}
		if fresh {
			if m.Catalog, err = openCatalog(c.Context, g); err != nil {
				return err
			}
			defer m.Catalog.Close()
		}
		return fn(c, g, m)
	}
}

// withReadOnlyManager is withManager for commands that only read: without a
// catalog yet, fn gets a Manager whose Catalog is nil, and nothing is
// created (not the home, not director.db).
func withReadOnlyManager(keys keyUse, fn func(c *cli.Context, g *globals, m *profiles.Manager) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		m, err := newManager(c, keys)
		if err != nil {
			return err
		}
		if m.Catalog != nil {
			defer m.Catalog.Close()
		}
		return fn(c, getGlobals(c), m)
	}
}

// oneArg returns the single positional argument or a usage error.
func oneArg(c *cli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		return "", errcode.New(errcode.InvalidInput, "%s expects exactly one %s, got %d arguments", c.Command.HelpName, what, c.NArg()).
			WithHint("usage: %s [flags] %s (see %s --help)", c.Command.HelpName, c.Command.ArgsUsage, c.Command.HelpName)
	}
	return c.Args().First(), nil
}

func profileCommands() []*cli.Command {
	subs := []*cli.Command{
		{
			Name: "create", Usage: "create an empty profile (a Chrome user-data-dir)", ArgsUsage: "NAME",
			Description: "Creates <home>/browser-profiles/NAME (mode 0700). Log in with `director profile open NAME --snapshot`.",
			Action: withManager(noKeys, func(c *cli.Context, m *profiles.Manager, _ bool) error {
				return m.CheckCreate(c.Args().First())
			}, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				name, err := oneArg(c, "profile NAME")
				if err != nil {
					return err
				}
				if err := m.Create(c.Context, name); err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "profile": name, "path": m.Dir(name)}, func(w io.Writer) {
					fmt.Fprintf(w, "created profile %s at %s\nnext: %s\n", name, m.Dir(name), g.hints.command("profile open "+name+" --snapshot"))
				})
				return nil
			}),
		},
		{
			Name: "list", Usage: "list local profiles with size, last snapshot, whether they are in use, and which hold a login no snapshot has",
			Action: withReadOnlyManager(noKeys, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				list, err := m.List(c.Context)
				if err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "profiles": list}, func(w io.Writer) {
					writeProfiles(w, list, time.Now(), g.hints)
				})
				return nil
			}),
		},
		{
			Name: "path", Usage: "print a profile's user-data-dir", ArgsUsage: "NAME",
			Description: "Prints <home>/browser-profiles/NAME. A profile that does not exist fails with profile_not_found:\n" +
				"create it with `director profile create NAME`, or restore it with `director profile restore NAME latest`.",
			Action: func(c *cli.Context) error {
				g := getGlobals(c)
				name, err := oneArg(c, "profile NAME")
				if err != nil {
					return err
				}
				m := &profiles.Manager{Root: g.ProfilesDir()}
				path, err := m.Path(name)
				if err != nil {
					return err
				}
				// "exists" is always true now; kept for scripts that read it.
				g.emit(map[string]any{"status": "ok", "profile": name, "path": path, "exists": true}, func(w io.Writer) {
					fmt.Fprintln(w, path)
				})
				return nil
			},
		},
		{
			Name: "delete", Usage: "delete a local profile (and, with --with-snapshots, its snapshots)", ArgsUsage: "NAME",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "with-snapshots", Usage: "also delete every snapshot of the profile from the store and the catalog"},
				&cli.BoolFlag{Name: "force", Usage: "delete a profile that holds a login no snapshot has (after profile open without --snapshot)"},
			},
			Action: withManager(noKeys, func(c *cli.Context, m *profiles.Manager, fresh bool) error {
				if !fresh {
					return nil
				}
				return m.Absent(c.Context, c.Args().First(), c.Bool("with-snapshots"))
			}, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				name, err := oneArg(c, "profile NAME")
				if err != nil {
					return err
				}
				res, err := m.Delete(c.Context, name, profiles.DeleteOptions{WithSnapshots: c.Bool("with-snapshots"), Force: c.Bool("force")})
				if err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "result": res}, func(w io.Writer) {
					snaps := fmt.Sprintf("%d snapshot(s) (%d object(s)) from %s", len(res.DeletedSnapshots), len(res.DeletedObjects), res.Store)
					switch {
					case !res.RemovedDir:
						fmt.Fprintf(w, "profile %s: directory %s did not exist; deleted %s\n", name, m.Dir(name), snaps)
					case len(res.DeletedSnapshots)+len(res.DeletedObjects) > 0:
						fmt.Fprintf(w, "deleted profile %s and %s\n", name, snaps)
					default:
						fmt.Fprintf(w, "deleted profile %s\n", name)
					}
					if n := len(res.LeftInStore); n > 0 {
						fmt.Fprintf(w, "left %d object(s) stored less than an hour ago without their archive or manifest: a snapshot another machine is storing now, or what an interrupted delete of this profile left; run this command again in an hour to remove them\n", n)
					}
				})
				return nil
			}),
		},
		{
			Name: "snapshot", Usage: "archive a profile into the store and record it in the catalog", ArgsUsage: "NAME",
			Description: "Chrome must not be running on the profile. The default excludes (caches, crash dumps, metrics)\n" +
				"are skipped; --exclude adds globs, --include re-includes them, --no-default-excludes archives everything.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "note", Usage: "store `TEXT` with the snapshot as its note"},
				&cli.StringSliceFlag{Name: "exclude", Usage: "also exclude paths matching `GLOB` (repeatable)"},
				&cli.StringSliceFlag{Name: "include", Usage: "re-include paths matching `GLOB` that an exclude matched (repeatable)"},
				&cli.BoolFlag{Name: "no-default-excludes", Usage: "do not apply the default excludes"},
			},
			Action: withManager(useRecipients, func(c *cli.Context, m *profiles.Manager, fresh bool) error {
				if !fresh {
					return nil
				}
				_, err := m.Path(c.Args().First())
				return err
			}, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				name, err := oneArg(c, "profile NAME")
				if err != nil {
					return err
				}
				res, err := m.Snapshot(c.Context, name, profiles.SnapshotOptions{
					Note: c.String("note"), Excludes: excludesFrom(c), Includes: c.StringSlice("include"),
				})
				if err != nil {
					return err
				}
				g.hints.hintAll(res.Warnings)
				g.emit(map[string]any{"status": "ok", "snapshot": res}, func(w io.Writer) { writeSnapshot(w, res) })
				return nil
			}),
		},
		{
			Name: "restore", Usage: "restore a profile from a snapshot (created when missing)", ArgsUsage: "NAME [ID|latest]",
			Description: "Streams the snapshot from the store (or --archive FILE), extracts it into a temp dir beside the\n" +
				"profile, checks every file against the manifest, and swaps it in by rename. On any error the\n" +
				"existing profile is untouched. Refused without --force when the profile holds a login that no\n" +
				"snapshot has (`profile open` without --snapshot) and that is newer than the snapshot.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "archive", Usage: "restore from this local archive `FILE` instead of the store"},
				&cli.BoolFlag{Name: "force", Usage: "restore a snapshot written by a newer Chrome than the local one, or one older than a login the profile holds that no snapshot has (from profile open without --snapshot)"},
			},
			Action: withManager(useIdentity, func(c *cli.Context, m *profiles.Manager, fresh bool) error {
				if c.NArg() < 1 || c.NArg() > 2 {
					return errcode.New(errcode.InvalidInput, "profile restore expects NAME [ID|latest]").WithHint("usage: director profile restore NAME [ID|latest] [--archive FILE]")
				}
				name, ref := c.Args().Get(0), c.Args().Get(1)
				if c.IsSet("archive") && c.String("archive") == "" {
					// Almost always an unset shell variable (--archive
					// "$FILE"): read as no --archive, it restored the
					// store's latest snapshot over the profile instead.
					return errcode.New(errcode.InvalidInput, "--archive is empty").
						WithHint("give --archive the path of a .tar.zst or .tar.zst.age file, or leave it out to restore from the store")
				}
				if err := tildeErr("--archive", c.String("archive"), ""); err != nil {
					return err
				}
				if ref != "" && c.String("archive") != "" {
					return errcode.New(errcode.InvalidInput, "give either a snapshot ID or --archive, not both").
						WithHint("drop %q to restore the --archive file, or drop --archive to restore %s from the store", ref, ref)
				}
				if !fresh {
					return nil
				}
				return m.CheckRestore(c.Context, name, ref, profiles.RestoreOptions{Archive: c.String("archive")})
			}, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				name, ref := c.Args().Get(0), c.Args().Get(1)
				res, err := m.Restore(c.Context, name, ref, profiles.RestoreOptions{Archive: c.String("archive"), Force: c.Bool("force")})
				if err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "restore": res}, func(w io.Writer) {
					fmt.Fprintf(w, "restored %s from %s\n  files    %d, %s\n  path     %s\n  took     %s\n",
						name, res.ID, res.FileCount, humanBytes(res.RawSize), res.Path, res.Duration.Round(time.Millisecond))
				})
				return nil
			}),
		},
		{
			Name: "snapshots", Usage: "list the snapshots the catalog records in the store (--store), newest first", ArgsUsage: "[NAME]",
			Action: withReadOnlyManager(noKeys, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				var list []catalog.Snapshot
				if name := c.Args().First(); m.Catalog == nil && name != "" {
					// No catalog yet: nothing to list, but a bad name is still refused.
					if err := profiles.ValidateName(name); err != nil {
						return err
					}
				} else if m.Catalog != nil {
					var err error
					if list, err = m.Snapshots(c.Context, name); err != nil {
						return err
					}
				}
				if list == nil {
					list = []catalog.Snapshot{}
				}
				g.emit(map[string]any{"status": "ok", "snapshots": list}, func(w io.Writer) {
					if len(list) == 0 {
						if name := c.Args().First(); name != "" {
							// The catalog's rows only: another machine's
							// snapshots are found by rebuild (and restore).
							fmt.Fprintf(w, "no snapshots of %s in the catalog for %s: %s; snapshots another machine stored there are listed after %s\n",
								name, m.Store, g.hints.hint(m.FirstSnapshotHint(name)), g.hints.hint("`director catalog rebuild`"))
						} else {
							fmt.Fprintf(w, "no snapshots in the catalog for %s: %s makes one; snapshots another machine stored there are listed after %s\n",
								m.Store, g.hints.command("profile snapshot <profile>"), g.hints.hint("`director catalog rebuild`"))
						}
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tCREATED\tARCHIVE\tFILES\tRAW\tCHROME\tENCRYPTED\tNOTE")
					for _, s := range list {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%v\t%s\n", s.ID, s.CreatedAt.Local().Format("2006-01-02 15:04:05"),
							humanBytes(s.ArchiveSize), s.FileCount, humanBytes(s.RawSize), dash(s.ChromeVersion), s.Encrypted, printable(s.Note))
					}
					tw.Flush()
				})
				return nil
			}),
		},
		{
			Name: "verify", Usage: "read a snapshot back from the store and check it against its manifest", ArgsUsage: "NAME [ID|latest]",
			Description: "Reads the archive from the store and checks its sha256 and every file against the stored manifest;\n" +
				"it restores nothing. Without a catalog (a new home, or a machine that shares the store) it finds the\n" +
				"snapshot from the store's manifests and creates neither the home nor the catalog.",
			Action: withReadOnlyManager(useIdentity, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				if c.NArg() < 1 || c.NArg() > 2 {
					return errcode.New(errcode.InvalidInput, "profile verify expects NAME [ID|latest]").WithHint("usage: director profile verify NAME [ID|latest]")
				}
				res, err := m.Verify(c.Context, c.Args().Get(0), c.Args().Get(1))
				if err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "verify": res}, func(w io.Writer) {
					fmt.Fprintf(w, "ok: snapshot %s, %d files, %s, archive sha256 %s\n", res.ID, res.FileCount, humanBytes(res.RawSize), res.ArchiveSHA256)
				})
				return nil
			}),
		},
		{
			Name: "prune", Usage: "delete old snapshots of a profile (never the newest)", ArgsUsage: "NAME",
			Description: "Deletes the profile's snapshots in the store beyond the newest --keep-last N, except those\n" +
				"younger than --keep-within, and drops catalog rows whose archive has left the store. It counts the\n" +
				"snapshots other machines stored too (it reads their manifests, so it needs the identity when they are\n" +
				"encrypted). Then it removes what commands killed midway left in the store: archives without a\n" +
				"manifest (or the reverse), S3 uploads more than an hour old, and partial files.\n" +
				"Safe to run from cron beside the refresh workflow.",
			Flags: []cli.Flag{
				&cli.IntFlag{Name: "keep-last", Usage: "keep the newest `N` snapshots (at least 1)", Required: true},
				&cli.DurationFlag{Name: "keep-within", Usage: "also keep snapshots younger than `DURATION` (e.g. 168h)"},
			},
			Action: withManager(useIdentity, func(c *cli.Context, m *profiles.Manager, fresh bool) error {
				if c.Int("keep-last") < 1 {
					if err := profiles.ValidateName(c.Args().First()); err != nil {
						return err
					}
					return errcode.New(errcode.InvalidInput, "--keep-last must be at least 1: the newest snapshot is never pruned").WithHint("give --keep-last 1 to keep only the newest; to remove every snapshot of a profile, `director profile delete %s --with-snapshots` (the local profile goes too)", c.Args().First())
				}
				if d := c.Duration("keep-within"); d < 0 {
					return errcode.New(errcode.InvalidInput, "--keep-within must not be negative, not %s", d).WithHint("for example --keep-within 168h keeps a week")
				}
				if !fresh {
					return nil
				}
				return m.Absent(c.Context, c.Args().First(), true)
			}, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				name, err := oneArg(c, "profile NAME")
				if err != nil {
					return err
				}
				res, err := m.Prune(c.Context, name, c.Int("keep-last"), c.Duration("keep-within"))
				if err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "prune": res}, func(w io.Writer) {
					fmt.Fprintf(w, "kept %d, deleted %d snapshot(s) of %s\n", len(res.Kept), len(res.Deleted), name)
					for _, id := range res.Deleted {
						fmt.Fprintf(w, "  deleted %s\n", id)
					}
					for _, id := range res.Missing {
						fmt.Fprintf(w, "  dropped %s from the catalog: its archive is no longer in the store\n", id)
					}
					for _, key := range res.Strays {
						fmt.Fprintf(w, "  removed %s: it belonged to no snapshot (a snapshot or prune killed midway)\n", key)
					}
				})
				return nil
			}),
		},
	}
	if open := profileOpenCommand(); open != nil {
		subs = append(subs, open)
	}
	return []*cli.Command{{
		Name:        "profile",
		Usage:       "create, open, snapshot, restore and prune Chrome profiles",
		Subcommands: subs,
	}}
}

// excludesFrom combines the default excludes and --exclude.
func excludesFrom(c *cli.Context) []string {
	var ex []string
	if !c.Bool("no-default-excludes") {
		ex = append(ex, snapshot.DefaultExcludes()...)
	}
	ex = append(ex, c.StringSlice("exclude")...)
	if ex == nil {
		ex = []string{}
	}
	return ex
}

// managerFlags are global flags that tune profile transfers.
func managerFlags() []cli.Flag {
	return []cli.Flag{
		setting(&cli.StringFlag{Name: "max-size", EnvVars: []string{"DIRECTOR_MAX_SIZE"}, Value: bytesize.Exact(profiles.DefaultMaxSize),
			Usage: "largest archive to store or restore, a `SIZE`: bytes, or a number with a unit (500MB is 500×10^6 bytes; 500M and 500MiB are 500×2^20; also K, G, T)"}),
		setting(&cli.StringFlag{Name: "max-unpacked", EnvVars: []string{"DIRECTOR_MAX_UNPACKED"}, Value: bytesize.Exact(snapshot.DefaultMaxUnpackedBytes),
			Usage: "most a snapshot may unpack to, a `SIZE` as for --max-size: restore and verify refuse an archive over it (a decompression-bomb guard), and profile snapshot a profile over it"}),
		&cli.BoolFlag{Name: "insecure-no-encryption", Usage: "allow plaintext archives in a remote store (they hold live cookies)"},
		setting(&cli.StringFlag{Name: "chrome", EnvVars: []string{"CHROME_PATH"}, Usage: "Chrome or Chromium binary `PATH` (default: search PATH and the usual install places)"}),
	}
}

// sizeSetting reads the size setting of flag name, or of its environment
// variable env (see internal/bytesize for the forms); empty means def. A
// size it cannot read is invalid_input naming the flag or the variable
// that gave it, with the forms it takes.
func sizeSetting(c *cli.Context, name, env string, def int64) (int64, error) {
	s := c.String(name)
	if strings.TrimSpace(s) == "" {
		return def, nil
	}
	n, err := bytesize.Parse(s)
	if err != nil {
		source := "--" + name
		if v, ok := os.LookupEnv(env); ok && v == s {
			source = env
		}
		return 0, errcode.Hinted(err, errcode.InvalidInput,
			fmt.Sprintf("give %s as %s (the default is %s)", source, bytesize.Forms, bytesize.Exact(def)),
			"invalid %s", source)
	}
	return n, nil
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// writeProfiles prints profile list's table, and a line for each profile
// that holds a login no snapshot has, with ages as of now.
func writeProfiles(w io.Writer, list []profiles.Info, now time.Time, inv invocation) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no profiles yet: "+inv.command("profile create <profile>"))
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tLAST SNAPSHOT\tAGE\tIN USE")
	for _, p := range list {
		last, age := "-", "-"
		if p.LastSnapshotAt != nil {
			last, age = p.LastSnapshot, humanAge(now.Sub(*p.LastSnapshotAt))
		}
		use := "no"
		if p.InUse {
			use = "yes: " + p.InUseBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, humanBytes(p.SizeBytes), last, age, use)
	}
	tw.Flush()
	for _, p := range list {
		if p.UnsavedSince != nil {
			unsaved := "unsaved for " + humanAge(now.Sub(*p.UnsavedSince))
			if now.Sub(*p.UnsavedSince) <= -time.Second {
				unsaved = "unsaved since " + p.UnsavedSince.Local().Format("2006-01-02 15:04:05") + ", " + futureAge
			}
			fmt.Fprintf(w, "%s holds a login no snapshot has (%s): keep it with %s\n",
				p.Name, unsaved, "`"+inv.command("profile snapshot "+p.Name)+"`")
		}
	}
}

// futureAge is the age of a time ahead of this machine's clock: written by
// a machine whose clock is ahead, or this one's is behind.
const futureAge = "in the future (clock skew?)"

// humanAge is a duration since something happened, in its largest whole
// unit; a negative one (a time ahead of this machine's clock) says so
// rather than print "-83021s". Less than a second ahead is 0s.
func humanAge(d time.Duration) string {
	if d <= -time.Second {
		return futureAge
	}
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func ratio(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%% of raw", 100*float64(a)/float64(b))
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// writeSnapshot prints a snapshot's result as text, with its warnings (both
// `profile snapshot` and `profile open --snapshot` print it).
func writeSnapshot(w io.Writer, s *profiles.SnapshotResult) {
	fmt.Fprintf(w, "snapshot %s\n  archive  %s (%s)\n  files    %d, %s raw\n  took     %s\n  stored   %s\n",
		s.ID, humanBytes(s.ArchiveSize), ratio(s.ArchiveSize, s.RawSize), s.FileCount,
		humanBytes(s.RawSize), s.Duration.Round(time.Millisecond), s.Location)
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "  warning  %s\n", warn)
	}
}

// printable is s with its control characters escaped (\n, \x1b…), as a
// note an older director stored as given (or another machine's manifest)
// is printed: a terminal would take ESC sequences as commands.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
