//go:build cgo

package topo

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Probe reports this host's GPU topology from the system's NVML library
// (libnvidia-ml.so.1). Without the library or the driver the error wraps
// hcerr.ErrNotSupported.
func Probe() (*Report, error) {
	return ProbeNVML(nvml.New())
}

// ProbeNVML reports the GPU topology that lib describes: nvml.New() for the
// real library, or a mock. It calls lib.Init first and nothing else when that
// fails (the error then wraps hcerr.ErrNotSupported and the nvml.Return), and
// lib.Shutdown after a successful Init whatever happens next. Only the device
// count and the device handles are essential: any other query NVML refuses is
// recorded in Report.Notes, and the report says "?" (or false) where it would
// have used the answer.
func ProbeNVML(lib nvml.Interface) (rep *Report, err error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("topo: no NVML: %s (nvmlInit: %w): %w", initFailure(ret), ret, hcerr.ErrNotSupported)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("nvmlShutdown: %v", ret))
		}
	}()
	return probe(lib)
}

// initFailure says in words why nvmlInit failed.
func initFailure(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "libnvidia-ml.so.1 could not be loaded"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission to open the GPU devices"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "libnvidia-ml.so.1 does not match the kernel driver's version"
	}
	return "NVML failed to initialise"
}

// probe does the queries between Init and Shutdown.
func probe(lib nvml.Interface) (*Report, error) {
	rep := &Report{}
	notes := &noteBook{}
	defer func() { rep.Notes = append(rep.Notes, notes.lines()...) }()

	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		rep.Driver = v
	} else {
		notes.add("nvmlSystemGetDriverVersion", ret, "")
	}
	if v, ret := lib.SystemGetNVMLVersion(); ret == nvml.SUCCESS {
		rep.NVMLVersion = v
	} else {
		notes.add("nvmlSystemGetNVMLVersion", ret, "")
	}

	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("topo: nvmlDeviceGetCount: %w", ret)
	}
	handles := make([]nvml.Device, count)
	gpuByBus := make(map[string]int, count)
	for i := range count {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("topo: nvmlDeviceGetHandleByIndex(%d): %w", i, ret)
		}
		handles[i] = h
		rep.GPUs = append(rep.GPUs, describeGPU(i, h, notes))
		if bus := rep.GPUs[i].BusID; bus != "" {
			gpuByBus[busKey(bus)] = i
		}
	}

	// direct[i][j]: NVLinks of GPU i whose far end is GPU j.
	// switched[i]: NVLinks of GPU i whose far end is an NVSwitch.
	direct := make([][]int, count)
	switched := make([]int, count)
	for i, h := range handles {
		direct[i] = make([]int, count)
		rep.GPUs[i].NVLinks = walkNVLinks(i, h, gpuByBus, direct[i], &switched[i], notes)
	}

	rep.Links = make([][]Link, count)
	for i := range count {
		rep.Links[i] = make([]Link, count)
		for j := range count {
			if i == j {
				// A GPU reaches its own memory; P2P is true so that
				// CheckPeerAccess needs no special case for it.
				rep.Links[i][j] = Link{Kind: KindSelf, P2P: true}
				continue
			}
			rep.Links[i][j] = pairLink(i, j, handles[i], handles[j], direct[i][j], switched[i], switched[j], notes)
		}
	}
	return rep, nil
}

// describeGPU reads one GPU's identity and memory.
func describeGPU(i int, h nvml.Device, notes *noteBook) GPU {
	g := GPU{Index: i}
	subject := fmt.Sprintf("GPU %d", i)
	if v, ret := h.GetName(); ret == nvml.SUCCESS {
		g.Name = v
	} else {
		notes.add("nvmlDeviceGetName", ret, subject)
	}
	if v, ret := h.GetUUID(); ret == nvml.SUCCESS {
		g.UUID = v
	} else {
		notes.add("nvmlDeviceGetUUID", ret, subject)
	}
	if p, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
		g.BusID = busIDString(p)
	} else {
		notes.add("nvmlDeviceGetPciInfo", ret, subject)
	}
	if m, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.MemoryBytes = m.Total
	} else {
		notes.add("nvmlDeviceGetMemoryInfo", ret, subject)
	}
	return g
}

// walkNVLinks visits GPU i's NVLinks and returns how many are active. An
// active link whose far end has the bus id of another GPU of this host counts
// in direct[peer]; one that ends at an NVSwitch, or at something NVML cannot
// name that is not a GPU of this host (a switch a virtual machine does not
// see), counts in *switched; one that ends at a CPU (IBM NPU) counts only as
// active.
func walkNVLinks(i int, h nvml.Device, gpuByBus map[string]int, direct []int, switched *int, notes *noteBook) int {
	active := 0
	for link := range nvml.NVLINK_MAX_LINKS {
		subject := fmt.Sprintf("GPU %d link %d", i, link)
		state, ret := h.GetNvLinkState(link)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT:
			continue // no such link, or a GPU without NVLink
		default:
			notes.add("nvmlDeviceGetNvLinkState", ret, subject)
			continue
		}
		if state != nvml.FEATURE_ENABLED {
			continue
		}
		active++

		remoteBus := ""
		if p, ret := h.GetNvLinkRemotePciInfo(link); ret == nvml.SUCCESS {
			remoteBus = busIDString(p)
		} else {
			notes.add("nvmlDeviceGetNvLinkRemotePciInfo", ret, subject)
		}
		if peer, ok := gpuByBus[busKey(remoteBus)]; ok && remoteBus != "" {
			if peer != i {
				direct[peer]++
			}
			continue
		}
		kind, ret := h.GetNvLinkRemoteDeviceType(link)
		switch {
		case ret == nvml.SUCCESS && kind == nvml.NVLINK_DEVICE_TYPE_IBMNPU:
			// a CPU: not a path to another GPU
		case ret == nvml.SUCCESS && kind == nvml.NVLINK_DEVICE_TYPE_GPU:
			notes.add("NVLink to a GPU that is not one of this host's", nvml.SUCCESS,
				fmt.Sprintf("%s (remote bus %s)", subject, orUnknown(remoteBus)))
		default:
			*switched++ // an NVSwitch, named or not
		}
	}
	return active
}

