package topo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProbeWithoutNVML runs the real probe. On a host without NVML (or a
// binary built without cgo) it must fail cleanly with ErrNotSupported.
func TestProbeWithoutNVML(t *testing.T) {
	rep, err := Probe()
	if err == nil {
		t.Skipf("NVML is present on this host (driver %s, %d GPUs); the not-supported path cannot be tested here:\n%s",
			rep.Driver, len(rep.GPUs), rep.Table())
	}
	assert.Nil(t, rep)
	require.ErrorIs(t, err, hcerr.ErrNotSupported)
	assert.Contains(t, err.Error(), "topo: no NVML")
	t.Log(err)
}

func TestCheckPeerAccessArguments(t *testing.T) {
	rep := &Report{
		GPUs: []GPU{{Index: 0}, {Index: 1}},
		Links: [][]Link{
			{{Kind: KindSelf, P2P: true}, {Kind: "NV4", NVLinks: 4, P2P: true}},
			{{Kind: "NV4", NVLinks: 4, P2P: true}, {Kind: KindSelf, P2P: true}},
		},
	}
	assert.NoError(t, rep.CheckPeerAccess(nil))
	assert.NoError(t, rep.CheckPeerAccess([]int{1}))
	assert.NoError(t, rep.CheckPeerAccess([]int{0, 1, 1}))
	for _, gpus := range [][]int{{0, 2}, {-1}} {
		err := rep.CheckPeerAccess(gpus)
		assert.ErrorIs(t, err, hcerr.ErrInvalidArgument, "%v", gpus)
	}
	// A report whose matrix is short (built by hand) has no P2P where it is missing.
	short := &Report{GPUs: rep.GPUs}
	err := short.CheckPeerAccess([]int{0, 1})
	require.ErrorIs(t, err, hcerr.ErrNotSupported)
	assert.Contains(t, err.Error(), "GPU 0 -> GPU 1 (?)")
}

func TestTableEdgeCases(t *testing.T) {
	assert.Equal(t, "no GPUs\n", (&Report{}).Table())
	one := &Report{Driver: "580.65.06", GPUs: []GPU{{Name: "NVIDIA H200", MemoryBytes: 1 << 30}}}
	table := one.Table()
	assert.Contains(t, table, "NVML ?")
	assert.Contains(t, table, "GPU0: NVIDIA H200  bus ?  1.0 GiB  0 active NVLinks  ?")
	assert.NotContains(t, table, "Legend")
}

func ExampleProbe() {
	rep, err := Probe()
	if errors.Is(err, hcerr.ErrNotSupported) {
		fmt.Println("no topology here; the CPU backend needs none")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(rep.Table())
	if err := rep.CheckPeerAccess([]int{0, 1, 2, 3}); err != nil {
		fmt.Println(err)
	}
}
