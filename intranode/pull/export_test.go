package pull

// SetInRounds sets the smallest block copied in rounds and the staging
// sets' bytes in the symmetric input, and returns a function that
// restores them (tests that call it run alone; contexts made after it
// take the staging).
func SetInRounds(block, staging int64) (restore func()) {
	oldBlock, oldStaging := minInRoundsBlock, inStagingBytes
	minInRoundsBlock, inStagingBytes = block, staging
	return func() { minInRoundsBlock, inStagingBytes = oldBlock, oldStaging }
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
