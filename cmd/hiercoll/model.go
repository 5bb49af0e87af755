package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/seed12530e24/hiercoll/benchmarks/results"
	"github.com/seed12530e24/hiercoll/internal/plot"
	"github.com/seed12530e24/hiercoll/model"
)

func runModel(ctx context.Context, args []string) error {
	return runModelTo(ctx, args, cmdOut)
}

// modelFlags are the values of `hiercoll model`'s flags.
type modelFlags struct {
	fs                                                 *flag.FlagSet
	nodes, sizes, floors                               *string
	gpus, nics, lanes, ringNICs                        *int
	pushBW, pushAllBW, localBW, nodeLat, nodePeerLat   *float64
	nicBW, nicLat, laneBW, reduceBW, reduceLat, ringNV *float64
	csv, png, ratioPNG, pngDir                         *string
	validate                                           validateFlag
}

// newModelFlags defines `hiercoll model`'s flags, printing usage to out.
func newModelFlags(out io.Writer) *modelFlags {
	def := model.Defaults(1, 8)
	fs := flag.NewFlagSet("model", flag.ContinueOnError)
	fs.SetOutput(out)
	m := &modelFlags{fs: fs}
	m.nodes = fs.String("nodes", "2,4,8,16,32,64,128", "node counts, comma-separated")
	m.gpus = fs.Int("gpus", def.GPUs, "GPUs per node")
	m.sizes = fs.String("sizes", "1M,4M,16M,64M,256M,1G,4G", "input bytes per rank, comma-separated, with K/M/G suffixes")
	m.floors = fs.String("floors", "", "`hiercoll floors` log(s), comma-separated: set the NVLink push, local copy, final reduce and ring ceiling terms")
	m.pushBW = fs.Float64("push-bw", shown(def.Node.PushBW/1e9), "GB/s a GPU stores into one node peer (node steps on 2 GPUs)")
	m.pushAllBW = fs.Float64("push-all-bw", shown(def.Node.PushAllBW/1e9), "GB/s a GPU stores into all node peers at once (node steps on 3+ GPUs)")
	m.localBW = fs.Float64("local-bw", shown(def.Node.LocalBW/1e9), "GB/s of the local copy a node step makes with one GPU per node")
	m.nodeLat = fs.Float64("node-lat", shown(def.Node.Lat*1e6), "µs: fixed cost of one node step")
	m.nodePeerLat = fs.Float64("node-peer-lat", shown(def.Node.PeerLat*1e6), "µs added to a node step per node peer")
	m.nics = fs.Int("nics", def.Rail.NICs, "NICs per node")
	m.nicBW = fs.Float64("nic-bw", shown(def.Rail.NICBW/1e9), "GB/s one NIC carries per direction (49: 400 Gb/s at 98%)")
	m.nicLat = fs.Float64("nic-lat", shown(def.Rail.Lat*1e6), "µs: latency of one rail message")
	m.lanes = fs.Int("lanes", def.Rail.Lanes, "communicators per rail sharing each message (NCCL transport)")
	m.laneBW = fs.Float64("lane-bw", 0, "GB/s one lane carries at most (0: no cap per lane)")
	m.reduceBW = fs.Float64("reduce-bw", shown(def.Final.BW/1e9), "GB/s read+written by the final reduce")
	m.reduceLat = fs.Float64("reduce-lat", shown(def.Final.Lat*1e6), "µs: launch of the final reduce")
	m.ringNV = fs.Float64("ring-nvlink-bw", shown(def.Ring.NVLinkBW/1e9), "GB/s: NVLink ceiling of NCCL's ring inside a node")
	m.ringNICs = fs.Int("ring-nics", 0, "NICs per node NCCL's ring channels cross on (0: all)")
	m.csv = fs.String("csv", "", "write the predictions as CSV to this file")
	m.png = fs.String("png", "", "write bus bandwidth against size (2D and ring, per node count) to this PNG file")
	m.ratioPNG = fs.String("ratio-png", "", "write NCCL's time (ring, or PAT where faster) over ReduceScatter2D's against size, per node count, to this PNG file")
	fs.Var(&m.validate, "validate", "compare the model with the recorded bench runs and with NCCL's published scaling, instead of predicting; "+
		"--validate alone reads the runs built into the command (benchmarks/results), --validate DIR those of a copy of that folder")
	m.pngDir = fs.String("png-dir", "", "with --validate: write anchor.png, one-node.png, emulated-nvlink.png and emulated-sockets.png into this folder")
	return m
}

