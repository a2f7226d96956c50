// Package progress owns the progress bar that snapshots (the profile's
// bytes archived, counted with Add, of the total the walk found) and
// restore and verify downloads (the archive's bytes) show on a terminal:
// bytes done of the total, percentage, rate and ETA, or a spinner with bytes
// and rate when the size is unknown. It draws only when enabled, and
// Enabled says no under --quiet, --json, or when stderr is not a terminal
// (cron, pipes, CI logs). It keeps no package state.
package progress
