package pull

import (
	"os"
	"strconv"
)

// EXPERIMENT (branch only): HC_EXP_PIECE_FIRST=f makes a call's first
// piece a f-th of the others.
var expPieceFirst, _ = strconv.Atoi(os.Getenv("HC_EXP_PIECE_FIRST"))
