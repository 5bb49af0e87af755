package ring_test

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/intranode/ring"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

// The ring kernel runs one block of RingBlock threads per channel; its
// launch bounds must promise that block.
func TestRingLaunchBoundsMatchTheBlock(t *testing.T) {
	require.Contains(t, ring.Module.Source, fmt.Sprintf("__launch_bounds__(%d, 1)", ring.Block))
}

// ringParams reads the CUDA parameter list of the ring kernels' macro and
// returns the Go type each parameter takes at a launch.
func ringParams(t *testing.T) []reflect.Type {
	t.Helper()
	m := regexp.MustCompile(`(?s)#define HC_RING\(name, T, E\).*?name\((.*?)\) \{`).FindStringSubmatch(ring.Module.Source)
	require.NotNil(t, m, "the HC_RING macro's parameter list")
	list := regexp.MustCompile(`/\*.*?\*/|\\\n`).ReplaceAllString(m[1], " ")
	var types []reflect.Type
	for _, p := range strings.Split(list, ",") {
		f := strings.Fields(p)
		decl := strings.Join(f[:len(f)-1], " ")
		switch {
		case strings.HasSuffix(decl, "*"):
			types = append(types, reflect.TypeOf(device.Ptr(0)))
		case decl == "long long":
			types = append(types, reflect.TypeOf(int64(0)))
		case decl == "u32":
			types = append(types, reflect.TypeOf(uint32(0)))
		case decl == "int":
			types = append(types, reflect.TypeOf(int32(0)))
		default:
			t.Fatalf("parameter %q of an unexpected type", p)
		}
	}
	return types
}

// A launch passes exactly the parameters the CUDA kernel declares, of the
// matching widths, and the CPU backend's twin runs it: on a node of one
// rank the ring is a copy of the own rows (no hop, no rounding).
func TestLaunchRingMatchesTheCUDASignature(t *testing.T) {
	d, s, ctx := kerneltest.SimDevice(t)
	const count = 37
	in := make([]byte, 4*count)
	for i := range count {
		binary.LittleEndian.PutUint32(in[4*i:], uint32(i*2654435761))
	}
	inP := kerneltest.Upload(t, d, in)
	out := kerneltest.Upload(t, d, make([]byte, 4*count))
	heap := kerneltest.Upload(t, d, make([]byte, 256))
	table := make([]byte, 8)
	binary.LittleEndian.PutUint64(table, uint64(heap))
	peers := kerneltest.Upload(t, d, table)
	// The call state after 4 launches that carried 5 messages per channel.
	words := make([]byte, 4*ring.StateWords(2))
	binary.LittleEndian.PutUint32(words, 4)
	for ch := range 2 {
		binary.LittleEndian.PutUint32(words[4*(3+ch):], 5)
	}
	state := kerneltest.Upload(t, d, words)
	p := ring.Params{In: inP, Out: out, Peers: peers, Stride: count, Count: count, Per: 20, Chunk: 7,
		ReadyOff: 0, Msgs: 3, State: state, LWS: 1, Rank: 0, Slots: 1, Channels: 2}
	rec := &kerneltest.LaunchRecorder{Device: d}
	require.NoError(t, ring.Launch(rec, s, dtype.I32, p))
	require.NoError(t, s.Synchronize(ctx))
	require.Equal(t, []int{2}, rec.Grids, "one block per channel")
	want := ringParams(t)
	require.Len(t, rec.Args[0], len(want), "arguments of the launch against the kernel's parameters")
	for i, a := range rec.Args[0] {
		require.Equal(t, want[i], reflect.TypeOf(a), "argument %d", i)
	}
	require.Equal(t, in, kerneltest.Download(t, d, out, 4*count))
	// The launch advanced the state: its number, and 3 more messages per
	// channel.
	got := kerneltest.Download(t, d, state, len(words))
	require.Equal(t, []uint32{5, 0, 0, 8, 8}, []uint32{binary.LittleEndian.Uint32(got), binary.LittleEndian.Uint32(got[4:]),
		binary.LittleEndian.Uint32(got[8:]), binary.LittleEndian.Uint32(got[12:]), binary.LittleEndian.Uint32(got[16:])})
}

// Descriptions the kernel cannot run are refused before the launch.
func TestLaunchRingRejectsBadSteps(t *testing.T) {
	d, s, ctx := kerneltest.SimDevice(t)
	good := ring.Params{Stride: 64, Count: 64, Per: 32, Chunk: 8, Msgs: 4, SlotBytes: 32, LWS: 2, Rank: 1, Slots: 2, Channels: 2, State: 256}
	require.NoError(t, good.Check(dtype.F32))
	for name, edit := range map[string]func(*ring.Params){
		"rank outside the node":     func(p *ring.Params) { p.Rank = 2 },
		"no slots":                  func(p *ring.Params) { p.Slots = 0 },
		"channels short of count":   func(p *ring.Params) { p.Per = 31 },
		"messages short of a share": func(p *ring.Params) { p.Msgs = 3 },
		"slot smaller than a chunk": func(p *ring.Params) { p.SlotBytes = 16 },
		"unaligned slots":           func(p *ring.Params) { p.Chunk, p.SlotBytes = 5, 20 },
		"blocks overlap":            func(p *ring.Params) { p.Stride = 63 },
		"no call state":             func(p *ring.Params) { p.State = 0 },
	} {
		p := good
		edit(&p)
		rec := &kerneltest.LaunchRecorder{Device: d}
		require.ErrorIs(t, ring.Launch(rec, s, dtype.F32, p), device.ErrInvalidArgument, name)
		require.Empty(t, rec.Grids, name)
	}
	require.ErrorIs(t, ring.Launch(d, s, dtype.Invalid, good), device.ErrNotSupported)
	require.NoError(t, s.Synchronize(ctx))
}
