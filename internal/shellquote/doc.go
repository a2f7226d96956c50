// Package shellquote quotes words for a POSIX shell, so that the commands
// director prints in its hints ("log in again: director profile open work
// --url '…?a=1&b=2' --snapshot") can be pasted as they are.
package shellquote
