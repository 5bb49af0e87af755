package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

const results = "../benchmarks/results"

func parseFloorsFile(t *testing.T, rel string) Floors {
	t.Helper()
	f, err := os.Open(filepath.Join(results, rel))
	require.NoError(t, err)
	defer f.Close()
	fl, err := ParseFloors(f)
	require.NoError(t, err)
	return fl
}

func TestParseFloorsOfTheFirstSession(t *testing.T) {
	// The table RESULTS.md quotes as this machine's floors.
	fl := parseFloorsFile(t, "2026-11-21-h200x4/floors-512MiB.txt")
	require.Equal(t, 4, fl.GPUs)
	require.InEpsilon(t, 351.7e9, fl.Rates["SM peer write (push) to rank+1, 32 SMs, ring"], 1e-9)
	require.InEpsilon(t, 4160.9e9, fl.Rates["reduce kernel, 4 blocks of 128.0 MiB, 132 SMs (bytes read+written)"], 1e-9)
	require.InEpsilon(t, 18.02e-6, fl.Lats["signal round trip 0 -> 1 -> 0 (write-value + wait-value)"], 1e-9)
	require.InEpsilon(t, 3.25e-6, fl.Lats["CE copy of 64 KiB (local)"], 1e-9)

	p := Defaults(4, 8)
	p.Node = NodeTerms{Lat: 1e-6, PeerLat: 2e-6} // the rates come from the floors, the latencies stay
	p.Final, p.Ring.NVLinkBW = FinalTerms{}, 0
	notes := fl.Apply(&p)
	require.Equal(t, NodeTerms{PushBW: 351.7e9, PushAllBW: 351.7e9, LocalBW: 1284.3e9, Lat: 1e-6, PeerLat: 2e-6}, p.Node)
	require.Equal(t, FinalTerms{BW: 4160.9e9, Lat: 3.11e-6}, p.Final)
	require.InEpsilon(t, 364.0e9, p.Ring.NVLinkBW, 1e-9)
	require.Contains(t, strings.Join(notes, "\n"), "no all-peers row, so the ring push rate")
}

func TestParseFloorsDefaultsComeFromTheFloors(t *testing.T) {
	// Both floors tables, as `hiercoll model --floors a,b` reads
	// them, give the defaults' intra-node rates.
	a, err := os.ReadFile(filepath.Join(results, "2026-11-21-h200x4/floors-512MiB.txt"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(results, "2026-11-21-h200x4/floors-mixed-512MiB.txt"))
	require.NoError(t, err)
	// The mixed table's rows are read first, so its all-peers push wins.
	fl, err := ParseFloors(strings.NewReader(string(b) + "\n" + string(a)))
	require.NoError(t, err)
	p := Defaults(4, 8)
	want := p
	p.Node.PushBW, p.Node.PushAllBW, p.Node.LocalBW, p.Final, p.Ring.NVLinkBW = 0, 0, 0, FinalTerms{}, 0
	fl.Apply(&p)
	require.Equal(t, want, p)
}

func TestParseFloorsOfALogWithRankPrefixes(t *testing.T) {
	// A device call's log: commands, "[rank 0]" prefixes, a floors table
	// on 2 GPUs and other output after it.
	fl := parseFloorsFile(t, "2026-11-21-h200x4-f/run08-sm-push-floors.log")
	require.Equal(t, 2, fl.GPUs)
	require.InEpsilon(t, 340.3e9, fl.Rates["SM peer write (push) to rank+1, 32 SMs, ring"], 1e-9)
	require.InEpsilon(t, 3.17e-6, fl.Lats["reduce kernel, 4 blocks of 64.0 KiB, 32 SMs"], 1e-9)
	p := Defaults(2, 2)
	fl.Apply(&p)
	require.InEpsilon(t, 340.3e9, p.Node.PushBW, 1e-9)
	require.InEpsilon(t, 353.5e9, p.Ring.NVLinkBW, 1e-9)
	require.InEpsilon(t, 3567.6e9, p.Final.BW, 1e-9)
}

func TestParseFloorsRejectsInputWithoutRows(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "### build/wt/hiercoll verify\nPASS\n"} {
		_, err := ParseFloors(strings.NewReader(in))
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, "input %q", in)
	}
}
