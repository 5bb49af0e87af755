//go:build cgo

package topo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeLink is one active NVLink of a fake GPU: to another GPU (peer >= 0) or
// to an NVSwitch (peer < 0).
type fakeLink struct {
	peer int
}

// fakeHost describes a host for go-nvml's mock. Every query a probe may make
// is answered, so a mock method left nil (which panics when called) means
// ProbeNVML called something it should not have.
type fakeHost struct {
	name   string
	gpus   int
	memory uint64
	// links[i] are GPU i's active NVLinks; nil links means no NVLink at all
	// (nvmlDeviceGetNvLinkState answers ERROR_NOT_SUPPORTED).
	links [][]fakeLink
	// switchType is what nvmlDeviceGetNvLinkRemoteDeviceType answers for a
	// switch link, and switchTypeRet its return code (ERROR_NOT_SUPPORTED:
	// a switch NVML does not name, as in a virtual machine).
	switchType    nvml.IntNvLinkDeviceType
	switchTypeRet nvml.Return
	level         func(i, j int) nvml.GpuTopologyLevel
	levelRet      nvml.Return
	p2p           func(i, j int, index nvml.GpuP2PCapsIndex) nvml.GpuP2PStatus
	nameRet       nvml.Return
}

func busID(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x19+0x22*i) }

func pciInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	copy(p.BusId[:], bus)
	return p
}

// server builds the mock library. Init and Shutdown succeed.
func (h fakeHost) server() *mock.Interface {
	devices := make([]*mock.Device, h.gpus)
	index := map[nvml.Device]int{}
	for i := range h.gpus {
		devices[i] = &mock.Device{}
		index[devices[i]] = i
	}
	for i, d := range devices {
		d.GetNameFunc = func() (string, nvml.Return) { return h.name, h.nameRet }
		d.GetUUIDFunc = func() (string, nvml.Return) {
			return fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i), nvml.SUCCESS
		}
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(busID(i)), nvml.SUCCESS }
		d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: h.memory}, nvml.SUCCESS }
		d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			switch {
			case h.links == nil || h.links[i] == nil:
				return 0, nvml.ERROR_NOT_SUPPORTED
			case link < len(h.links[i]):
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
			if peer := h.links[i][link].peer; peer >= 0 {
				// NVML's bus ids come in both widths; the probe must match them.
				return pciInfo(strings.ToLower(busID(peer)[4:])), nvml.SUCCESS
			}
			return pciInfo("00000000:00:00.0"), nvml.SUCCESS
		}
		d.GetNvLinkRemoteDeviceTypeFunc = func(link int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			if h.links[i][link].peer >= 0 {
				return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
			}
			return h.switchType, h.switchTypeRet
		}
		d.GetTopologyCommonAncestorFunc = func(peer nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			if h.levelRet != nvml.SUCCESS {
				return 0, h.levelRet
			}
			return h.level(i, index[peer]), nvml.SUCCESS
		}
		d.GetP2PStatusFunc = func(peer nvml.Device, c nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return h.p2p(i, index[peer], c), nvml.SUCCESS
		}
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "580.65.06", nvml.SUCCESS },
		SystemGetNVMLVersionFunc:   func() (string, nvml.Return) { return "13.580.65.06", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return h.gpus, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devices) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devices[i], nvml.SUCCESS
		},
	}
}

// twoSockets puts GPUs 0,1 on one NUMA node and 2,3 on the other.
func twoSockets(near nvml.GpuTopologyLevel) func(i, j int) nvml.GpuTopologyLevel {
	return func(i, j int) nvml.GpuTopologyLevel {
		if i/2 == j/2 {
			return near
		}
		return nvml.TOPOLOGY_SYSTEM
	}
}

func allP2P(i, j int, _ nvml.GpuP2PCapsIndex) nvml.GpuP2PStatus { return nvml.P2P_STATUS_OK }

