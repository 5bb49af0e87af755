// Package topo reports how the GPUs of one host are connected, so that
// hiercoll can choose a path and say clearly why one is missing.
//
// Probe asks NVML (through github.com/NVIDIA/go-nvml) for every GPU's name,
// UUID, PCI bus id, memory and active NVLinks, and for every pair of GPUs
// their PCIe common ancestor, their NVML peer-to-peer status for reads and
// writes, and how many NVLinks join them. The answer is a Report: Table
// prints it like `nvidia-smi topo -m`, and CheckPeerAccess tells the
// intra-node stage whether its copy-engine scatter can run between a set of
// GPUs.
//
// NVLinks are counted per link: a link that is active and whose remote end is
// the peer GPU (by PCI bus id) counts for that pair. On NVSwitch systems
// (HGX H100/H200) every link ends at a switch, not at a GPU; there two GPUs
// that both have switch links are joined by min(links of each), which is what
// `nvidia-smi topo -m` shows as NV18 between every pair. A link whose remote
// end NVML cannot name and which is not another GPU of this host is taken to
// be a switch, as NCCL does for switches hidden from a virtual machine.
//
// Without NVML (no libnvidia-ml.so.1, no driver, or a binary built with
// CGO_ENABLED=0) Probe returns an error wrapping errs.ErrNotSupported and
// callers carry on without topology. ProbeNVML takes the nvml.Interface to
// use, so tests drive it with go-nvml's mock; it exists only in cgo builds,
// because go-nvml itself needs cgo.
//
// go-nvml links with NVML's symbols left unresolved and dlopens
// libnvidia-ml.so.1 in Init, so a binary must not be linked with -z now
// (full RELRO resolves every symbol at start-up and fails without the
// library); use -ldflags=-extldflags=-Wl,-z,lazy where a toolchain makes
// -z now the default. The same holds for a -buildmode=c-shared library that
// imports this package: Python's ctypes.CDLL opens libraries with RTLD_NOW
// and fails on the first unresolved nvml* symbol, even on a GPU host; keep
// topo out of the C ABI library, or open it with mode=os.RTLD_LAZY.
package topo
