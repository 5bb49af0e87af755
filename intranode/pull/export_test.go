package pull

// SetMinPieceBytes sets the smallest piece of a block copied in pieces and
// returns a function that restores it (tests that call it run alone).
func SetMinPieceBytes(n int64) (restore func()) {
	old := minPieceBytes
	minPieceBytes = n
	return func() { minPieceBytes = old }
}
