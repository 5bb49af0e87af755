package model

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Source is one `hiercoll bench` CSV under benchmarks/results and how its
// world was built.
type Source struct {
	Path  string // relative to the results folder
	Nodes int
	GPUs  int
	// Rail is the transport between emulated nodes: "ipc", "nvshmem",
	// "nccl" (over NCCL's socket transport), or "" on one node.
	Rail string
	// Lanes is the NCCL rail's communicators per rail where the variant
	// does not name them ("lanesN").
	Lanes int
}

// Sources are the bench CSVs recorded in RESULTS.md for 2 emulated nodes ×
// 2 GPUs (the 4×1 runs there checked correctness only, untimed) and, for the
// node stage alone, the 1×2 and 1×4 runs of the same folder. Excluded:
// rail-nccl-p2pchunk512k.csv, which ran with NCCL_P2P_NET_CHUNKSIZE changed,
// a socket path the calibrated terms below do not describe.
var Sources = []Source{
	{Path: "2026-11-21-h200x4/rs-2x2-ipc.csv", Nodes: 2, GPUs: 2, Rail: "ipc"},
	{Path: "2026-11-21-h200x4/rs-2x2-nvshmem.csv", Nodes: 2, GPUs: 2, Rail: "nvshmem"},
	{Path: "2026-11-21-h200x4/rs-2x2-nccl.csv", Nodes: 2, GPUs: 2, Rail: "nccl", Lanes: 1},
	{Path: "2026-11-21-h200x4-b/bench-2x2-ipc.csv", Nodes: 2, GPUs: 2, Rail: "ipc"},
	{Path: "2026-11-21-h200x4-b/bench-2x2-nccl.csv", Nodes: 2, GPUs: 2, Rail: "nccl", Lanes: 8},
	{Path: "2026-11-21-h200x4-b/rail-nccl-lanes-1-4-8.csv", Nodes: 2, GPUs: 2, Rail: "nccl"},
	{Path: "2026-11-21-h200x4-b/rail-nccl-lanes-8-16.csv", Nodes: 2, GPUs: 2, Rail: "nccl"},
	{Path: "2026-11-21-h200x4-b/bench-1x2.csv", Nodes: 1, GPUs: 2},
	{Path: "2026-11-21-h200x4-b/bench-1x4.csv", Nodes: 1, GPUs: 4},
}

// The points that set the emulated links' terms (their error is zero by
// construction) and the ones the default node latencies came from.
var (
	calLane    = calPoint{"2026-11-21-h200x4/rs-2x2-nccl.csv", "hiercoll", 512 << 20}
	calSockets = calPoint{"2026-11-21-h200x4-b/bench-2x2-nccl.csv", "hiercoll", 512 << 20}
	calRing    = calPoint{"2026-11-21-h200x4/rs-2x2-nccl.csv", "nccl", 512 << 20}
	calNodeLat = []calPoint{
		{"2026-11-21-h200x4-b/bench-1x2.csv", "hiercoll", 1 << 20},
		{"2026-11-21-h200x4-b/bench-1x4.csv", "hiercoll", 1 << 20},
	}
)

type calPoint struct {
	path, who string
	bytes     int64
}

// Point is one measured call beside the model's prediction.
type Point struct {
	Source   string // CSV path under the results folder
	Config   string // what ran, in words
	Who      string // "hiercoll" or "nccl"
	Nodes    int
	GPUs     int
	Lanes    int // NCCL rail lanes (0 elsewhere)
	Bytes    int64
	Measured float64 // seconds per call
	Model    float64
	// Calibration says the point set a term of the model (so its error
	// says nothing): which one.
	Calibration string
}

// Error is (model − measured) / measured.
func (p Point) Error() float64 { return (p.Model - p.Measured) / p.Measured }

// Term is a link term of the emulation set from one measured point.
type Term struct {
	Name  string
	Value float64 // bytes per second
	From  string
}

// Anchor is one published NCCL point: ring reduce-scatter bus bandwidth on
// H100 nodes of 8 GPUs with 8 × 400 Gb/s NICs.
type Anchor struct {
	Nodes int
	BusBW float64 // bytes per second
}

