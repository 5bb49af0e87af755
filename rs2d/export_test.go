package rs2d

// SetCloseStep makes Close report each of its steps to f as it starts
// (nil: silence); it returns the previous setting.
func SetCloseStep(f func(string)) func(string) {
	old := closeStep
	if f == nil {
		f = func(string) {}
	}
	closeStep = f
	return old
}

// NodeHeapBytes is the size of the node stage's symmetric allocations as
// allocated: its heap and the symmetric input's own.
func (c *Context) NodeHeapBytes() (int64, error) {
	_, size, err := c.dev.AddressRange(c.heap.Local())
	if err != nil || c.inputHeap == nil {
		return size, err
	}
	_, in, err := c.dev.AddressRange(c.inputHeap.Local())
	return size + in, err
}
