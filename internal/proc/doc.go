// Package proc tells whether a process recorded earlier still runs: a
// Process names the host, the pid and, where the system says it, the
// process's start (on Linux the boot id, the pid namespace and the start
// time in clock ticks, field 22 of /proc/PID/stat), so that a pid the kernel
// has since given to another process is not taken for the one recorded,
// and a pid of another namespace (a container with the same hostname) is
// not looked up here. Elsewhere on Unix only
// the pid's existence is checked (kill with signal 0); on other systems a
// process is always taken to be alive, since nothing could prove it gone.
package proc