// hgxH200 is the project's machine: 4 H200 SXM, 18 NVLinks each, all to
// NVSwitches.
func hgxH200() fakeHost {
	links := make([][]fakeLink, 4)
	for i := range links {
		for range 18 {
			links[i] = append(links[i], fakeLink{peer: -1})
		}
	}
	return fakeHost{
		name: "NVIDIA H200", gpus: 4, memory: 150754820096, links: links,
		switchType: nvml.NVLINK_DEVICE_TYPE_SWITCH, switchTypeRet: nvml.SUCCESS,
		level: twoSockets(nvml.TOPOLOGY_NODE), p2p: allP2P,
	}
}

// meshH100 is 4 GPUs with 18 NVLinks each wired directly, 6 to each peer.
func meshH100() fakeHost {
	links := make([][]fakeLink, 4)
	for i := range links {
		var peers []int
		for j := range 4 {
			if j != i {
				peers = append(peers, j)
			}
		}
		for l := range 18 {
			links[i] = append(links[i], fakeLink{peer: peers[l/6]})
		}
	}
	return fakeHost{
		name: "NVIDIA H100 NVL", gpus: 4, memory: 100485038080, links: links,
		level: twoSockets(nvml.TOPOLOGY_NODE), p2p: allP2P,
	}
}

// pcie4 is 4 PCIe GPUs without NVLink, in pairs behind one switch per socket;
// P2P works within a pair and not across the sockets.
func pcie4() fakeHost {
	return fakeHost{
		name: "NVIDIA L40S", gpus: 4, memory: 48305799168,
		level: twoSockets(nvml.TOPOLOGY_SINGLE),
		p2p: func(i, j int, _ nvml.GpuP2PCapsIndex) nvml.GpuP2PStatus {
			if i/2 == j/2 {
				return nvml.P2P_STATUS_OK
			}
			return nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED
		},
	}
}

func TestProbeNVMLSwitchedNVLink(t *testing.T) {
	hidden := hgxH200()
	hidden.switchType, hidden.switchTypeRet = nvml.NVLINK_DEVICE_TYPE_UNKNOWN, nvml.ERROR_NOT_SUPPORTED
	for _, tc := range []struct {
		name string
		host fakeHost
	}{
		{"named switches", hgxH200()},
		{"switches NVML cannot name", hidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := tc.host.server()
			rep, err := ProbeNVML(lib)
			require.NoError(t, err)
			assert.Len(t, lib.ShutdownCalls(), 1)
			assert.Equal(t, "580.65.06", rep.Driver)
			assert.Equal(t, "13.580.65.06", rep.NVMLVersion)
			assert.Empty(t, rep.Notes)
			require.Len(t, rep.GPUs, 4)
			require.Len(t, rep.Links, 4)
			for i, g := range rep.GPUs {
				assert.Equal(t, i, g.Index)
				assert.Equal(t, "NVIDIA H200", g.Name)
				assert.Equal(t, busID(i), g.BusID)
				assert.Equal(t, uint64(150754820096), g.MemoryBytes)
				assert.Equal(t, 18, g.NVLinks)
				for j, l := range rep.Links[i] {
					if i == j {
						assert.Equal(t, Link{Kind: KindSelf, P2P: true}, l)
						continue
					}
					assert.Equal(t, Link{Kind: "NV18", NVLinks: 18, P2P: true}, l, "GPU %d -> GPU %d", i, j)
				}
			}
			require.NoError(t, rep.CheckPeerAccess([]int{0, 1, 2, 3}))

			table := rep.Table()
			t.Log("\n" + table)
			assert.Contains(t, table, "NVIDIA driver 580.65.06, NVML 13.580.65.06")
			rows := matrixRows(t, table, 4)
			assert.Equal(t, []string{"GPU0", "GPU1", "GPU2", "GPU3"}, rows[0])
			assert.Equal(t, []string{"GPU2", "NV18", "NV18", "X", "NV18"}, rows[3])
			assert.Contains(t, table, "GPU3: NVIDIA H200  bus "+busID(3)+"  140.4 GiB  18 active NVLinks  GPU-00000003")
			assert.NotContains(t, table, "*")
		})
	}
}

