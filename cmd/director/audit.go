package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"director/catalog"
	"director/errcode"
	"director/profiles"
)

// auditCommands returns `director audit`.
func auditCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "audit",
		Usage: "show the audit log of sessions: starts, actions and ends, newest first",
		Description: "Every session start, action (type, tab, domain, duration, result code) and end (reason,\n" +
			"duration, action count) is recorded. Typed text and secrets never are. `director run --keep N`\n" +
			"bounds the log (default 10000 events).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "profile", Usage: "only events of profile `NAME`"},
			&cli.StringFlag{Name: "session", Usage: "only events of session `ID`"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "show at most `N` events (0 = all)"},
		},
		Action: func(c *cli.Context) error {
			g := getGlobals(c)
			if c.NArg() != 0 {
				return errcode.New(errcode.InvalidInput, "audit takes no arguments, got %q", c.Args().First()).
					WithHint("use --profile NAME or --session ID")
			}
			if c.Int("limit") < 0 {
				return errcode.New(errcode.InvalidInput, "--limit must be 0 or more").WithHint("0 shows every event")
			}
			profile, sessionID := c.String("profile"), c.String("session")
			if profile != "" {
				if err := profiles.ValidateName(profile); err != nil {
					return errcode.Hinted(err, errcode.InvalidInput, errcode.HintOf(err), "--profile")
				}
			}
			// A read-only command: without a catalog there is nothing to
			// show, and nothing is created.
			cat, err := openCatalogIfExists(c.Context, g)
			if err != nil {
				return err
			}
			evs := []catalog.Event{}
			if cat != nil {
				defer cat.Close()
				// A session whose director was killed shows its end: the
				// runs on this host whose process is gone are closed first.
				if a, err := cat.CloseDeadRuns(c.Context); err != nil {
					g.Log.Warn("cannot close the runs on this host that a killed director left open", "err", err)
				} else if len(a.Runs) > 0 {
					g.Log.Info("closed the runs on this host that a killed director left open", "runs", a.Runs, "sessions", a.Sessions)
				}
				found, err := cat.ListEvents(c.Context, catalog.EventFilter{Profile: profile, Session: sessionID, Limit: c.Int("limit")})
				if err != nil {
					return err
				}
				evs = append(evs, found...)
			}
			if sessionID != "" && len(evs) == 0 {
				// No events: say whether the session exists at all.
				if cat == nil {
					return errcode.New(errcode.SessionNotFound, "no session %q: there is no catalog in %s yet", sessionID, g.Home).
						WithHint("check --home / DIRECTOR_HOME; sessions are recorded by director run")
				}
				if _, err := cat.GetSession(c.Context, sessionID); err != nil {
					return err
				}
			}
			g.emit(map[string]any{"status": "ok", "events": evs}, func(w io.Writer) { printEvents(w, evs) })
			return nil
		},
	}}
}

func printEvents(w io.Writer, evs []catalog.Event) {
	if len(evs) == 0 {
		fmt.Fprintln(w, "no audit events")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSESSION\tPROFILE\tKIND\tACTION\tTAB\tDOMAIN\tMS\tRESULT\tDETAIL")
	for _, e := range evs {
		profile := e.Profile
		if profile == "" {
			profile = "(incognito)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.At.Local().Format(time.DateTime), e.SessionID, profile,
			e.Kind, orDash(e.Action), orDash(e.Tab), orDash(e.Domain), e.DurationMS, orDash(e.ResultCode), e.Detail)
	}
	tw.Flush()
}
