package pull

// PushedBytes is the pushed tail of a pull kernel launched with args (0 for
// other kernels' args).
func PushedBytes(args []any) int64 {
	p, err := launchArgs(args)
	if err != nil {
		return 0
	}
	return p.Push
}
