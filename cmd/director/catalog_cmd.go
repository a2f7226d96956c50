package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"director/profiles"
)

func catalogCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "catalog",
		Usage: "inspect and repair the SQLite catalog",
		Subcommands: []*cli.Command{{
			Name:  "rebuild",
			Usage: "rebuild the snapshot rows from the manifests in the store",
			Description: "Use it after losing <home>/director.db, or on a second machine that shares the store.\n" +
				"Every manifest in the store becomes a catalog row; rows whose archive is gone are dropped.\n" +
				"Encrypted manifests need the identity (--age-identity / DIRECTOR_AGE_IDENTITY).",
			Action: withManager(func(c *cli.Context, g *globals, m *profiles.Manager) error {
				res, err := m.Rebuild(c.Context)
				if err != nil {
					return err
				}
				g.emit(map[string]any{"status": "ok", "rebuild": res}, func(w io.Writer) {
					fmt.Fprintf(w, "catalog rebuilt from %s: %d manifest(s), %d added, %d removed, %d skipped\n",
						res.Store, res.Found, len(res.Added), len(res.Removed), len(res.Skipped))
					for _, s := range res.Skipped {
						fmt.Fprintf(w, "  skipped %s\n", s)
					}
				})
				return nil
			}),
		}},
	}}
}