// parse parses args, taking --validate DIR's folder and the flags after it.
func (m *modelFlags) parse(args []string) error {
	fs := m.fs
	if err := parseFlags(fs, args, true, "gpus", "nics", "lanes"); err != nil {
		return err
	}
	if m.validate.set && m.validate.dir == "" && fs.NArg() > 0 { // --validate DIR: the flags after DIR too
		m.validate.dir = fs.Arg(0)
		if err := parseFlags(fs, fs.Args()[1:], true, "gpus", "nics", "lanes"); err != nil {
			return err
		}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (hiercoll model -h lists the flags)", fs.Arg(0))}
	}
	return nil
}

// terms are the model's terms: the defaults, then the floors, then the flags given.
func (m *modelFlags) terms() (model.Params, []string, error) {
	p := model.Defaults(1, *m.gpus)
	var notes []string
	if *m.floors != "" {
		f, err := readFloors(strings.Split(*m.floors, ","))
		if err != nil {
			return p, nil, err
		}
		notes = f.Apply(&p)
	}
	set := map[string]bool{}
	m.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var bad []error
	gb := func(name string, v float64, dst *float64) {
		// A rate must be a positive number (--lane-bw 0: no cap per lane).
		if set[name] && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v == 0 && name != "lane-bw") {
			bad = append(bad, fmt.Errorf("--%s %v: want a bandwidth above 0 GB/s", name, v))
		} else if set[name] {
			*dst = v * 1e9
		}
	}
	us := func(name string, v float64, dst *float64) {
		if set[name] && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
			bad = append(bad, fmt.Errorf("--%s %v: want a latency of 0 µs or more", name, v))
		} else if set[name] {
			*dst = v * 1e-6
		}
	}
	gb("push-bw", *m.pushBW, &p.Node.PushBW)
	gb("push-all-bw", *m.pushAllBW, &p.Node.PushAllBW)
	gb("local-bw", *m.localBW, &p.Node.LocalBW)
	us("node-lat", *m.nodeLat, &p.Node.Lat)
	us("node-peer-lat", *m.nodePeerLat, &p.Node.PeerLat)
	gb("nic-bw", *m.nicBW, &p.Rail.NICBW)
	us("nic-lat", *m.nicLat, &p.Rail.Lat)
	gb("lane-bw", *m.laneBW, &p.Rail.LaneBW)
	gb("reduce-bw", *m.reduceBW, &p.Final.BW)
	us("reduce-lat", *m.reduceLat, &p.Final.Lat)
	gb("ring-nvlink-bw", *m.ringNV, &p.Ring.NVLinkBW)
	p.Rail.NICs, p.Rail.Lanes, p.Ring.NICs = *m.nics, *m.lanes, *m.ringNICs
	if *m.ringNICs < 0 {
		bad = append(bad, fmt.Errorf("--ring-nics %d: want 0 (all) or a count of NICs", *m.ringNICs))
	}
	if len(bad) > 0 {
		return p, nil, usageError{joinLine(bad)}
	}
	return p, notes, nil
}

// runModelTo is `hiercoll model`, printing to out.
func runModelTo(_ context.Context, args []string, out io.Writer) error {
	m := newModelFlags(out)
	if err := m.parse(args); err != nil {
		return err
	}
	nodeList, err := intList("nodes", *m.nodes)
	if err != nil {
		return usageError{err}
	}
	sizes, err := parseSizes(*m.sizes)
	if err != nil {
		return usageError{err}
	}
	p, notes, err := m.terms()
	if err != nil {
		return err
	}
	if m.validate.set {
		return runValidate(out, m.validate.dir, p, *m.pngDir)
	}
	if *m.pngDir != "" {
		return usageError{errors.New("--png-dir goes with --validate")}
	}
	return m.predictAll(out, p, notes, nodeList, sizes)
}