// pairLink queries the path from GPU i (handle a) to GPU j (handle b).
func pairLink(i, j int, a, b nvml.Device, direct, switchedI, switchedJ int, notes *noteBook) Link {
	subject := fmt.Sprintf("GPU %d -> GPU %d", i, j)
	l := Link{Kind: KindUnknown, NVLinks: direct}
	if switchedI > 0 && switchedJ > 0 {
		// Both reach the NVSwitch fabric: over it, GPU i's links carry as
		// much as the end with fewer links. A pair that NVML says cannot use
		// NVLink for P2P (another fabric partition) gets none of it.
		status, ret := a.GetP2PStatus(b, nvml.P2P_CAPS_INDEX_NVLINK)
		if ret != nvml.SUCCESS || status == nvml.P2P_STATUS_OK {
			l.NVLinks += min(switchedI, switchedJ)
		}
	}
	if level, ret := a.GetTopologyCommonAncestor(b); ret == nvml.SUCCESS {
		l.Kind = pcieKind(level)
	} else {
		notes.add("nvmlDeviceGetTopologyCommonAncestor", ret, subject)
	}
	if l.NVLinks > 0 {
		l.Kind = fmt.Sprintf("NV%d", l.NVLinks)
	}
	l.P2P = true
	for _, c := range []struct {
		index nvml.GpuP2PCapsIndex
		name  string
	}{{nvml.P2P_CAPS_INDEX_READ, "read"}, {nvml.P2P_CAPS_INDEX_WRITE, "write"}} {
		status, ret := a.GetP2PStatus(b, c.index)
		if ret != nvml.SUCCESS {
			notes.add("nvmlDeviceGetP2PStatus("+c.name+")", ret, subject)
			l.P2P = false
			continue
		}
		if status != nvml.P2P_STATUS_OK {
			l.P2P = false
		}
	}
	return l
}

// pcieKind names a PCIe common-ancestor level as nvidia-smi topo -m does.
func pcieKind(level nvml.GpuTopologyLevel) string {
	switch level {
	case nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE:
		// INTERNAL: two GPUs on one board, behind the board's own switch.
		return "PIX"
	case nvml.TOPOLOGY_MULTIPLE:
		return "PXB"
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return "PHB"
	case nvml.TOPOLOGY_NODE:
		return "NODE"
	case nvml.TOPOLOGY_SYSTEM:
		return "SYS"
	}
	return fmt.Sprintf("level%d", int(level))
}

// busIDString is the PCI bus id NVML reports ("00000000:19:00.0"), from the
// numeric fields where the string is empty.
func busIDString(p nvml.PciInfo) string {
	n := 0
	for n < len(p.BusId) && p.BusId[n] != 0 {
		n++
	}
	if n > 0 {
		return string(p.BusId[:n])
	}
	if p.Domain != 0 || p.Bus != 0 || p.Device != 0 {
		return fmt.Sprintf("%08x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
	}
	return ""
}

// busKey normalises a PCI bus id so that "00000000:19:00.0" and
// "0000:19:00.0" compare equal.
func busKey(s string) string {
	var domain, bus, dev, fn uint
	if n, err := fmt.Sscanf(s, "%x:%x:%x.%x", &domain, &bus, &dev, &fn); err == nil && n == 4 {
		return fmt.Sprintf("%x:%x:%x.%x", domain, bus, dev, fn)
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// noteBook gathers refused queries, one line per call and answer, so that a
// query NVML refuses for every pair is one note, not n².
type noteBook struct {
	order    []string
	subjects map[string][]string
}

func (nb *noteBook) add(call string, ret nvml.Return, subject string) {
	key := call
	if ret != nvml.SUCCESS {
		key = fmt.Sprintf("%s: %v", call, ret)
	}
	if nb.subjects == nil {
		nb.subjects = map[string][]string{}
	}
	if _, seen := nb.subjects[key]; !seen {
		nb.order = append(nb.order, key)
	}
	nb.subjects[key] = append(nb.subjects[key], subject)
}

func (nb *noteBook) lines() []string {
	var out []string
	for _, key := range nb.order {
		var subjects []string
		for _, s := range nb.subjects[key] {
			if s != "" {
				subjects = append(subjects, s)
			}
		}
		if len(subjects) == 0 {
			out = append(out, key)
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", key, strings.Join(subjects, ", ")))
	}
	return out
}
