// Package errcode owns director's error contract: the stable error codes that
// appear in --json output and the audit log, the hint that tells a user what
// to do next, and the mapping from a code to a process exit status.
//
// A hint that gives a command to run writes it in backticks, starting with
// the program's name: "restore another snapshot (`director profile snapshots
// NAME`)". Only such commands are commands: where a hint is printed,
// cmd/director makes each of them name the --home and --store the failing
// command ran with, when they are not the defaults, so that a pasted
// command acts on the same home and store. The packages that write hints
// need not know those. Placeholders (NAME, URL) stay as written, and a
// command that names --store itself keeps its own.
//
// It is a leaf: it imports only the standard library, so every other package,
// including snapshot and storage, may use it without reaching up.
package errcode
