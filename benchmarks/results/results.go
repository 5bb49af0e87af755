// Package results holds the recorded runs of hiercoll's benchmarks, one
// folder per session (the date and the machine), and makes their CSV files
// part of the programs that read them: `hiercoll model --validate` checks
// the model against them wherever the command runs.
package results

import "embed"

// CSV holds every session's CSV files, by their paths in this folder
// ("2026-11-21-h200x4/rs-2x2-ipc.csv").
//
//go:embed */*.csv
var CSV embed.FS
