package cuda

import (
	"encoding/binary"
	"math"

	"github.com/seed12530e24/hiercoll/device"
)

// argSlot is the storage of one kernel argument: every argument gets an
// 8-byte, 8-aligned slot and the value sits at the slot's start in the host's
// byte order, so a pointer to the slot is a pointer to the value whether the
// kernel declares it 4 or 8 bytes wide.
const argSlot = 8

// packArgs lays kernel arguments out for cuLaunchKernel, one slot each:
// device.Ptr, int64, uint64 as 8 bytes; int32, uint32, float32 as 4. The
// driver copies each parameter at launch by the size the kernel declares, so
// the slots may be freed as soon as cuLaunchKernel returns.
func packArgs(k *device.Kernel, args []any) ([]byte, error) {
	if err := device.CheckArgs(k, args); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, nil
	}
	buf := make([]byte, argSlot*len(args))
	ne := binary.NativeEndian
	for i, a := range args {
		slot := buf[argSlot*i : argSlot*(i+1)]
		switch v := a.(type) {
		case device.Ptr:
			ne.PutUint64(slot, uint64(v))
		case int64:
			ne.PutUint64(slot, uint64(v))
		case uint64:
			ne.PutUint64(slot, v)
		case int32:
			ne.PutUint32(slot, uint32(v))
		case uint32:
			ne.PutUint32(slot, v)
		case float32:
			ne.PutUint32(slot, math.Float32bits(v))
		}
	}
	return buf, nil
}
