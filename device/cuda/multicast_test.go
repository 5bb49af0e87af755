package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/symm"
)

// The multicast tests run only in TestAgainstFakeDriver's child, against
// testdata/fakecuda: creating a multicast object on the project's lent GPU
// machines can put their GPUs out of service for days (DESIGN.md's safety
// rule), so they never run against a real driver, not even to see a
// refusal. The fake driver reports MULTICAST_SUPPORTED as
// $FAKE_CUDA_MULTICAST and logs every cuMulticast* and VMM call to
// $FAKE_CUDA_MULTICAST_LOG.

const unset = "<unset>"

// multicastVars are the variables the gate reads.
var multicastVars = []string{device.AllowMulticastEnv, "NCCL_NVLS_ENABLE", "NVSHMEM_DISABLE_NVLS", "TORCH_SYMM_MEM_DISABLE_MULTICAST"}

// setEnv sets (or, for unset, removes) variables for the rest of the test.
func setEnv(t *testing.T, vars map[string]string) {
	t.Helper()
	for k, v := range vars {
		t.Setenv(k, v) // restored after the test
		if v == unset {
			require.NoError(t, os.Unsetenv(k))
		}
	}
}

// openFakeDevice opens fake GPU ordinal; it skips unless the test runs
// against the fake driver, and fails without going on when the driver
// loaded is not the fake one. The device's multicast attribute is read
// here, from $FAKE_CUDA_MULTICAST.
func openFakeDevice(t *testing.T, ordinal int) *cuda.Device {
	t.Helper()
	if os.Getenv("HIERCOLL_FAKE_CUDA") == "" {
		t.Skip("multicast tests run only against the fake driver (TestAgainstFakeDriver), never on a GPU: see DESIGN.md's safety rule")
	}
	d, err := cuda.Open(ordinal, cuda.Options{KernelCacheDir: t.TempDir()})
	require.NoError(t, err)
	if !strings.HasPrefix(d.Info().Model, "Fake GPU") {
		_ = d.Close()
		t.Fatalf("HIERCOLL_FAKE_CUDA is set but %s is not the fake driver's: refusing to go on", d.Name())
	}
	t.Cleanup(func() {
		live := d.Live()
		live.Modules = 0
		assert.Equal(t, cuda.LiveCounts{}, live, "resources left behind on %s", d.Name())
		assert.NoError(t, d.Close())
	})
	return d
}

// multicastLog points the fake driver's call log at a fresh file and
// returns a function that reads the calls logged so far.
func multicastLog(t *testing.T) func() []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "multicast.log")
	setEnv(t, map[string]string{"FAKE_CUDA_MULTICAST_LOG": path})
	return func() []string {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		require.NoError(t, err)
		return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	}
}

// gate is one combination of the gate's conditions.
type gate struct {
	named                bool
	allow                string // HIERCOLL_ALLOW_MULTICAST: "1", "0" or unset
	nccl, nvshmem, torch bool   // the disabling variable is set
	attribute            bool   // MULTICAST_SUPPORTED
}