// NCCLAnchor is what NVIDIA/nccl issue 1229 reports
// (https://github.com/NVIDIA/nccl/issues/1229): bus bandwidth of NCCL's
// reduce-scatter falling "just like 360, 345, 320, 300, 280, 260" GB/s at
// 4 to 128 nodes. The issue gives no message size.
var NCCLAnchor = []Anchor{{4, 360e9}, {8, 345e9}, {16, 320e9}, {32, 300e9}, {64, 280e9}, {128, 260e9}}

// AnchorSizes are the sizes per rank the anchor is compared at.
var AnchorSizes = []int64{1 << 30, 2 << 30, 4 << 30, 8 << 30}

// AnchorRow is the model beside one anchor point, at each of AnchorSizes.
type AnchorRow struct {
	Anchor
	Ring []float64 // ring bus bandwidth predicted at AnchorSizes[i]
	RS2D []float64 // ReduceScatter2D's, for comparison
}

// Report is the model against everything measured and published.
type Report struct {
	Points []Point
	Terms  []Term
	Anchor []AnchorRow
}

// EmulatedNVLinkRail is the rail of emulated nodes on one host over IPC (or
// NVSHMEM, which puts through the copy engine there): a copy-engine copy
// over the same NVLink the node stage uses, after an event join, followed by
// a remote write-value.
func EmulatedNVLinkRail(p Params) Params {
	p.Rail = RailTerms{
		NICs:         p.GPUs, // each GPU's copy engine is its "NIC"
		NICBW:        287.4e9,
		Lat:          (2.86 + 3.25 + 2.44) * 1e-6,
		Lanes:        1,
		SharesNVLink: true,
	}
	return p
}

// Validate is ValidateFS on the folder resultsDir.
func Validate(resultsDir string, base *Params) (Report, error) {
	return ValidateFS(os.DirFS(resultsDir), base)
}

// ValidateFS compares the model with every point of Sources (read from
// results, benchmarks/results or a copy of it) and with NCCLAnchor. The emulated socket links' terms (one
// NCCL lane's rate, the socket path's rate per GPU with many lanes, the flat
// ring's rate across the emulated node boundary) are set from one point each
// and then used for all the others; everything else is Defaults (or base, if
// given: its Nodes and GPUs are replaced by each point's).
func ValidateFS(results fs.FS, base *Params) (Report, error) {
	v := validation{base: base}
	if err := v.readRows(results); err != nil {
		return Report{}, err
	}
	var rep Report
	if err := v.calibrate(&rep); err != nil {
		return Report{}, err
	}
	for _, r := range v.rows {
		pt, err := v.point(r)
		if err != nil {
			return Report{}, err
		}
		rep.Points = append(rep.Points, pt)
	}
	var err error
	rep.Anchor, err = v.anchor()
	return rep, err
}

// validation is Validate's state: the recorded runs, and the emulated
// socket links' terms once calibrated.
type validation struct {
	base                    *Params
	rows                    []recorded
	laneBW, perGPU, ringNet float64
}

// recorded is one timed point of a recorded run: who (hiercoll or nccl),
// the NCCL rail's lanes, the size and the time.
type recorded struct {
	src  Source
	who  string
	lane int
	size int64
	us   float64
}

// readRows reads every timed point of Sources in results.
func (v *validation) readRows(results fs.FS) error {
	for _, s := range Sources {
		recs, err := readBenchCSV(results, s.Path)
		if err != nil {
			return err
		}
		for _, r := range recs {
			lanes := s.Lanes
			if m := lanesRE.FindStringSubmatch(r.variant); m != nil {
				lanes, _ = strconv.Atoi(m[1])
			}
			if s.Rail == "nccl" && lanes == 0 {
				return fmt.Errorf("model: %s: variant %q names no lanes", s.Path, r.variant)
			}
			v.rows = append(v.rows, recorded{s, "hiercoll", lanes, r.bytes, r.hiercollUS})
			if r.ncclUS > 0 {
				v.rows = append(v.rows, recorded{s, "nccl", 0, r.bytes, r.ncclUS})
			}
		}
	}
	return nil
}

