package pull

// SetPieces sets the smallest block copied in pieces and the smallest
// piece, and returns a function that restores them (tests that call it
// run alone).
func SetPieces(block, piece int64) (restore func()) {
	oldBlock, oldPiece := minPieceBlock, minPieceBytes
	minPieceBlock, minPieceBytes = block, piece
	return func() { minPieceBlock, minPieceBytes = oldBlock, oldPiece }
}

// SetBulkMinBytes sets the smallest block read with bulk copies and returns
// a function that restores it (tests that call it run alone).
func SetBulkMinBytes(n int64) (restore func()) {
	old := bulkMinBytes
	bulkMinBytes = n
	return func() { bulkMinBytes = old }
}

// SetBulkRoundsMinBlock sets the smallest block whose rounds are read with
// bulk copies and returns a function that restores it (tests that call it
// run alone).
func SetBulkRoundsMinBlock(n int64) (restore func()) {
	old := bulkRoundsMinBlock
	bulkRoundsMinBlock = n
	return func() { bulkRoundsMinBlock = old }
}

// SetChunkBySize sets the bounds of the copy engine's chunks by size and
// returns a function that restores them (tests that call it run alone).
func SetChunkBySize(least, most int64) (restore func()) {
	l, m := ceChunkLeast, ceChunkMost
	ceChunkLeast, ceChunkMost = least, most
	return func() { ceChunkLeast, ceChunkMost = l, m }
}

// CENext is ceNext.
var CENext = ceNext

// SetOwnInPlace sets the smallest block whose own rows a copied-in call
// reads in place and returns a function that restores it (tests that call
// it run alone).
func SetOwnInPlace(n int64) (restore func()) {
	old := minOwnInPlace
	minOwnInPlace = n
	return func() { minOwnInPlace = old }
}
