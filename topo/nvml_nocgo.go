//go:build !cgo

package topo

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Probe reports this host's GPU topology from NVML. go-nvml needs cgo, so a
// binary built with CGO_ENABLED=0 cannot load NVML: Probe returns an error
// wrapping hcerr.ErrNotSupported, as on a host without the library.
// ProbeNVML exists only in cgo builds.
func Probe() (*Report, error) {
	return nil, fmt.Errorf("topo: no NVML: libnvidia-ml.so.1 cannot be loaded by a binary built without cgo (CGO_ENABLED=0): %w",
		hcerr.ErrNotSupported)
}
