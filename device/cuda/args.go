package cuda

import (
	"encoding/binary"
	"math"

	"github.com/seed12530e24/hiercoll/device"
)

// argSlot is the storage of a scalar kernel argument: an 8-byte, 8-aligned
// slot with the value at its start in the host's byte order, so a pointer to
// the slot is a pointer to the value whether the kernel declares it 4 or 8
// bytes wide. A tensor map takes 128 bytes, 64-byte aligned.
const argSlot = 8

// packArgs lays kernel arguments out for cuLaunchKernel: device.Ptr, int64,
// uint64 as 8 bytes; int32, uint32, float32 as 4; a device.TensorMap as
// the 128-byte CUtensorMap encode returns. It returns the bytes and each
// argument's offset in them. The driver copies each parameter at launch by
// the size the kernel declares, so the storage may be freed as soon as
// cuLaunchKernel returns.
func packArgs(k *device.Kernel, args []any, encode func(device.TensorMap) ([tensorMapSize]byte, error)) ([]byte, []int64, error) {
	if err := device.CheckArgs(k, args); err != nil {
		return nil, nil, err
	}
	var buf []byte
	offsets := make([]int64, 0, len(args))
	ne := binary.NativeEndian
	for _, a := range args {
		if m, ok := a.(device.TensorMap); ok {
			enc, err := encode(m)
			if err != nil {
				return nil, nil, err
			}
			for len(buf)%64 != 0 {
				buf = append(buf, 0)
			}
			offsets = append(offsets, int64(len(buf)))
			buf = append(buf, enc[:]...)
			continue
		}
		var slot [argSlot]byte
		switch v := a.(type) {
		case device.Ptr:
			ne.PutUint64(slot[:], uint64(v))
		case int64:
			ne.PutUint64(slot[:], uint64(v))
		case uint64:
			ne.PutUint64(slot[:], v)
		case int32:
			ne.PutUint32(slot[:], uint32(v))
		case uint32:
			ne.PutUint32(slot[:], v)
		case float32:
			ne.PutUint32(slot[:], math.Float32bits(v))
		}
		offsets = append(offsets, int64(len(buf)))
		buf = append(buf, slot[:]...)
	}
	return buf, offsets, nil
}
