package cuda

import (
	"fmt"
	"strings"
)

// Report is what the driver says about this machine, for the doctor
// command. Probing is read-only: it queries attributes and never creates
// contexts, memory or multicast objects.
type Report struct {
	DriverVersion int // cuDriverGetVersion: 13000 for CUDA 13.0
	Devices       []DeviceReport
	Peers         []PeerReport // every ordered pair of distinct devices
	NVRTC         string       // "13.0", or "" when NVRTC was not found
	NVRTCPath     string
	NVRTCError    string // why NVRTC was not found
}

// DeviceReport describes one GPU.
type DeviceReport struct {
	Ordinal           int
	Name              string
	PCIBusID          string // "0000:19:00.0"
	ComputeCapability string // "9.0"
	Arch              string // "sm_90"
	TotalMemory       int64
	SMs               int
	L2Bytes           int
	AsyncEngines      int
	Attributes        []Attribute
}

// Attribute is one cuDeviceGetAttribute answer.
type Attribute struct {
	Name  string // without the CU_DEVICE_ATTRIBUTE_ prefix
	ID    int
	Value int
	Err   string // the driver refused the query (an attribute it does not know)
}

// Attr returns the value of the named attribute, and whether it was read.
func (d DeviceReport) Attr(name string) (int, bool) {
	for _, a := range d.Attributes {
		if a.Name == name && a.Err == "" {
			return a.Value, true
		}
	}
	return 0, false
}

// PeerReport describes the link from one GPU to another.
type PeerReport struct {
	From, To        int
	CanAccessPeer   bool // cuDeviceCanAccessPeer
	PerformanceRank int  // P2P attributes (cuDeviceGetP2PAttribute)
	AccessSupported int
	NativeAtomics   int
	Err             string
}

// probedAttributes are the attributes the doctor shows.
var probedAttributes = []struct {
	name string
	id   int
}{
	{"MULTIPROCESSOR_COUNT", attrMultiprocessorCount},
	{"L2_CACHE_SIZE", attrL2CacheSize},
	{"ASYNC_ENGINE_COUNT", attrAsyncEngineCount},
	{"UNIFIED_ADDRESSING", attrUnifiedAddressing},
	{"COMPUTE_CAPABILITY_MAJOR", attrComputeCapabilityMajor},
	{"COMPUTE_CAPABILITY_MINOR", attrComputeCapabilityMinor},
	{"STREAM_PRIORITIES_SUPPORTED", attrStreamPrioritiesSupported},
	{"CAN_USE_STREAM_MEM_OPS_V1", attrCanUseStreamMemOpsV1},
	{"CAN_USE_64_BIT_STREAM_MEM_OPS", attrCanUse64BitStreamMemOps},
	{"VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", attrVirtualMemoryManagement},
	{"HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", attrHandleTypePosixFD},
	{"MEMORY_POOLS_SUPPORTED", attrMemoryPoolsSupported},
	{"GPU_DIRECT_RDMA_SUPPORTED", attrGPUDirectRDMASupported},
	{"IPC_EVENT_SUPPORTED", attrIPCEventSupported},
	{"HANDLE_TYPE_FABRIC_SUPPORTED", attrHandleTypeFabricSupported},
	{"MULTICAST_SUPPORTED", attrMulticastSupported},
}

// Probe reports the driver version, every device with its attributes, every
// ordered pair's peer-to-peer properties, and the NVRTC version. Without a
// driver the error wraps device.ErrNotSupported. A query the driver refuses
// is recorded in the report, not returned.
func Probe() (*Report, error) {
	drv, err := loadDriver()
	if err != nil {
		return nil, err
	}
	rep, err := probe(drv)
	if err != nil {
		return nil, err
	}
	if comp, err := loadNVRTC(); err != nil {
		rep.NVRTCError = err.Error()
	} else {
		rep.NVRTC, rep.NVRTCPath = comp.version(), comp.path()
	}
	return rep, nil
}

func probe(drv api) (*Report, error) {
	rep := &Report{}
	v, r := drv.driverVersion()
	if err := check(drv, r, "cuDriverGetVersion"); err != nil {
		return nil, err
	}
	rep.DriverVersion = v
	n, r := drv.deviceCount()
	if r == cudaErrorNoDevice {
		return rep, nil
	}
	if err := check(drv, r, "cuDeviceGetCount"); err != nil {
		return nil, err
	}
	devs := make([]int, n)
	for i := range n {
		dev, r := drv.deviceGet(i)
		if err := check(drv, r, "cuDeviceGet(%d)", i); err != nil {
			return nil, err
		}
		devs[i] = dev
		rep.Devices = append(rep.Devices, probeDevice(drv, i, dev))
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			rep.Peers = append(rep.Peers, probePeer(drv, devs, i, j))
		}
	}
	return rep, nil
}

