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

// NodeHeapBytes is the size of the node stage's symmetric heap as allocated.
func (c *Context) NodeHeapBytes() (int64, error) {
	_, size, err := c.dev.AddressRange(c.heap.Local())
	return size, err
}