func (v *validation) find(c calPoint) (recorded, error) {
	for _, r := range v.rows {
		if r.src.Path == c.path && r.who == c.who && r.size == c.bytes {
			return r, nil
		}
	}
	return recorded{}, fmt.Errorf("model: %w: calibration point %s %s at %d bytes is missing", hcerr.ErrInvalidArgument, c.path, c.who, c.bytes)
}

// params are the terms of a run of s's shape: Defaults, or base with s's
// shape.
func (v *validation) params(s Source) Params {
	p := Defaults(s.Nodes, s.GPUs)
	if v.base != nil {
		p = *v.base
		p.Nodes, p.GPUs = s.Nodes, s.GPUs
	}
	return p
}

// sockets are s's terms with the rail over emulated sockets.
func (v *validation) sockets(s Source, lanes int, laneBW, perGPU float64) Params {
	p := v.params(s)
	p.Rail = RailTerms{NICs: s.GPUs, NICBW: perGPU, Lat: p.Rail.Lat, Lanes: lanes, LaneBW: laneBW}
	return p
}

// flat are s's terms with the flat ring's network rate net.
func (v *validation) flat(s Source, net float64) Params {
	p := v.params(s)
	p.Ring.NetBW = net
	return p
}

// calibrate sets the socket path's terms from one point each, in the order
// they depend on each other, and lists them in rep.
func (v *validation) calibrate(rep *Report) error {
	steps := []struct {
		at    calPoint
		what  string
		term  *float64
		model func(r recorded, bw float64) (float64, error)
	}{
		{calLane, "one NCCL lane over sockets", &v.laneBW, func(r recorded, bw float64) (float64, error) {
			return rs2dTotal(v.sockets(r.src, r.lane, bw, 1e15), r.size)
		}},
		{calSockets, "socket path per GPU, all lanes", &v.perGPU, func(r recorded, bw float64) (float64, error) {
			return rs2dTotal(v.sockets(r.src, r.lane, v.laneBW, bw), r.size)
		}},
		{calRing, "NCCL ring across the emulated node boundary (sockets)", &v.ringNet, func(r recorded, bw float64) (float64, error) {
			t, err := Ring(v.flat(r.src, bw), r.size)
			return t.Total, err
		}},
	}
	for _, st := range steps {
		r, err := v.find(st.at)
		if err != nil {
			return err
		}
		*st.term, err = solveBW(r.us*1e-6, func(bw float64) (float64, error) { return st.model(r, bw) })
		if err != nil {
			return fmt.Errorf("model: calibrating %s on %s: %w", st.what, r.src.Path, err)
		}
		rep.Terms = append(rep.Terms, Term{st.what, *st.term, describe(st.at)})
	}
	return nil
}

// point is the model's prediction beside a recorded point.
func (v *validation) point(r recorded) (Point, error) {
	var err error
	pt := Point{Source: r.src.Path, Who: r.who, Nodes: r.src.Nodes, GPUs: r.src.GPUs, Bytes: r.size, Measured: r.us * 1e-6}
	shape := fmt.Sprintf("%d×%d", r.src.Nodes, r.src.GPUs)
	switch {
	case r.who == "nccl":
		p := v.params(r.src)
		pt.Config = shape + " NCCL ring"
		if r.src.Nodes > 1 {
			pt.Config = shape + " NCCL flat ring, sockets between nodes"
			p = v.flat(r.src, v.ringNet)
		}
		var t RingTime
		t, err = Ring(p, r.size)
		pt.Model = t.Total
	case r.src.Nodes == 1:
		pt.Config = shape + " hiercoll (node stage)"
		pt.Model, err = rs2dTotal(v.params(r.src), r.size)
	case r.src.Rail == "nccl":
		pt.Config = fmt.Sprintf("%s hiercoll, NCCL rail, %d lane(s) over sockets", shape, r.lane)
		pt.Lanes = r.lane
		pt.Model, err = rs2dTotal(v.sockets(r.src, r.lane, v.laneBW, v.perGPU), r.size)
	default:
		pt.Config = fmt.Sprintf("%s hiercoll, %s rail over NVLink", shape, strings.ToUpper(r.src.Rail))
		pt.Model, err = rs2dTotal(EmulatedNVLinkRail(v.params(r.src)), r.size)
	}
	if err != nil {
		return Point{}, err
	}
	switch c := (calPoint{r.src.Path, r.who, r.size}); {
	case c == calLane:
		pt.Calibration = "sets one lane's rate"
	case c == calSockets:
		pt.Calibration = "sets the socket path's rate"
	case c == calRing:
		pt.Calibration = "sets the flat ring's rate"
	case (c == calNodeLat[0] || c == calNodeLat[1]) && v.params(r.src).Node == Defaults(1, 1).Node:
		pt.Calibration = "sets the default node step latency"
	}
	return pt, nil
}

