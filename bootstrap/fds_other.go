//go:build !unix

package bootstrap

// spareDescriptors cannot be told here.
func spareDescriptors() (int, bool) { return 0, false }

// outOfDescriptors is never known here.
func outOfDescriptors(error) bool { return false }