// predictAll predicts every node count and size, prints them and writes the files asked for.
func (m *modelFlags) predictAll(out io.Writer, p model.Params, notes []string, nodeList []int, sizes []int64) error {
	for _, n := range nodeList {
		if n < 1 {
			return usageError{fmt.Errorf("--nodes %q: want node counts of at least 1", *m.nodes)}
		}
	}
	var rows []modelRow
	for _, n := range nodeList {
		q := p
		q.Nodes = n
		for _, s := range sizes {
			r, err := predict(q, s)
			if err != nil {
				return usageError{err}
			}
			rows = append(rows, r)
		}
	}
	printPredictions(out, p, notes, rows)
	var errs []error
	if *m.csv != "" {
		errs = append(errs, writeFile(*m.csv, func(w io.Writer) error { return writeModelCSV(w, rows) }))
	}
	if *m.png != "" {
		errs = append(errs, writeFile(*m.png, func(w io.Writer) error { return busBWChart(p, rows).PNG(w) }))
	}
	if *m.ratioPNG != "" {
		errs = append(errs, writeFile(*m.ratioPNG, func(w io.Writer) error { return ratioChart(p, rows).PNG(w) }))
	}
	return errors.Join(errs...)
}

// readFloors parses floors logs in order; a row's first value wins.
func readFloors(paths []string) (model.Floors, error) {
	var readers []io.Reader
	for _, path := range paths {
		b, err := os.ReadFile(strings.TrimSpace(path))
		if err != nil {
			return model.Floors{}, err
		}
		readers = append(readers, strings.NewReader(string(b)+"\n"))
	}
	return model.ParseFloors(io.MultiReader(readers...))
}

// modelRow is one node count and size.
type modelRow struct {
	nodes, gpus int
	bytes       int64
	rs2d        model.RS2DTime
	ring        model.RingTime
	pat         *model.RingTime // where NCCL runs PAT
}

func (r modelRow) world() int { return r.nodes * r.gpus }

// nccl is what NCCL's tuner would run: the ring, or PAT where it is
// faster (one GPU per node).
func (r modelRow) nccl() (string, float64) {
	if r.pat != nil && r.pat.Total < r.ring.Total {
		return "PAT", r.pat.Total
	}
	return "ring", r.ring.Total
}

// ratio is NCCL's time over ReduceScatter2D's: above 1, 2D is faster.
func (r modelRow) ratio() float64 {
	if r.rs2d.Total == 0 {
		return math.NaN()
	}
	_, t := r.nccl()
	return t / r.rs2d.Total
}

func predict(p model.Params, bytes int64) (modelRow, error) {
	r := modelRow{nodes: p.Nodes, gpus: p.GPUs, bytes: bytes}
	var err error
	if r.rs2d, err = model.RS2D(p, bytes); err != nil {
		return r, err
	}
	if r.ring, err = model.Ring(p, bytes); err != nil {
		return r, err
	}
	if p.GPUs == 1 && p.Nodes > 1 {
		t, err := model.PAT(p, bytes)
		if err != nil {
			return r, err
		}
		r.pat = &t
	}
	return r, nil
}

