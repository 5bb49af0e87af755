package model

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// round are terms with round numbers, so that the expected times can be
// worked out by hand.
func round(nodes, gpus int) Params {
	return Params{
		Nodes: nodes, GPUs: gpus,
		Node:  NodeTerms{PushBW: 400e9, PushAllBW: 300e9, LocalBW: 1000e9, Lat: 10e-6, PeerLat: 1e-6},
		Rail:  RailTerms{NICs: 8, NICBW: 50e9, Lat: 20e-6, Lanes: 1},
		Final: FinalTerms{BW: 4000e9, Lat: 5e-6},
		Ring: RingTerms{
			NVLinkBW:  300e9,
			Protocols: []Protocol{{Name: "Simple", BaseLat: 10e-6, HopNVLink: 2e-6, HopNet: 20e-6, HopNetOneGPU: 30e-6, BWFactor: 1}},
			PAT:       PATTerms{BaseLat: 8e-6, StepLat: 4e-6, PerRankLat: 3e-6, BWFactor: 0.75},
		},
	}
}

func TestRS2DHandComputed(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name                           string
		p                              Params
		bytes                          int64
		nodeStep, railMsg, rail, final float64
		bound                          string
	}{
		{
			// One node: the node stage alone, no rail, no final reduce.
			// 4 GPUs: block 256 MiB, 3 peers at 300 GB/s.
			name: "one node", p: round(1, 4), bytes: gib,
			nodeStep: 10e-6 + 3*1e-6 + 3*(gib/4)/300e9,
			bound:    "node",
		},
		{
			// One node of 2 GPUs pushes to its one peer at PushBW.
			name: "one node of two", p: round(1, 2), bytes: gib,
			nodeStep: 10e-6 + 1e-6 + (gib/2)/400e9,
			bound:    "node",
		},
		{
			// One GPU per node: no NVLink (the push rates are unset); each
			// node step copies the block locally; 4 nodes, 3 messages of
			// gib/4 at all 8 NICs (one GPU drives them), each after its step
			// and its predecessor: rail-bound, so the last lands at
			// step + 3 × message.
			name: "one GPU per node", p: func() Params {
				p := round(4, 1)
				p.Node.PushBW, p.Node.PushAllBW = 0, 0
				return p
			}(), bytes: gib,
			nodeStep: 10e-6 + (gib/4)/1000e9,
			railMsg:  20e-6 + (gib/4)/400e9,
			rail:     10e-6 + (gib/4)/1000e9 + 3*(20e-6+(gib/4)/400e9),
			final:    5e-6 + 5*(gib/4)/4000e9,
			bound:    "rail",
		},
		{
			// 2 nodes × 8: block gib/16; node-bound, the one message hides
			// behind the second node step.
			name: "two nodes of eight", p: round(2, 8), bytes: gib,
			nodeStep: 10e-6 + 7e-6 + 7*(gib/16)/300e9,
			railMsg:  20e-6 + (gib/16)/50e9,
			rail:     10e-6 + 7e-6 + 7*(gib/16)/300e9 + 20e-6 + (gib/16)/50e9,
			final:    5e-6 + 3*(gib/16)/4000e9,
			bound:    "node",
		},
		{
			// Rail peers on one host: the message shares NVLink, so the
			// stages add.
			name: "rail over the node's NVLink", p: func() Params {
				p := round(2, 2)
				p.Rail = RailTerms{NICs: 2, NICBW: 250e9, Lat: 8e-6, Lanes: 1, SharesNVLink: true}
				return p
			}(), bytes: gib,
			nodeStep: 10e-6 + 1e-6 + (gib/4)/400e9,
			railMsg:  8e-6 + (gib/4)/250e9,
			rail:     2*(10e-6+1e-6+(gib/4)/400e9) + 8e-6 + (gib/4)/250e9,
			final:    5e-6 + 3*(gib/4)/4000e9,
			bound:    "node+rail",
		},
		{
			// Four lanes of 5 GB/s cap each GPU's rail at 20 GB/s (below
			// its NIC's 50): 4 nodes × 8, the messages set the pace.
			name: "lanes cap the rail", p: func() Params {
				p := round(4, 8)
				p.Rail.Lanes, p.Rail.LaneBW = 4, 5e9
				return p
			}(), bytes: gib,
			nodeStep: 10e-6 + 7e-6 + 7*(gib/32)/300e9,
			railMsg:  20e-6 + (gib/32)/20e9,
			rail:     10e-6 + 7e-6 + 7*(gib/32)/300e9 + 3*(20e-6+(gib/32)/20e9),
			final:    5e-6 + 5*(gib/32)/4000e9,
			bound:    "rail",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RS2D(tc.p, tc.bytes)
			require.NoError(t, err)
			node := float64(tc.p.Nodes) * tc.nodeStep
			require.InEpsilon(t, tc.nodeStep, got.NodeStep, 1e-12)
			require.InEpsilon(t, node, got.Node, 1e-12)
			require.Equal(t, tc.bound, got.Bound)
			require.Equal(t, tc.p.Nodes, got.NodeSteps)
			require.Equal(t, tc.p.Nodes-1, got.RailMessages)
			if tc.p.Nodes == 1 {
				require.Zero(t, got.RailMsg)
				require.Zero(t, got.Rail)
				require.Zero(t, got.Final)
				require.InEpsilon(t, node, got.Total, 1e-12)
				return
			}
			require.InEpsilon(t, tc.railMsg, got.RailMsg, 1e-12)
			require.InEpsilon(t, tc.rail, got.Rail, 1e-12)
			require.InEpsilon(t, tc.final, got.Final, 1e-12)
			require.InEpsilon(t, math.Max(node, tc.rail)+tc.final, got.Total, 1e-12)
		})
	}
}

