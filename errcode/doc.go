// Package errcode owns director's error contract: the stable error codes that
// appear in --json output and the audit log, the hint that tells a user what
// to do next, and the mapping from a code to a process exit status.
//
// A hint that gives a command to run writes it in backticks, starting with
// the program's name: "restore another snapshot (`director profile snapshots
// NAME`)", so that every command a hint gives is marked the same way.
//
// It is a leaf: it imports only the standard library, so every other package,
// including snapshot and storage, may use it without reaching up.
package errcode