// anchor is the model's bus bandwidth of NCCL's ring and ReduceScatter2D
// beside each NCCLAnchor point.
func (v *validation) anchor() ([]AnchorRow, error) {
	var rows []AnchorRow
	for _, a := range NCCLAnchor {
		ar := AnchorRow{Anchor: a}
		p := v.params(Source{Nodes: a.Nodes, GPUs: 8})
		for _, s := range AnchorSizes {
			rt, err := Ring(p, s)
			if err != nil {
				return nil, err
			}
			t, err := RS2D(p, s)
			if err != nil {
				return nil, err
			}
			ar.Ring = append(ar.Ring, rt.BusBW(p.World()))
			ar.RS2D = append(ar.RS2D, t.BusBW(p.World()))
		}
		rows = append(rows, ar)
	}
	return rows, nil
}

var lanesRE = regexp.MustCompile(`\blanes(\d+)\b`)

func describe(c calPoint) string {
	return fmt.Sprintf("%s, %s at %d MiB", c.path, c.who, c.bytes>>20)
}

// rs2dTotal is RS2D's total time.
func rs2dTotal(p Params, bytes int64) (float64, error) {
	t, err := RS2D(p, bytes)
	return t.Total, err
}

// solveBW finds the bandwidth at which predict (a time that falls as the
// bandwidth grows) gives target, between 1 MB/s and 100 TB/s.
func solveBW(target float64, predict func(bw float64) (float64, error)) (float64, error) {
	lo, hi := math.Log(1e6), math.Log(1e14)
	at := func(x float64) (float64, error) { return predict(math.Exp(x)) }
	fast, err1 := at(hi)
	slow, err2 := at(lo)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	if fast > target || slow < target {
		return 0, fmt.Errorf("%w: no bandwidth between 1 MB/s and 100 TB/s gives %.1f µs", hcerr.ErrInvalidArgument, target*1e6)
	}
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		t, err := at(mid)
		if err != nil {
			return 0, err
		}
		if t > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2), nil
}

// benchRecord is one row of a `hiercoll bench` CSV.
type benchRecord struct {
	variant            string
	bytes              int64
	hiercollUS, ncclUS float64
}

// readBenchCSV reads the columns it needs from a `hiercoll bench` CSV, by
// their header names.
func readBenchCSV(results fs.FS, path string) ([]benchRecord, error) {
	f, err := results.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	recs, err := parseBenchCSV(f)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	return recs, nil
}

func parseBenchCSV(r io.Reader) ([]benchRecord, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"variant", "bytes_per_rank", "hiercoll_us", "nccl_us"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no %q column in the header %q", need, header)
		}
	}
	var out []benchRecord
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		get := func(name string) string {
			if i := col[name]; i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		b, err1 := strconv.ParseInt(get("bytes_per_rank"), 10, 64)
		h, err2 := strconv.ParseFloat(get("hiercoll_us"), 64)
		n, err3 := strconv.ParseFloat(get("nccl_us"), 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, benchRecord{variant: get("variant"), bytes: b, hiercollUS: h, ncclUS: n})
	}
}
