// Package workflows owns the workflow YAML format and the runner that turns a
// workflow into a session.
//
// Load parses and validates a workflow file (goccy/go-yaml AST, so every
// error names FILE:LINE and the field), resolves ${vars.X} and ${env.X}, and
// returns a Workflow. Runner.Run locks the profile for the whole run,
// restores a snapshot when asked, starts a session.Session on it, runs the
// steps, checks the login, closes Chrome gracefully and snapshots according
// to the workflow's policy — never after a failed or logged-out run, so a
// bad refresh never replaces the latest good snapshot. Runs, sessions and
// audit events are recorded in the catalog.
package workflows