// matrixRows returns the header and n rows of the Table's matrix, split into fields.
func matrixRows(t *testing.T, table string, n int) [][]string {
	t.Helper()
	lines := strings.Split(table, "\n")
	for k, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "GPU0 ") && k+n < len(lines) {
			var rows [][]string
			for _, l := range lines[k : k+n+1] {
				rows = append(rows, strings.Fields(l))
			}
			return rows
		}
	}
	t.Fatalf("no matrix in\n%s", table)
	return nil
}

func TestProbeNVMLDirectNVLinks(t *testing.T) {
	lib := meshH100().server()
	rep, err := ProbeNVML(lib)
	require.NoError(t, err)
	for i := range 4 {
		assert.Equal(t, 18, rep.GPUs[i].NVLinks)
		for j := range 4 {
			if i != j {
				assert.Equal(t, Link{Kind: "NV6", NVLinks: 6, P2P: true}, rep.Links[i][j], "GPU %d -> GPU %d", i, j)
			}
		}
	}
	// Links matched by bus id never need the remote device type.
	for _, h := range []int{0, 1, 2, 3} {
		d, _ := lib.DeviceGetHandleByIndex(h)
		assert.Empty(t, d.(*mock.Device).GetNvLinkRemoteDeviceTypeCalls())
	}
	rows := matrixRows(t, rep.Table(), 4)
	assert.Equal(t, []string{"GPU0", "X", "NV6", "NV6", "NV6"}, rows[1])
	assert.NoError(t, rep.CheckPeerAccess([]int{3, 2, 1, 0}))
}

func TestProbeNVMLPCIeWithoutCrossSocketP2P(t *testing.T) {
	lib := pcie4().server()
	rep, err := ProbeNVML(lib)
	require.NoError(t, err)
	assert.Empty(t, rep.Notes)
	for i := range 4 {
		assert.Zero(t, rep.GPUs[i].NVLinks)
	}
	assert.Equal(t, Link{Kind: "PIX", P2P: true}, rep.Links[0][1])
	assert.Equal(t, Link{Kind: "PIX", P2P: true}, rep.Links[3][2])
	assert.Equal(t, Link{Kind: "SYS", P2P: false}, rep.Links[1][2])

	table := rep.Table()
	t.Log("\n" + table)
	rows := matrixRows(t, table, 4)
	assert.Equal(t, []string{"GPU1", "PIX", "X", "SYS*", "SYS*"}, rows[2])
	assert.Contains(t, table, "* = no peer-to-peer access")

	assert.NoError(t, rep.CheckPeerAccess([]int{0, 1}))
	assert.NoError(t, rep.CheckPeerAccess([]int{2, 3}))
	err = rep.CheckPeerAccess([]int{1, 0, 2})
	require.Error(t, err)
	assert.ErrorIs(t, err, hcerr.ErrNotSupported)
	assert.Contains(t, err.Error(), "GPU 1 -> GPU 2 (SYS)")
	assert.Contains(t, err.Error(), "copy-engine")
	assert.Contains(t, err.Error(), "NVLink or PCIe")
}

func TestProbeNVMLNVLinkPairWithoutP2P(t *testing.T) {
	host := hgxH200()
	host.p2p = func(i, j int, c nvml.GpuP2PCapsIndex) nvml.GpuP2PStatus {
		if c == nvml.P2P_CAPS_INDEX_WRITE && i == 3 && j == 1 {
			return nvml.P2P_STATUS_DISABLED_BY_REGKEY
		}
		return nvml.P2P_STATUS_OK
	}
	rep, err := ProbeNVML(host.server())
	require.NoError(t, err)
	assert.Equal(t, Link{Kind: "NV18", NVLinks: 18, P2P: false}, rep.Links[3][1])
	assert.Equal(t, Link{Kind: "NV18", NVLinks: 18, P2P: true}, rep.Links[1][3])
	assert.NoError(t, rep.CheckPeerAccess([]int{0, 1, 2}))
	err = rep.CheckPeerAccess([]int{0, 1, 2, 3})
	assert.ErrorIs(t, err, hcerr.ErrNotSupported)
	assert.Contains(t, err.Error(), "GPU 3 -> GPU 1 (NV18)")
	assert.Contains(t, rep.Table(), "NV18*")
}