func printPredictions(out io.Writer, p model.Params, notes []string, rows []modelRow) {
	fmt.Fprintf(out, "hiercoll model: ReduceScatter2D against NCCL's ring, %d GPU(s) per node (times per call, busbw in GB/s as nccl-tests counts it)\n", p.GPUs)
	fmt.Fprintf(out, "  node step: %.2f µs + %.3f µs per peer; push %.1f GB/s to one peer, %.1f to all at once; local copy %.0f GB/s\n",
		p.Node.Lat*1e6, p.Node.PeerLat*1e6, p.Node.PushBW/1e9, p.Node.PushAllBW/1e9, p.Node.LocalBW/1e9)
	laneCap := "no cap per lane"
	if p.Rail.LaneBW > 0 {
		laneCap = fmt.Sprintf("%.1f GB/s per lane", p.Rail.LaneBW/1e9)
	}
	fmt.Fprintf(out, "  rail: %d NIC(s) per node × %.1f GB/s, %.1f µs per message, %d lane(s), %s; every GPU sends at once\n",
		p.Rail.NICs, p.Rail.NICBW/1e9, p.Rail.Lat*1e6, p.Rail.Lanes, laneCap)
	fmt.Fprintf(out, "  final reduce: %.0f GB/s read+written, %.2f µs\n", p.Final.BW/1e9, p.Final.Lat*1e6)
	ringNICs := "all NICs"
	if p.Ring.NICs > 0 && p.Ring.NICs < p.Rail.NICs {
		ringNICs = fmt.Sprintf("%d NIC(s)", p.Ring.NICs)
	}
	fmt.Fprintf(out, "  NCCL ring: NVLink ceiling %.1f GB/s, crossing nodes on %s; NCCL's tuner latencies, fastest of LL/LL128/Simple\n",
		p.Ring.NVLinkBW/1e9, ringNICs)
	for _, n := range notes {
		fmt.Fprintf(out, "  floors: %s\n", n)
	}
	fmt.Fprintf(out, "%6s %6s %9s | %11s %8s %-5s | %11s %8s %-6s | %11s %8s | %8s\n",
		"nodes", "world", "size", "2D us", "busbw", "bound", "ring us", "busbw", "proto", "PAT us", "busbw", "NCCL/2D")
	for _, r := range rows {
		pat, patBW := "-", "-"
		if r.pat != nil {
			pat, patBW = fmt.Sprintf("%.1f", r.pat.Total*1e6), fmt.Sprintf("%.1f", r.pat.BusBW(r.world())/1e9)
		}
		fmt.Fprintf(out, "%6d %6d %9s | %11.1f %8.1f %-5s | %11.1f %8.1f %-6s | %11s %8s | %7.2fx\n",
			r.nodes, r.world(), sizeName(r.bytes), r.rs2d.Total*1e6, r.rs2d.BusBW(r.world())/1e9, r.rs2d.Bound,
			r.ring.Total*1e6, r.ring.BusBW(r.world())/1e9, r.ring.Protocol, pat, patBW, r.ratio())
	}
}

func writeModelCSV(w io.Writer, rows []modelRow) error {
	if _, err := fmt.Fprintln(w, "nodes,gpus_per_node,bytes_per_rank,rs2d_us,rs2d_busbw_gbps,node_step_us,rail_msg_us,node_stage_us,rail_end_us,final_us,rs2d_bound,ring_us,ring_busbw_gbps,ring_protocol,ring_steps,pat_us,pat_busbw_gbps,nccl_algo,nccl_over_rs2d"); err != nil {
		return err
	}
	for _, r := range rows {
		pat, patBW := "", ""
		if r.pat != nil {
			pat, patBW = fmt.Sprintf("%.3f", r.pat.Total*1e6), fmt.Sprintf("%.3f", r.pat.BusBW(r.world())/1e9)
		}
		t := r.rs2d
		algo, _ := r.nccl()
		if _, err := fmt.Fprintf(w, "%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%s,%.3f,%.3f,%s,%d,%s,%s,%s,%.4f\n",
			r.nodes, r.gpus, r.bytes, t.Total*1e6, t.BusBW(r.world())/1e9, t.NodeStep*1e6, t.RailMsg*1e6, t.Node*1e6, t.Rail*1e6, t.Final*1e6, t.Bound,
			r.ring.Total*1e6, r.ring.BusBW(r.world())/1e9, r.ring.Protocol, r.ring.Steps, pat, patBW, algo, r.ratio()); err != nil {
			return err
		}
	}
	return nil
}

// byNodes groups rows by node count, in the order they came.
func byNodes(rows []modelRow) (order []int, groups map[int][]modelRow) {
	groups = map[int][]modelRow{}
	for _, r := range rows {
		if _, ok := groups[r.nodes]; !ok {
			order = append(order, r.nodes)
		}
		groups[r.nodes] = append(groups[r.nodes], r)
	}
	return order, groups
}

