package pull

// SetPieces sets the smallest block copied in pieces and the smallest
// piece, and returns a function that restores them (tests that call it
// run alone).
func SetPieces(block, piece int64) (restore func()) {
	oldBlock, oldPiece := minPieceBlock, minPieceBytes
	minPieceBlock, minPieceBytes = block, piece
	return func() { minPieceBlock, minPieceBytes = oldBlock, oldPiece }
}

// SetInRounds sets the bounds of the blocks copied in rounds and the
// staging sets' bytes in the symmetric input, and returns a function that
// restores them (tests that call it run alone; contexts made after it
// take the staging).
func SetInRounds(least, most, staging int64) (restore func()) {
	l, m, s := minInRoundsBlock, maxInRoundsBlock, inStagingBytes
	minInRoundsBlock, maxInRoundsBlock, inStagingBytes = least, most, staging
	return func() { minInRoundsBlock, maxInRoundsBlock, inStagingBytes = l, m, s }
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