func TestProbeNVMLSwitchPartitions(t *testing.T) {
	// NVML says GPUs 0,1 and 2,3 cannot use NVLink with each other
	// (separate fabric partitions): their switch links do not join them.
	host := hgxH200()
	host.p2p = func(i, j int, c nvml.GpuP2PCapsIndex) nvml.GpuP2PStatus {
		if c == nvml.P2P_CAPS_INDEX_NVLINK && i/2 != j/2 {
			return nvml.P2P_STATUS_NOT_SUPPORTED
		}
		return nvml.P2P_STATUS_OK
	}
	rep, err := ProbeNVML(host.server())
	require.NoError(t, err)
	assert.Equal(t, Link{Kind: "NV18", NVLinks: 18, P2P: true}, rep.Links[0][1])
	assert.Equal(t, Link{Kind: "SYS", NVLinks: 0, P2P: true}, rep.Links[0][2])
}

func TestProbeNVMLInitFails(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED} {
		t.Run(ret.Error(), func(t *testing.T) {
			// Only InitFunc is set: any other call panics.
			lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
			rep, err := ProbeNVML(lib)
			require.Error(t, err)
			assert.Nil(t, rep)
			assert.ErrorIs(t, err, hcerr.ErrNotSupported)
			assert.ErrorIs(t, err, ret)
			assert.Contains(t, err.Error(), "topo: no NVML")
			assert.Len(t, lib.InitCalls(), 1)
		})
	}
}

func TestProbeNVMLDeviceCountFailsStillShutsDown(t *testing.T) {
	lib := hgxH200().server()
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	rep, err := ProbeNVML(lib)
	require.Error(t, err)
	assert.Nil(t, rep)
	assert.ErrorIs(t, err, nvml.ERROR_UNKNOWN)
	assert.Contains(t, err.Error(), "nvmlDeviceGetCount")
	assert.Len(t, lib.ShutdownCalls(), 1)
}

func TestProbeNVMLRefusedQueriesBecomeNotes(t *testing.T) {
	host := pcie4()
	host.levelRet = nvml.ERROR_NOT_SUPPORTED
	host.nameRet = nvml.ERROR_NO_PERMISSION
	lib := host.server()
	lib.ShutdownFunc = func() nvml.Return { return nvml.ERROR_UNKNOWN }
	rep, err := ProbeNVML(lib)
	require.NoError(t, err)
	assert.Equal(t, KindUnknown, rep.Links[0][1].Kind)
	assert.True(t, rep.Links[0][1].P2P)
	assert.Empty(t, rep.GPUs[2].Name)
	require.Len(t, rep.Notes, 3, "%q", rep.Notes)
	assert.Equal(t, "nvmlDeviceGetName: ERROR_NO_PERMISSION (GPU 0, GPU 1, GPU 2, GPU 3)", rep.Notes[0])
	assert.True(t, strings.HasPrefix(rep.Notes[1], "nvmlDeviceGetTopologyCommonAncestor: ERROR_NOT_SUPPORTED (GPU 0 -> GPU 1, "))
	assert.Equal(t, 12, strings.Count(rep.Notes[1], "->"))
	assert.Equal(t, "nvmlShutdown: ERROR_UNKNOWN", rep.Notes[2])
	table := rep.Table()
	assert.Contains(t, table, "Notes:\n  nvmlDeviceGetName")
	assert.Equal(t, []string{"GPU0", "X", "?", "?*", "?*"}, matrixRows(t, table, 4)[1])
}

func TestBusKey(t *testing.T) {
	assert.Equal(t, busKey("00000000:3B:00.0"), busKey("0000:3b:00.0"))
	assert.NotEqual(t, busKey("00000000:3B:00.0"), busKey("00000000:3C:00.0"))
	assert.Equal(t, "garbage", busKey(" GARBAGE "))
	assert.Equal(t, "00000001:02:03.0", busIDString(nvml.PciInfo{Domain: 1, Bus: 2, Device: 3}))
	assert.Empty(t, busIDString(nvml.PciInfo{}))
}