func busBWChart(p model.Params, rows []modelRow) plot.Chart {
	c := plot.Chart{
		Title:  fmt.Sprintf("model: ReduceScatter2D vs NCCL ring, %d GPUs/node, %d x %.0f GB/s NICs", p.GPUs, p.Rail.NICs, p.Rail.NICBW/1e9),
		XLabel: "input bytes per rank", YLabel: "bus bandwidth (GB/s)", LogX: true, Width: 1000, Height: 600,
	}
	order, groups := byNodes(rows)
	for _, n := range order {
		var two, ring plot.Series
		two.Name, ring.Name = fmt.Sprintf("2D, %d nodes", n), fmt.Sprintf("ring, %d nodes", n)
		for _, r := range groups[n] {
			two.X, two.Y = append(two.X, float64(r.bytes)), append(two.Y, r.rs2d.BusBW(r.world())/1e9)
			ring.X, ring.Y = append(ring.X, float64(r.bytes)), append(ring.Y, r.ring.BusBW(r.world())/1e9)
		}
		c.Series = append(c.Series, two, ring)
	}
	return c
}

func ratioChart(p model.Params, rows []modelRow) plot.Chart {
	c := plot.Chart{
		Title:  fmt.Sprintf("model: NCCL time / ReduceScatter2D time, %d GPUs/node, %d x %.0f GB/s NICs", p.GPUs, p.Rail.NICs, p.Rail.NICBW/1e9),
		XLabel: "input bytes per rank", YLabel: "NCCL time / 2D time (above 1: 2D faster)", LogX: true, Width: 1000, Height: 600,
	}
	order, groups := byNodes(rows)
	for _, n := range order {
		s := plot.Series{Name: fmt.Sprintf("%d nodes", n)}
		for _, r := range groups[n] {
			s.X, s.Y = append(s.X, float64(r.bytes)), append(s.Y, r.ratio())
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// runValidate is model --validate: against the runs under dir, or those
// built into the command where dir is "".
func runValidate(out io.Writer, dir string, base model.Params, pngDir string) error {
	runs, from := fs.FS(results.CSV), "(the runs built into the command, from benchmarks/results)"
	if dir != "" {
		runs, from = os.DirFS(dir), dir
	}
	rep, err := model.ValidateFS(runs, &base)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "hiercoll model --validate %s: the model against every timed emulated run and the one-node runs beside them\n", from)
	fmt.Fprintln(out, "  emulated links set from one point each (then used for every other point):")
	for _, t := range rep.Terms {
		fmt.Fprintf(out, "    %-56s %7.2f GB/s  from %s\n", t.Name, t.Value/1e9, t.From)
	}
	fmt.Fprintf(out, "%-46s %-48s %9s %11s %11s %8s\n", "source (benchmarks/results/)", "what ran", "size", "measured us", "model us", "error")
	for _, pt := range rep.Points {
		note := ""
		if pt.Calibration != "" {
			note = "  (calibration: " + pt.Calibration + ")"
		}
		fmt.Fprintf(out, "%-46s %-48s %9s %11.1f %11.1f %+7.1f%%%s\n", pt.Source, pt.Config, sizeName(pt.Bytes), pt.Measured*1e6, pt.Model*1e6, pt.Error()*100, note)
	}
	fmt.Fprintln(out, "error by configuration (calibration points left out): points, least, most, mean |error|")
	for _, g := range errorSummary(rep.Points) {
		fmt.Fprintf(out, "  %-56s %3d %+7.1f%% %+7.1f%% %6.1f%%\n", g.config, g.n, g.min*100, g.max*100, g.meanAbs*100)
	}
	fmt.Fprintln(out, "NCCL ring reduce-scatter, H100 nodes of 8 GPUs, 8 x 400 Gb/s (NVIDIA/nccl issue 1229, size not given) against the model, busbw GB/s:")
	fmt.Fprintf(out, "%6s %9s", "nodes", "published")
	for _, s := range model.AnchorSizes {
		fmt.Fprintf(out, " | %-16s", "ring @"+sizeName(s))
	}
	fmt.Fprintf(out, " | 2D model @%s..%s\n", sizeName(model.AnchorSizes[0]), sizeName(model.AnchorSizes[len(model.AnchorSizes)-1]))
	for _, a := range rep.Anchor {
		fmt.Fprintf(out, "%6d %9.0f", a.Nodes, a.BusBW/1e9)
		for _, v := range a.Ring {
			fmt.Fprintf(out, " | %5.0f (%+5.1f%%)  ", v/1e9, (v-a.BusBW)/a.BusBW*100)
		}
		fmt.Fprint(out, " |")
		for _, v := range a.RS2D {
			fmt.Fprintf(out, " %5.0f", v/1e9)
		}
		fmt.Fprintln(out)
	}
	if pngDir == "" {
		return nil
	}
	var errs []error
	for name, c := range validationCharts(rep) {
		errs = append(errs, writeFile(filepath.Join(pngDir, name), func(w io.Writer) error { return c.PNG(w) }))
	}
	return errors.Join(errs...)
}

type errorGroup struct {
	config            string
	n                 int
	min, max, meanAbs float64
}

func errorSummary(points []model.Point) []errorGroup {
	groups := map[string]*errorGroup{}
	var order []string
	for _, pt := range points {
		if pt.Calibration != "" {
			continue
		}
		g, ok := groups[pt.Config]
		if !ok {
			g = &errorGroup{config: pt.Config, min: math.Inf(1), max: math.Inf(-1)}
			groups[pt.Config] = g
			order = append(order, pt.Config)
		}
		e := pt.Error()
		g.n++
		g.min, g.max = math.Min(g.min, e), math.Max(g.max, e)
		g.meanAbs += math.Abs(e)
	}
	sort.Strings(order)
	var out []errorGroup
	for _, c := range order {
		g := groups[c]
		g.meanAbs /= float64(g.n)
		out = append(out, *g)
	}
	return out
}

// validationCharts are the measured points (the mean of the runs at each
// size) beside the model's curves, and the anchor beside the ring model.
func validationCharts(rep model.Report) map[string]plot.Chart {
	charts := measuredCharts(rep)
	charts["anchor.png"] = anchorChart(rep)
	return charts
}

// validationChartMaker returns a builder of bus bandwidth charts whose lines,
// each {config, "measured" or "model", legend label}, come from rep's points.
func validationChartMaker(rep model.Report) func(title string, lines ...[3]string) plot.Chart {
	type key struct {
		config string
		bytes  int64
	}
	sum, count := map[key]float64{}, map[key]int{}
	modelAt := map[key]float64{}
	world := map[string]int{}
	for _, pt := range rep.Points {
		k := key{pt.Config, pt.Bytes}
		sum[k] += pt.Measured
		count[k]++
		modelAt[k] = pt.Model
		world[pt.Config] = pt.Nodes * pt.GPUs
	}
	series := func(config, label string, measured bool) plot.Series {
		s := plot.Series{Name: label}
		var sizes []int64
		for k := range count {
			if k.config == config {
				sizes = append(sizes, k.bytes)
			}
		}
		sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
		for _, b := range sizes {
			k := key{config, b}
			t := modelAt[k]
			if measured {
				t = sum[k] / float64(count[k])
			}
			s.X, s.Y = append(s.X, float64(b)), append(s.Y, model.BusBW(b, world[config], t)/1e9)
		}
		return s
	}
	// A line is {config, "measured" or "model", legend label}.
	return func(title string, lines ...[3]string) plot.Chart {
		c := plot.Chart{Title: title, XLabel: "input bytes per rank", YLabel: "bus bandwidth (GB/s)", LogX: true, Width: 1000, Height: 600}
		for _, l := range lines {
			c.Series = append(c.Series, series(l[0], l[2], l[1] == "measured"))
		}
		return c
	}
}

// measuredCharts are the emulated-node and one-node charts: measured beside model.
func measuredCharts(rep model.Report) map[string]plot.Chart {
	chart := validationChartMaker(rep)
	const (
		ipc     = "2×2 hiercoll, IPC rail over NVLink"
		nvshmem = "2×2 hiercoll, NVSHMEM rail over NVLink"
		flat    = "2×2 NCCL flat ring, sockets between nodes"
	)
	lane := func(n int) string { return fmt.Sprintf("2×2 hiercoll, NCCL rail, %d lane(s) over sockets", n) }
	one := func(shape, who string) string {
		if who == "hiercoll" {
			return shape + " hiercoll (node stage)"
		}
		return shape + " NCCL ring"
	}
	return map[string]plot.Chart{
		"emulated-nvlink.png": chart("2 emulated nodes x 2 H200, rail over NVLink (mean of runs)",
			[3]string{ipc, "measured", "IPC rail, measured"}, [3]string{nvshmem, "measured", "NVSHMEM rail, measured"},
			[3]string{ipc, "model", "IPC/NVSHMEM rail, model"}),
		"emulated-sockets.png": chart("2 emulated nodes x 2 H200, sockets between nodes (mean of runs)",
			[3]string{lane(1), "measured", "1 lane, measured"}, [3]string{lane(1), "model", "1 lane, model"},
			[3]string{lane(4), "measured", "4 lanes, measured"}, [3]string{lane(8), "measured", "8 lanes, measured"},
			[3]string{lane(8), "model", "4-16 lanes, model"}, [3]string{lane(16), "measured", "16 lanes, measured"},
			[3]string{flat, "measured", "NCCL flat ring, measured"}, [3]string{flat, "model", "NCCL flat ring, model"}),
		"one-node.png": chart("one node of H200s: measured and model",
			[3]string{one("1×4", "hiercoll"), "measured", "1x4 hiercoll, measured"}, [3]string{one("1×4", "hiercoll"), "model", "1x4 hiercoll, model"},
			[3]string{one("1×4", "nccl"), "measured", "1x4 NCCL, measured"}, [3]string{one("1×4", "nccl"), "model", "1x4 NCCL ring, model"},
			[3]string{one("1×2", "hiercoll"), "measured", "1x2 hiercoll, measured"}, [3]string{one("1×2", "hiercoll"), "model", "1x2 hiercoll, model"},
			[3]string{one("1×2", "nccl"), "measured", "1x2 NCCL, measured"}, [3]string{one("1×2", "nccl"), "model", "1x2 NCCL ring, model"}),
	}
}

// anchorChart is NCCL's published ring scaling beside the ring and 2D models.
func anchorChart(rep model.Report) plot.Chart {
	a := plot.Chart{
		Title:  "NCCL ring reduce-scatter on 8 x H100 nodes, 8 x 400 Gb/s: published and model",
		XLabel: "nodes", YLabel: "bus bandwidth (GB/s)", LogX: true, Width: 1000, Height: 600,
	}
	pub := plot.Series{Name: "NCCL, published (issue 1229)"}
	for _, r := range rep.Anchor {
		pub.X, pub.Y = append(pub.X, float64(r.Nodes)), append(pub.Y, r.BusBW/1e9)
	}
	a.Series = append(a.Series, pub)
	for i, s := range model.AnchorSizes {
		ring := plot.Series{Name: "ring model, " + sizeName(s)}
		for _, r := range rep.Anchor {
			ring.X, ring.Y = append(ring.X, float64(r.Nodes)), append(ring.Y, r.Ring[i]/1e9)
		}
		a.Series = append(a.Series, ring)
	}
	for i, s := range model.AnchorSizes {
		if s != 2<<30 && s != 8<<30 {
			continue
		}
		two := plot.Series{Name: "2D model, " + sizeName(s)}
		for _, r := range rep.Anchor {
			two.X, two.Y = append(two.X, float64(r.Nodes)), append(two.Y, r.RS2D[i]/1e9)
		}
		a.Series = append(a.Series, two)
	}
	return a
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		return err
	}
	return errors.Join(write(f), f.Close())
}

// sizeName prints a size per rank as bench's flags take it: 512K, 32M, 2G.
func sizeName(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dG", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dM", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return fmt.Sprintf("%d", b)
}

// validateFlag is --validate: alone (a boolean flag) the recorded runs built
// into the command; --validate=DIR (or --validate DIR) a folder of them.
type validateFlag struct {
	set bool
	dir string
}

func (v *validateFlag) IsBoolFlag() bool { return true }

func (v *validateFlag) String() string {
	if v == nil || !v.set {
		return "false"
	}
	return cmp.Or(v.dir, "true")
}

func (v *validateFlag) Set(s string) error {
	switch s {
	case "true":
		v.set, v.dir = true, ""
	case "false", "":
		v.set, v.dir = false, ""
	default:
		v.set, v.dir = true, s
	}
	return nil
}

// shown is a default as the flag's help prints it: six significant digits,
// so that 10.15 does not show as 10.149999999999999.
func shown(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if err != nil {
		return v
	}
	return r
}
