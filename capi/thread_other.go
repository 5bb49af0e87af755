//go:build !linux

package main

// threadID has no per-thread answer off Linux: every thread shares one
// last-error record there.
func threadID() int { return 0 }
