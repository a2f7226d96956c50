package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"director/profiles"
)

func catalogCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "catalog",
		Usage: "repair the SQLite catalog: rebuild its snapshot rows from the store",
		Subcommands: []*cli.Command{{
			Name:  "rebuild",
			Usage: "rebuild the snapshot rows from the manifests in the store",
			Description: "Use it after losing <home>/director.db, or on a second machine that shares the store.\n" +
				"Every manifest in the store becomes a catalog row; rows whose archive is gone are dropped.\n" +
				"Encrypted manifests need the identity (--age-identity / DIRECTOR_AGE_IDENTITY): when any\n" +
				"cannot be decrypted (no identity, or another one), every other manifest is still added, and the\n" +
				"command fails with decrypt_failed. Manifests skipped for other reasons are listed.\n\n" +
				"A store that holds nothing at all while the catalog lists snapshots in it is taken to be down\n" +
				"(a file:// store on a disk that is not mounted lists as empty): the rebuild then changes\n" +
				"nothing and fails with storage_unavailable, unless --allow-empty-store says the store really\n" +
				"is empty now.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "allow-empty-store", Usage: "drop the rows of a store that holds nothing at all (it was emptied, not unmounted)"},
			},
			Action: withManager(useIdentity, func(c *cli.Context, m *profiles.Manager, fresh bool) error {
				if !fresh {
					return nil
				}
				// A store that cannot be listed (a mistyped --store, no
				// credentials) would fail the rebuild after it created the
				// home and an empty catalog: ask it first, with a listing
				// of a prefix that holds nothing of note.
				_, err := m.Store.List(c.Context, ".director-check/")
				return err
			}, func(c *cli.Context, g *globals, m *profiles.Manager) error {
				res, err := m.Rebuild(c.Context, c.Bool("allow-empty-store"))
				if err != nil && res != nil && g.JSON {
					// One object: the error, and what the rebuild did.
					writeJSON(g.Stdout, struct {
						errorJSON
						Rebuild *profiles.RebuildResult `json:"rebuild"`
					}{errorObject(g.hints, err), res})
					return reportedError{err}
				}
				if err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "rebuild": res}, func(w io.Writer) {
					fmt.Fprintf(w, "catalog rebuilt from %s: %d manifest(s), %d added, %d removed, %d skipped\n",
						res.Store, res.Found, len(res.Added), len(res.Removed), len(res.Skipped))
					for _, s := range res.Skipped {
						fmt.Fprintf(w, "  skipped %s\n", s)
					}
					for _, key := range res.Strays {
						profile, _, _ := strings.Cut(key, "/")
						fmt.Fprintf(w, "  stray %s: an archive without its manifest (a snapshot or prune killed midway); `%s` removes it once it is %s old\n",
							key, g.hints.command("profile prune "+profile+" --keep-last N"), profiles.StrayGrace)
					}
				})
				return nil
			}),
		}},
	}}
}
