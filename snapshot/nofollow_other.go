//go:build !(linux || darwin || freebsd)

package snapshot

// openNoFollow is 0 where the platform has no O_NOFOLLOW; the identity
// check after the copy (stampOf) still fails a swapped file.
const openNoFollow = 0

func isSymlinkLoop(error) bool { return false }
