package pull

// SetPieces sets the smallest block copied in pieces and the smallest
// piece, and returns a function that restores them (tests that call it
// run alone).
func SetPieces(block, piece int64) (restore func()) {
	oldBlock, oldPiece := minPieceBlock, minPieceBytes
	minPieceBlock, minPieceBytes = block, piece
	return func() { minPieceBlock, minPieceBytes = oldBlock, oldPiece }
}