func TestOneGPUPerNodeHasNoNVLinkTerms(t *testing.T) {
	p := Defaults(16, 1)
	a, err := RS2D(p, 256<<20)
	require.NoError(t, err)
	r, err := Ring(p, 256<<20)
	require.NoError(t, err)
	p.Node.PushBW, p.Node.PushAllBW, p.Ring.NVLinkBW = 1, 1, 1 // would dominate if they were used
	b, err := RS2D(p, 256<<20)
	require.NoError(t, err)
	require.Equal(t, a, b)
	q, err := Ring(p, 256<<20)
	require.NoError(t, err)
	require.Equal(t, r, q, "one GPU per node: the ring crosses on the NICs only")
}

func TestRingStepsAndHandComputedTime(t *testing.T) {
	const bytes = 1 << 30
	for _, tc := range []struct {
		name         string
		p            Params
		steps        int
		lat, bw      float64
		crossingNICs int
	}{
		// One node: world−1 NVLink steps, no crossing.
		{name: "1 node × 8", p: round(1, 8), steps: 7, lat: 10e-6 + 7*2e-6, bw: 300e9},
		// 4 nodes × 8: 28 NVLink steps, 3 crossings; NVLink (300) below
		// the 8 NICs (400).
		{name: "4 nodes × 8", p: round(4, 8), steps: 31, lat: 10e-6 + 28*2e-6 + 3*20e-6, bw: 300e9, crossingNICs: 8},
		// The ring crossing on 2 NICs: 100 GB/s per boundary sets the pace.
		{name: "4 nodes × 8, ring on 2 NICs", p: func() Params { p := round(4, 8); p.Ring.NICs = 2; return p }(),
			steps: 31, lat: 10e-6 + 28*2e-6 + 3*20e-6, bw: 100e9, crossingNICs: 2},
		// One GPU per node: every step crosses, at the one-GPU latency.
		{name: "8 nodes × 1", p: round(8, 1), steps: 7, lat: 10e-6 + 7*30e-6, bw: 400e9, crossingNICs: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Ring(tc.p, bytes)
			require.NoError(t, err)
			w := tc.p.World()
			require.Equal(t, w-1, got.Steps)
			require.Equal(t, tc.steps, got.Steps)
			require.InEpsilon(t, float64(bytes)/float64(w), got.StepBytes, 1e-12)
			require.Equal(t, "Simple", got.Protocol)
			require.Equal(t, tc.crossingNICs, got.CrossNICs)
			require.InEpsilon(t, tc.lat, got.Lat, 1e-12)
			require.InEpsilon(t, tc.bw, got.BW, 1e-12)
			want := tc.lat + float64(bytes)*float64(w-1)/float64(w)/tc.bw
			require.InEpsilon(t, want, got.Total, 1e-12)
			// Bus bandwidth as nccl-tests defines it.
			require.InEpsilon(t, float64(bytes)/want*float64(w-1)/float64(w), got.BusBW(w), 1e-12)
		})
	}
}

