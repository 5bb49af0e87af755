//go:build !cgo

package cuda

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
)

// Built without cgo there is no way to call cuBLAS: Gemm reports
// device.ErrNotSupported (as Open already does for the driver).
func openBLASFrom(api, []blasCandidate) (blasLib, error) {
	return nil, fmt.Errorf("cuda: no cuBLAS: a binary built without cgo (CGO_ENABLED=0) cannot load it: %w", device.ErrNotSupported)
}
