//go:build unix

package bootstrap

import (
	"errors"
	"os"
	"syscall"
)

// spareDescriptors is how many more descriptors this process may open: its
// soft RLIMIT_NOFILE less those open now; false where that cannot be told.
func spareDescriptors() (int, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	var open []os.DirEntry
	var err error
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if open, err = os.ReadDir(dir); err == nil {
			break
		}
	}
	if err != nil {
		return 0, false
	}
	// ReadDir's own descriptor is listed and closed again.
	return max(0, int(min(uint64(lim.Cur), 1<<30))-(len(open)-1)), true
}

// outOfDescriptors reports whether err is the process or the system having
// no descriptor left (EMFILE, ENFILE).
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
