package gemm_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/internal/check"
)

// abCase is one product of an A/B run: fp8 with a scaling, or bf16.
type abCase struct {
	name    string // tensor, row, block or bf16
	m, n, k int
}

func (c abCase) String() string { return fmt.Sprintf("%s:%dx%dx%d", c.name, c.m, c.n, c.k) }

// parseABCases reads "name:MxNxK,..." (name tensor, row, block or bf16).
func parseABCases(s string) ([]abCase, error) {
	var cs []abCase
	for _, f := range strings.Split(s, ",") {
		var c abCase
		name, shape, ok := strings.Cut(strings.TrimSpace(f), ":")
		if _, err := fmt.Sscanf(shape, "%dx%dx%d", &c.m, &c.n, &c.k); !ok || err != nil || c.m <= 0 || c.n <= 0 || c.k <= 0 {
			return nil, fmt.Errorf("case %q: want name:MxNxK", f)
		}
		if !slices.Contains([]string{"tensor", "row", "block", "bf16"}, name) {
			return nil, fmt.Errorf("case %q: name tensor, row, block or bf16", f)
		}
		c.name = name
		cs = append(cs, c)
	}
	return cs, nil
}

func TestParseABCases(t *testing.T) {
	cs, err := parseABCases("row:4096x8192x2048, bf16:1x2x3")
	require.NoError(t, err)
	require.Equal(t, []abCase{{"row", 4096, 8192, 2048}, {"bf16", 1, 2, 3}}, cs)
	for _, bad := range []string{"row:4096x8192", "rows:1x1x1", "tensor:0x1x1", "4096x8192x2048"} {
		_, err := parseABCases(bad)
		require.Error(t, err, bad)
	}
}

func TestABReportDefined(t *testing.T) {
	require.True(t, abReportDefined.MatchString("extern \"C\" __global__ void hc_ab_report() {"))
	require.True(t, abReportDefined.MatchString("__global__\nvoid hc_ab_report ()"))
	require.False(t, abReportDefined.MatchString("// hc_ab_report (none here): the stamps are read by hand"))
	require.False(t, abReportDefined.MatchString("__global__ void hc_ab_reporter()"))
}

// TestGemmABOnGPU is a lab tool for the GEMM's device code, run only where
// HIERCOLL_GEMM_AB names a variant of gemm.cu (the same kernels, changed
// inside). On a Hopper GPU it compiles the variant as a module of its own
// and times it against the built-in kernels in one process, their calls
// interleaved one by one (abRun says in what order), so that both run at
// the same clocks: the card runs these GEMMs at its power cap, and its
// clocks move more between processes than the changes tried. For each case of HIERCOLL_GEMM_AB_CASES (default: fp8 per
// tensor, row-wise and block-wise and bf16, each at 4096x8192x2048,
// 16384x4096x3584 and 8192x8192x7168) it requires the variant's C to be the
// built-in's bit for bit (C poisoned before each), then logs each one's
// time per call over HIERCOLL_GEMM_AB_ROUNDS rounds (default 9) of 10 calls:
// the median [least..greatest] of the rounds' means, and built-in ÷
// variant (above 1: the variant is faster). It also logs any variant kernel
// that spills. HIERCOLL_GEMM_AB_UNCHECKED=1 is for a diagnostic variant
// whose product is wrong by design (a step taken out to time it): a
// differing product is then logged, not failed, and timed all the same.
// A variant that measures inside its kernels may define a kernel
// hc_ab_report (no parameters): it is launched with one block of 32
// threads after each case, so that what it prints (printf, which in a GEMM
// kernel itself would serialise its wgmmas) lands in the log.
func TestGemmABOnGPU(t *testing.T) {
	file := os.Getenv("HIERCOLL_GEMM_AB")
	if file == "" {
		t.Skip("HIERCOLL_GEMM_AB names no variant of gemm.cu")
	}
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	spec := os.Getenv("HIERCOLL_GEMM_AB_CASES")
	if spec == "" {
		for _, name := range []string{"tensor", "row", "block", "bf16"} {
			for _, shape := range []string{"4096x8192x2048", "16384x4096x3584", "8192x8192x7168"} {
				spec += "," + name + ":" + shape
			}
		}
		spec = spec[1:]
	}
	cases, err := parseABCases(spec)
	require.NoError(t, err)
	checked := os.Getenv("HIERCOLL_GEMM_AB_UNCHECKED") != "1"
	rounds := 9
	if r := os.Getenv("HIERCOLL_GEMM_AB_ROUNDS"); r != "" {
		_, err := fmt.Sscanf(r, "%d", &rounds)
		require.NoError(t, err)
		require.GreaterOrEqual(t, rounds, 3)
	}
	d := hopper(t, cuda.Options{})
	variant, mod := gemm.TableOf(string(src))
	builtin := gemm.UseTable(variant)
	defer gemm.UseTable(builtin)
	require.NoError(t, gemm.Prepare(d, dtype.BF16), "the variant %s", file)
	for _, k := range gemm.Kernels() {
		if res, err := d.Resources(k); err == nil && res.LocalBytes > 0 {
			t.Logf("variant %s: %d bytes of local memory (spills)", k.Name, res.LocalBytes)
		}
	}
	gemm.UseTable(builtin)
	require.NoError(t, gemm.Prepare(d, dtype.BF16))
	t.Logf("%s against the built-in gemm.cu on %s: µs per call, median [least..greatest] of %d rounds' means of 10 calls, the two interleaved call by call", file, d.Name(), rounds)
	var report *device.Kernel
	if abReportDefined.Match(src) {
		report = &device.Kernel{Module: mod, Name: "hc_ab_report", Block: 32}
	}
	for _, c := range cases {
		abRun(t, d, c, builtin, variant, rounds, checked)
		if report != nil {
			abReport(t, d, report)
		}
	}
}

