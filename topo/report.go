package topo

import (
	"fmt"
	"strings"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Report is the topology of one host's GPUs as NVML sees it.
type Report struct {
	Driver      string // NVIDIA driver version: "580.65.06"
	NVMLVersion string // "13.580.65.06"
	GPUs        []GPU
	// Links[i][j] is the connection from GPU i to GPU j; Links[i][i] has
	// Kind "self".
	Links [][]Link
	// Notes are the queries NVML refused or could not answer; the report
	// holds what was learnt without them.
	Notes []string
}

// GPU is one device in NVML's order (which is also CUDA's PCI bus order).
type GPU struct {
	Index       int
	Name        string // "NVIDIA H200"
	UUID        string // "GPU-…"
	BusID       string // "00000000:19:00.0"
	MemoryBytes uint64
	NVLinks     int // active NVLinks, whatever is at their other end
}

// Link is the connection between two GPUs.
type Link struct {
	// Kind names the path as `nvidia-smi topo -m` does: "self", "NV18"
	// (18 bonded NVLinks), or the PCIe path: "PIX" (at most one PCIe
	// switch), "PXB" (several switches), "PHB" (a host bridge), "NODE"
	// (host bridges within a NUMA node), "SYS" (across NUMA nodes); "?"
	// where NVML did not say.
	Kind    string
	NVLinks int  // NVLinks between the two, directly or through NVSwitches
	P2P     bool // NVML reports peer-to-peer reads and writes as OK
}

// Kinds of link that are not a PCIe level or an NVLink count.
const (
	KindSelf    = "self"
	KindUnknown = "?"
)

// link returns Links[i][j], or the zero Link where the matrix is short.
func (r *Report) link(i, j int) Link {
	if i < 0 || i >= len(r.Links) || j < 0 || j >= len(r.Links[i]) {
		return Link{}
	}
	return r.Links[i][j]
}

// Table formats the report like `nvidia-smi topo -m`: a matrix of link kinds
// (X for a GPU and itself, NV18 for 18 NVLinks, SYS for a PCIe path across
// NUMA nodes, a trailing * where NVML reports no peer-to-peer access), then
// one line per GPU and the notes.
func (r *Report) Table() string {
	var b strings.Builder
	if r.Driver != "" || r.NVMLVersion != "" {
		fmt.Fprintf(&b, "NVIDIA driver %s, NVML %s\n", orUnknown(r.Driver), orUnknown(r.NVMLVersion))
	}
	n := len(r.GPUs)
	if n == 0 {
		b.WriteString("no GPUs\n")
	}
	cells := make([][]string, n)
	width := len(fmt.Sprintf("GPU%d", n-1))
	noP2P := false
	for i := range n {
		cells[i] = make([]string, n)
		for j := range n {
			cells[i][j] = r.cell(i, j)
			if i != j && !r.link(i, j).P2P {
				noP2P = true
			}
			width = max(width, len(cells[i][j]))
		}
	}
	width += 2
	row := func(head string, cols []string) {
		line := fmt.Sprintf("%-*s", width, head)
		for _, c := range cols {
			line += fmt.Sprintf("%-*s", width, c)
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if n > 0 {
		header := make([]string, n)
		for j := range n {
			header[j] = fmt.Sprintf("GPU%d", j)
		}
		row("", header)
	}
	for i := range n {
		row(fmt.Sprintf("GPU%d", i), cells[i])
	}
	if n > 0 {
		b.WriteString("\n")
	}
	for _, g := range r.GPUs {
		fmt.Fprintf(&b, "GPU%d: %s  bus %s  %.1f GiB  %d active NVLinks  %s\n",
			g.Index, orUnknown(g.Name), orUnknown(g.BusID), float64(g.MemoryBytes)/(1<<30), g.NVLinks, orUnknown(g.UUID))
	}
	if n > 1 {
		b.WriteString("\nLegend: X = self, NV# = # bonded NVLinks (directly or through NVSwitch), PIX = at most one PCIe switch,\n" +
			"  PXB = several PCIe switches, PHB = a PCIe host bridge, NODE = host bridges in one NUMA node, SYS = across NUMA nodes\n")
		if noP2P {
			b.WriteString("  * = no peer-to-peer access (NVML P2P read/write status not OK)\n")
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, note := range r.Notes {
			fmt.Fprintf(&b, "  %s\n", note)
		}
	}
	return b.String()
}

// cell is one entry of the Table matrix.
func (r *Report) cell(i, j int) string {
	if i == j {
		return "X"
	}
	l := r.link(i, j)
	kind := l.Kind
	if kind == "" {
		kind = KindUnknown
	}
	if !l.P2P {
		kind += "*"
	}
	return kind
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// CheckPeerAccess reports whether every ordered pair of the given GPUs
// (indices into r.GPUs) has peer-to-peer access, as the intra-node stage's
// copy-engine scatter needs. The error names the first pair without it and
// wraps hcerr.ErrNotSupported; an index that is not a GPU of the report is
// hcerr.ErrInvalidArgument.
func (r *Report) CheckPeerAccess(gpus []int) error {
	for _, g := range gpus {
		if g < 0 || g >= len(r.GPUs) {
			return fmt.Errorf("topo: GPU %d is not one of the %d GPUs of this host: %w", g, len(r.GPUs), hcerr.ErrInvalidArgument)
		}
	}
	for _, from := range gpus {
		for _, to := range gpus {
			if from == to {
				continue
			}
			l := r.link(from, to)
			if l.P2P {
				continue
			}
			kind := l.Kind
			if kind == "" {
				kind = KindUnknown
			}
			return fmt.Errorf("topo: GPU %d -> GPU %d (%s) has no peer-to-peer access (NVML P2P read/write status not OK); "+
				"the copy-engine scatter path needs peer access over NVLink or PCIe between every pair of a node's GPUs: %w",
				from, to, kind, hcerr.ErrNotSupported)
		}
	}
	return nil
}