// probeDevice reports device dev, ordinal i: its name, bus, memory and
// attributes, an attribute the driver fails on reported with its error.
func probeDevice(drv api, i, dev int) DeviceReport {
	dr := DeviceReport{Ordinal: i}
	if name, r := drv.deviceName(dev); r == cudaSuccess {
		dr.Name = name
	} else {
		dr.Name = fmt.Sprintf("(%v)", check(drv, r, "cuDeviceGetName"))
	}
	if bus, r := drv.devicePCIBusID(dev); r == cudaSuccess {
		dr.PCIBusID = bus
	}
	if mem, r := drv.deviceTotalMem(dev); r == cudaSuccess {
		dr.TotalMemory = mem
	}
	for _, a := range probedAttributes {
		val, r := drv.deviceAttribute(dev, a.id)
		at := Attribute{Name: a.name, ID: a.id, Value: val}
		if err := check(drv, r, "cuDeviceGetAttribute(%d)", a.id); err != nil {
			at.Value, at.Err = 0, err.Error()
		}
		dr.Attributes = append(dr.Attributes, at)
	}
	dr.SMs, _ = dr.Attr("MULTIPROCESSOR_COUNT")
	dr.L2Bytes, _ = dr.Attr("L2_CACHE_SIZE")
	dr.AsyncEngines, _ = dr.Attr("ASYNC_ENGINE_COUNT")
	major, ok1 := dr.Attr("COMPUTE_CAPABILITY_MAJOR")
	minor, ok2 := dr.Attr("COMPUTE_CAPABILITY_MINOR")
	if ok1 && ok2 {
		dr.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
		dr.Arch = fmt.Sprintf("sm_%d%d", major, minor)
	}
	return dr
}

// probePeer reports what device i can do with device j's memory, the
// failures joined in its Err.
func probePeer(drv api, devs []int, i, j int) PeerReport {
	pr := PeerReport{From: i, To: j}
	var errs []string
	can, r := drv.deviceCanAccessPeer(devs[i], devs[j])
	if err := check(drv, r, "cuDeviceCanAccessPeer(%d, %d)", i, j); err != nil {
		errs = append(errs, err.Error())
	}
	pr.CanAccessPeer = can
	for _, a := range []struct {
		id  int
		dst *int
	}{
		{p2pPerformanceRank, &pr.PerformanceRank},
		{p2pAccessSupported, &pr.AccessSupported},
		{p2pNativeAtomicSupported, &pr.NativeAtomics},
	} {
		val, r := drv.deviceP2PAttribute(a.id, devs[i], devs[j])
		if err := check(drv, r, "cuDeviceGetP2PAttribute(%d, %d, %d)", a.id, i, j); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		*a.dst = val
	}
	pr.Err = strings.Join(errs, "; ")
	return pr
}

// String formats the report for people.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CUDA driver %d.%d (%d), %d device(s)\n", r.DriverVersion/1000, r.DriverVersion%1000/10, r.DriverVersion, len(r.Devices))
	for _, d := range r.Devices {
		fmt.Fprintf(&b, "  cuda:%d %s  pci %s  cc %s (%s)  %d SMs  L2 %d MiB  %d copy engines  %.1f GiB\n",
			d.Ordinal, d.Name, d.PCIBusID, d.ComputeCapability, d.Arch, d.SMs, d.L2Bytes>>20, d.AsyncEngines,
			float64(d.TotalMemory)/(1<<30))
		for _, a := range d.Attributes {
			if a.Err != "" {
				fmt.Fprintf(&b, "    %-44s (%d) ?  %s\n", a.Name, a.ID, a.Err)
				continue
			}
			fmt.Fprintf(&b, "    %-44s (%d) %d\n", a.Name, a.ID, a.Value)
		}
	}
	if len(r.Peers) > 0 {
		b.WriteString("  peer links (from -> to: can access, access supported, native atomics, performance rank)\n")
		for _, p := range r.Peers {
			fmt.Fprintf(&b, "    %d -> %d: %v %d %d %d", p.From, p.To, p.CanAccessPeer, p.AccessSupported, p.NativeAtomics, p.PerformanceRank)
			if p.Err != "" {
				fmt.Fprintf(&b, "  (%s)", p.Err)
			}
			b.WriteString("\n")
		}
	}
	if r.NVRTC != "" {
		fmt.Fprintf(&b, "NVRTC %s (%s)\n", r.NVRTC, r.NVRTCPath)
	} else {
		fmt.Fprintf(&b, "NVRTC not found: %s\n", r.NVRTCError)
	}
	return b.String()
}
