// Package progress owns the progress bar that snapshot uploads and restore
// downloads show on a terminal: bytes done, rate and ETA, or a spinner with
// bytes and rate when the size is unknown. It draws only when enabled, and
// Enabled says no under --quiet, --json, or when stderr is not a terminal
// (cron, pipes, CI logs). It keeps no package state.
package progress
