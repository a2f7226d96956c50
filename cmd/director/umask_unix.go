//go:build unix

package main

import "syscall"

// privateFiles makes every file director and the Chrome it starts create
// readable by the user alone: profiles hold live credentials. Chrome
// creates its files with the process umask (0644 under the usual 022:
// "Last Version", "Variations", Default/PreferredApps), and a plain `tar
// -x` of a snapshot would have kept those modes. It is called once, from
// main, before anything is created; tests call run without it, and check
// modes where director sets them itself.
func privateFiles() { syscall.Umask(0o077) }