// abReportDefined finds a definition of the report kernel (a comment that
// names it does not make the tool launch it).
var abReportDefined = regexp.MustCompile(`__global__\s+void\s+hc_ab_report\s*\(`)

// abReport launches a variant's report kernel and waits for it.
func abReport(t *testing.T, d device.Device, k *device.Kernel) {
	s, err := d.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, d.Launch(s, k, 1), "the variant's hc_ab_report")
	require.NoError(t, s.Synchronize(context.Background()))
}

// abRun checks and times one case: the built-in table's kernel against the
// variant's (unchecked: a differing product logged instead of failed). It
// leaves the built-in table in use, also when a check fails.
func abRun(t *testing.T, d device.Device, c abCase, builtin, variant gemm.KernelTable, rounds int, checked bool) {
	defer gemm.UseTable(builtin)
	s, err := d.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	rng := rand.New(rand.NewPCG(uint64(c.m)<<32|uint64(c.n), uint64(c.k)))
	var bufs []device.Ptr
	defer func() {
		for _, p := range bufs {
			require.NoError(t, d.Free(p))
		}
	}()
	alloc := func(data []byte) device.Ptr {
		p, err := d.Alloc(int64(len(data)))
		require.NoError(t, err)
		bufs = append(bufs, p)
		require.NoError(t, d.CopyToDevice(p, data))
		return p
	}
	in, scaling := dtype.E4M3, gemm.PerTensor
	switch c.name {
	case "bf16":
		in = dtype.BF16
	case "row":
		scaling = gemm.RowWise
	case "block":
		scaling = gemm.BlockWise
	}
	g := gemm.Params{GemmSpec: device.GemmSpec{M: c.m, N: c.n, K: c.k, DType: in, BT: true,
		A: alloc(check.Random(rng, in, c.m*c.k)), B: alloc(check.Random(rng, in, c.n*c.k))}, Out: dtype.BF16}
	if in == dtype.E4M3 {
		na, nb := gemm.ScaleCounts(scaling, c.m, c.n, c.k)
		g.Scaling, g.ScaleA, g.ScaleB = scaling, alloc(randomScales(rng, na, -2, 2)), alloc(randomScales(rng, nb, -2, 2))
	}
	ws, err := gemm.NewWorkspace(d)
	require.NoError(t, err)
	bufs = append(bufs, ws)
	g.Workspace = ws
	poison := check.Poison(dtype.BF16, c.m*c.n)
	cA, cB := alloc(poison), alloc(poison)
	launch := func(table gemm.KernelTable, out device.Ptr) error {
		gemm.UseTable(table)
		p := g
		p.C = out
		return gemm.Launch(d, s, p)
	}
	// The variant's product is the built-in's, bit for bit.
	require.NoError(t, launch(builtin, cA))
	require.NoError(t, launch(variant, cB))
	require.NoError(t, s.Synchronize(context.Background()))
	a, b := make([]byte, len(poison)), make([]byte, len(poison))
	require.NoError(t, d.CopyToHost(a, cA))
	require.NoError(t, d.CopyToHost(b, cB))
	require.False(t, bytes.Equal(a, poison), "%v: the built-in kernel wrote nothing", c)
	if !bytes.Equal(a, b) {
		diff := 0
		for i := 0; i < len(a); i += 2 {
			if a[i] != b[i] || a[i+1] != b[i+1] {
				diff++
			}
		}
		if checked {
			require.Failf(t, "the variant's product differs", "%v: %d of %d elements", c, diff, c.m*c.n)
		}
		t.Logf("%v: the variant's product differs in %d of %d elements (unchecked: timed all the same)", c, diff, c.m*c.n)
	}
	// Timing: per round, one untimed call of each (the stream idled at the
	// last round's end), then 10 of each in turn, each between two timed
	// events, the pair's order alternating call by call and the round's
	// first path alternating round by round: a call's place (after which
	// path, how far into the round) falls alike on both.
	const iters = 10
	ev := make([]device.Event, 4*iters)
	for i := range ev {
		ev[i], err = d.NewTimedEvent()
		require.NoError(t, err)
		defer func(e device.Event) { require.NoError(t, e.Close()) }(ev[i])
	}
	var mean [2][]time.Duration
	var ratio []float64
	for r := 0; r < rounds; r++ {
		require.NoError(t, launch(builtin, cA))
		require.NoError(t, launch(variant, cB))
		order := make([]int, 0, 2*iters)
		for i := 0; i < iters; i++ {
			first := (i + r) % 2
			order = append(order, first, 1-first)
		}
		seen := [2]int{}
		for _, w := range order {
			e := ev[4*seen[w]+2*w:]
			require.NoError(t, e[0].Record(s))
			require.NoError(t, launch([2]gemm.KernelTable{builtin, variant}[w], [2]device.Ptr{cA, cB}[w]))
			require.NoError(t, e[1].Record(s))
			seen[w]++
		}
		require.NoError(t, s.Synchronize(context.Background()))
		var sum [2]time.Duration
		for i := 0; i < iters; i++ {
			for w := 0; w < 2; w++ {
				dt, err := ev[4*i+2*w+1].Since(ev[4*i+2*w])
				require.NoError(t, err)
				sum[w] += dt
			}
		}
		for w := 0; w < 2; w++ {
			mean[w] = append(mean[w], sum[w]/iters)
		}
		ratio = append(ratio, float64(sum[0])/float64(sum[1]))
	}
	us := func(ds []time.Duration) string {
		s := slices.Clone(ds)
		slices.Sort(s)
		f := func(d time.Duration) float64 { return float64(d) / 1e3 }
		return fmt.Sprintf("%.1f [%.1f..%.1f]", f(s[len(s)/2]), f(s[0]), f(s[len(s)-1]))
	}
	slices.Sort(ratio)
	t.Logf("%-22s built-in %-24s variant %-24s built-in/variant %.4f [%.4f..%.4f]", c, us(mean[0]), us(mean[1]),
		ratio[len(ratio)/2], ratio[0], ratio[len(ratio)-1])
}

// On the simulated device (the kernels' Go twin, the same for both tables)
// the A/B run's plumbing: tables swapped per call, C compared, the calls
// timed, for every kind of case.
func TestABRunOnSim(t *testing.T) {
	d := simDev(t)
	variant, _ := gemm.TableOf("// a variant's source: the twin runs either way\n")
	builtin := gemm.UseTable(variant)
	gemm.UseTable(builtin)
	for _, name := range []string{"tensor", "row", "block", "bf16"} {
		abRun(t, d, abCase{name, 40, 72, 256}, builtin, variant, 3, true)
	}
}