func (g gate) env() map[string]string {
	vars := map[string]string{device.AllowMulticastEnv: g.allow, "NCCL_NVLS_ENABLE": unset, "NVSHMEM_DISABLE_NVLS": unset,
		"TORCH_SYMM_MEM_DISABLE_MULTICAST": unset, "FAKE_CUDA_MULTICAST": "0"}
	if g.nccl {
		vars["NCCL_NVLS_ENABLE"] = "0"
	}
	if g.nvshmem {
		vars["NVSHMEM_DISABLE_NVLS"] = "1"
	}
	if g.torch {
		vars["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
	}
	if g.attribute {
		vars["FAKE_CUDA_MULTICAST"] = "1"
	}
	return vars
}

// refusals are fragments of the gate's error, one per refusing condition
// other than the name.
func (g gate) refusals() []string {
	var out []string
	if g.allow != "1" {
		out = append(out, "HIERCOLL_ALLOW_MULTICAST=1 is not set")
	}
	for _, x := range []struct {
		on   bool
		text string
	}{{g.nccl, "NCCL_NVLS_ENABLE=0 is set"}, {g.nvshmem, "NVSHMEM_DISABLE_NVLS=1 is set"}, {g.torch, "TORCH_SYMM_MEM_DISABLE_MULTICAST=1 is set"}} {
		if x.on {
			out = append(out, x.text)
		}
	}
	if !g.attribute {
		out = append(out, "MULTICAST_SUPPORTED=1")
	}
	return out
}

func allGates() []gate {
	var out []gate
	for _, named := range []bool{false, true} {
		for _, allow := range []string{"1", "0", unset} {
			for bits := 0; bits < 16; bits++ {
				out = append(out, gate{named: named, allow: allow, nccl: bits&1 != 0, nvshmem: bits&2 != 0, torch: bits&4 != 0, attribute: bits&8 != 0})
			}
		}
	}
	return out
}

func (g gate) allowed() bool { return g.named && len(g.refusals()) == 0 }

// newOneRank is rs2d.New on a world of one rank on d.
func newOneRank(d device.Device, cfg rs2d.Config) (*rs2d.Context, error) {
	comms, err := bootstrap.Local(bootstrap.Shape{Nodes: 1, LocalSize: 1})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg.MaxM, cfg.N, cfg.DType, cfg.Timeout = 4, 8, dtype.F32, 10*time.Second
	return rs2d.New(ctx, comms[0], d, cfg)
}

// In every combination of the gate's conditions but the one that allows,
// the gate refuses with ErrNotSupported naming each refusing condition, so
// do the device's multicast calls (without a permit, or with a permit the
// environment no longer allows) and rs2d.New with the NVLS engine; and not
// one multicast or VMM driver call is made: cuMulticastCreate,
// cuMulticastAddDevice, cuMulticastBindMem and cuMulticastGetGranularity
// (nor any cuMem* of virtual memory management) are never called. Auto
// never asks for multicast, even where it would be allowed.
func TestMulticastRefusedCombinationsCallNothing(t *testing.T) {
	openFakeDevice(t, 0) // skips away from the fake driver
	// A permit from a moment when everything allowed it.
	setEnv(t, gate{named: true, allow: "1", attribute: true}.env())
	stale, err := device.AllowMulticast(openFakeDevice(t, 1), "fake-driver test")
	require.NoError(t, err)

	refused := 0
	for i, g := range allGates() {
		t.Run(fmt.Sprintf("%d:%+v", i, g), func(t *testing.T) {
			setEnv(t, g.env())
			calls := multicastLog(t)
			d := openFakeDevice(t, 0)
			require.Equal(t, g.attribute, d.Info().Multicast)

			// Auto, even with GEMM overlap, makes no multicast call.
			rs, err := newOneRank(d, rs2d.Config{OverlapWithGEMM: true})
			require.NoError(t, err)
			require.NotEqual(t, rs2d.EngineNVLS, rs.Config().Engine)
			require.NoError(t, rs.Close())
			if g.allowed() {
				require.Empty(t, calls(), "Auto made multicast calls")
				return
			}
			refused++

			by := ""
			if g.named {
				by = "fake-driver test"
			}
			_, err = device.AllowMulticast(d, by)
			require.ErrorIs(t, err, device.ErrNotSupported)
			for _, why := range g.refusals() {
				require.Contains(t, err.Error(), why)
			}
			if !g.named {
				require.Contains(t, err.Error(), "nobody asked for it by name")
			}

			permits := []device.Permit{{}}
			if len(g.refusals()) > 0 {
				permits = append(permits, stale)
				// The engine asks by name: only the environment or the
				// device can refuse it, before anything else happens.
				_, err := newOneRank(d, rs2d.Config{Engine: rs2d.EngineNVLS})
				require.ErrorIs(t, err, device.ErrNotSupported)
				require.Contains(t, err.Error(), "engine nvls")
				for _, why := range g.refusals() {
					require.Contains(t, err.Error(), why)
				}
			}
			for _, p := range permits {
				_, err := d.MulticastGranularity(p, 2)
				require.ErrorIs(t, err, device.ErrNotSupported)
				_, err = d.CreateMulticast(p, 2, 2<<20)
				require.ErrorIs(t, err, device.ErrNotSupported)
				_, err = d.ImportMulticast(p, []byte("HCMC1 any handle at all, never looked at"))
				require.ErrorIs(t, err, device.ErrNotSupported)
			}
			require.Empty(t, calls(), "a refused combination made multicast or VMM driver calls")
		})
	}
	require.Equal(t, len(allGates())-1, refused, "every combination but one refused")
}

// callLine is one logged call: its name and key=value fields.
type callLine struct {
	name   string
	fields map[string]int64
}

var fieldRE = regexp.MustCompile(`(\w+)=(-?\d+)`)

func parseCalls(lines []string) []callLine {
	out := make([]callLine, len(lines))
	for i, l := range lines {
		out[i] = callLine{name: strings.Fields(l)[0], fields: map[string]int64{}}
		for _, m := range fieldRE.FindAllStringSubmatch(l, -1) {
			v, _ := strconv.ParseInt(m[2], 10, 64)
			out[i].fields[m[1]] = v
		}
	}
	return out
}

// indexes returns the positions of the calls named name.
func indexes(calls []callLine, name string) []int {
	var at []int
	for i, c := range calls {
		if c.name == name {
			at = append(at, i)
		}
	}
	return at
}

// With every condition met, two ranks (the fake's two GPUs, in one process,
// the descriptor passed over the Unix socket) set up one multicast object:
// the granularity first, one cuMulticastCreate for 2 devices of a size that
// is a multiple of the granularity, both devices added before either binds,
// both bound (memory of the same size) and mapped; Close unbinds and
// releases everything.
func TestMulticastSetupOrderAgainstFakeDriver(t *testing.T) {
	openFakeDevice(t, 0) // skips away from the fake driver
	setEnv(t, gate{named: true, allow: "1", attribute: true}.env())
	calls := multicastLog(t)
	devs := []*cuda.Device{openFakeDevice(t, 0), openFakeDevice(t, 1)}
	comms, err := bootstrap.Local(bootstrap.Shape{Nodes: 1, LocalSize: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const asked = 3 << 20
	mcs := make([]*symm.Multicast, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			place, err := symm.PlaceOf(comms[r])
			if err == nil {
				var p device.Permit
				if p, err = device.AllowMulticast(devs[r], "fake-driver test"); err == nil {
					mcs[r], err = symm.NewMulticast(ctx, comms[r], devs[r], p, place.NodeTeam(), asked)
				}
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	for r, d := range devs {
		require.Equal(t, 1, d.Live().Multicasts)
		require.Equal(t, int64(4<<20), mcs[r].Size, "3 MiB rounded up to the 2 MiB granularity")
		require.NotZero(t, mcs[r].Local)
		require.NotZero(t, mcs[r].Addr)
		require.NotEqual(t, mcs[r].Local, mcs[r].Addr)
	}
	// The bound buffer is ordinary memory of its device.
	writeWord(t, devs[0], mcs[0].Local.Add(4096), 0xc0ffee)
	require.Equal(t, []uint32{0xc0ffee}, readWords(t, devs[0], mcs[0].Local.Add(4096), 1))

	setup := parseCalls(calls())
	t.Logf("setup calls:\n%s", strings.Join(calls(), "\n"))
	create := indexes(setup, "cuMulticastCreate")
	require.Len(t, create, 1, "one object for the team")
	gran := indexes(setup, "cuMulticastGetGranularity")
	require.NotEmpty(t, gran)
	require.Less(t, gran[0], create[0], "the granularity is asked first")
	c := setup[create[0]]
	require.Equal(t, int64(2), c.fields["devices"])
	require.Equal(t, int64(1), c.fields["handleTypes"], "a POSIX-fd handle")
	require.Zero(t, c.fields["size"]%(2<<20), "the size is a multiple of the granularity")
	adds, binds := indexes(setup, "cuMulticastAddDevice"), indexes(setup, "cuMulticastBindMem")
	require.Len(t, adds, 2)
	require.Len(t, binds, 2)
	require.ElementsMatch(t, []int64{0, 1}, []int64{setup[adds[0]].fields["dev"], setup[adds[1]].fields["dev"]})
	require.ElementsMatch(t, []int64{0, 1}, []int64{setup[binds[0]].fields["dev"], setup[binds[1]].fields["dev"]})
	require.Less(t, adds[1], binds[0], "every device is added before any binds")
	for _, b := range binds {
		require.Equal(t, c.fields["size"], setup[b].fields["size"], "each binds the whole object")
	}
	for _, i := range indexes(setup, "cuMemCreate") {
		require.Zero(t, setup[i].fields["size"]%(2<<20))
	}
	require.Len(t, indexes(setup, "cuMemImportFromShareableHandle"), 1, "the second rank imports the first's object")

	for r := range mcs {
		require.NoError(t, mcs[r].Close())
	}
	all := parseCalls(calls())
	require.Len(t, indexes(all, "cuMulticastUnbind"), 2)
	require.Len(t, indexes(all, "cuMemRelease"), 4, "two bound buffers and two holds on the object released")
	require.Len(t, indexes(all, "cuMemUnmap"), 4, "two unicast and two multicast mappings")
}

// The NVLS engine on the fake driver, one rank, every condition met:
// rs2d.New passes the gate and sets the object up (the calls in order),
// Close takes it down; nothing is left.
func TestNVLSEngineSetUpAgainstFakeDriver(t *testing.T) {
	openFakeDevice(t, 0) // skips away from the fake driver
	setEnv(t, gate{named: true, allow: "1", attribute: true}.env())
	calls := multicastLog(t)
	d := openFakeDevice(t, 0)
	rs, err := newOneRank(d, rs2d.Config{Engine: rs2d.EngineNVLS})
	require.NoError(t, err)
	require.Equal(t, rs2d.EngineNVLS, rs.Config().Engine)
	require.Equal(t, 1, d.Live().Multicasts)
	require.NoError(t, rs.Close())
	require.Zero(t, d.Live().Multicasts)
	names := make([]string, 0)
	for _, c := range parseCalls(calls()) {
		if strings.HasPrefix(c.name, "cuMulticast") && (len(names) == 0 || names[len(names)-1] != c.name) {
			names = append(names, c.name) // in order, repeats aside
		}
	}
	require.Equal(t, []string{"cuMulticastGetGranularity", "cuMulticastCreate", "cuMulticastAddDevice", "cuMulticastBindMem", "cuMulticastUnbind"}, names)
}
