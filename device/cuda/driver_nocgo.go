//go:build !cgo

package cuda

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
)

// Built without cgo, the package has no way to call the driver: Open, Count,
// Probe and CompileOnly report device.ErrNotSupported, so callers fall back
// to the CPU backend exactly as on a machine without a GPU.

func loadDriver() (api, error) {
	return nil, fmt.Errorf("cuda: no CUDA driver: libcuda.so.1 cannot be loaded by a binary built without cgo (CGO_ENABLED=0): %w",
		device.ErrNotSupported)
}

func loadNVRTC() (compiler, error) {
	return nil, fmt.Errorf("cuda: no NVRTC: a binary built without cgo (CGO_ENABLED=0) cannot load it: %w", device.ErrNotSupported)
}