func TestRingPicksNCCLsFastestProtocol(t *testing.T) {
	p := Defaults(1, 4)
	small, err := Ring(p, 1<<20)
	require.NoError(t, err)
	require.Equal(t, "LL", small.Protocol)
	large, err := Ring(p, 2<<30)
	require.NoError(t, err)
	require.Equal(t, "Simple", large.Protocol)
	// On many nodes LL128's cheaper steps win at sizes where Simple's
	// 14 µs per crossing and 3.4 µs per NVLink step add up.
	p.Nodes, p.GPUs = 128, 8
	mid, err := Ring(p, 1<<30)
	require.NoError(t, err)
	require.Equal(t, "LL128", mid.Protocol)
}

func TestPAT(t *testing.T) {
	p := round(8, 1)
	got, err := PAT(p, 1<<30)
	require.NoError(t, err)
	require.Equal(t, 3, got.Steps, "log2(8) network steps")
	lat := 8e-6 + 3*4e-6 + 8*3e-6
	require.InEpsilon(t, lat, got.Lat, 1e-12)
	require.InEpsilon(t, lat+float64(1<<30)*7/8/(0.75*400e9), got.Total, 1e-12)

	for _, shape := range [][2]int{{8, 2}, {1, 1}} {
		_, err := PAT(round(shape[0], shape[1]), 1<<30)
		require.ErrorIs(t, err, hcerr.ErrNotSupported, "PAT on %d×%d", shape[0], shape[1])
	}
}

func TestMonotonicInSize(t *testing.T) {
	for _, shape := range [][2]int{{1, 2}, {1, 4}, {2, 2}, {2, 8}, {16, 8}, {128, 8}, {16, 1}} {
		p := Defaults(shape[0], shape[1])
		w := p.World()
		var prev2D, prevRing, prevPAT, prevBW2D, prevBWRing float64
		for s := int64(1 << 10); s <= 16<<30; s *= 2 {
			a, err := RS2D(p, s)
			require.NoError(t, err)
			r, err := Ring(p, s)
			require.NoError(t, err)
			require.Greater(t, a.Total, prev2D, "2D time on %v at %d", shape, s)
			require.Greater(t, r.Total, prevRing, "ring time on %v at %d", shape, s)
			require.GreaterOrEqual(t, a.BusBW(w), prevBW2D, "2D busbw on %v at %d", shape, s)
			require.GreaterOrEqual(t, r.BusBW(w)*(1+1e-9), prevBWRing, "ring busbw on %v at %d", shape, s)
			if shape[1] == 1 {
				pt, err := PAT(p, s)
				require.NoError(t, err)
				require.Greater(t, pt.Total, prevPAT, "PAT time on %v at %d", shape, s)
				prevPAT = pt.Total
			}
			prev2D, prevRing, prevBW2D, prevBWRing = a.Total, r.Total, a.BusBW(w), r.BusBW(w)
		}
	}
}

func TestBadParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Params)
	}{
		{"no nodes", func(p *Params) { p.Nodes = 0 }},
		{"no GPUs", func(p *Params) { p.GPUs = 0 }},
		{"no push bandwidth", func(p *Params) { p.Node.PushAllBW = 0 }},
		{"no NICs", func(p *Params) { p.Rail.NICs = 0 }},
		{"NaN NIC bandwidth", func(p *Params) { p.Rail.NICBW = math.NaN() }},
		{"negative latency", func(p *Params) { p.Node.Lat = -1 }},
		{"no protocols", func(p *Params) { p.Ring.Protocols = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Defaults(4, 8)
			tc.edit(&p)
			_, err := RS2D(p, 1<<20)
			require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
			_, err = Ring(p, 1<<20)
			require.True(t, errors.Is(err, hcerr.ErrInvalidArgument))
		})
	}
	_, err := RS2D(Defaults(2, 8), 0)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
}
