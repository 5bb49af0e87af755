package internode

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/native/nccl"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// TestMain fails the run when a test left simulated resources alive.
func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func simWorld(t *testing.T, shape bootstrap.Shape, hostPerNode bool) *world.World {
	t.Helper()
	w, err := world.Sim(shape, world.SimOptions{HostPerNode: hostPerNode, Device: sim.Options{WaitTimeout: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close()) })
	return w
}

// The send schedule is rs2d's: at node step n every node sends to
// (node+n+1) % nodes. RailSource must name, for each send, the node whose
// send of the same step arrives here, and over the nodes-1 steps every node
// must hear from every other node exactly once.
func TestRailSourceMatchesSchedule(t *testing.T) {
	for nodes := 1; nodes <= 6; nodes++ {
		for node := 0; node < nodes; node++ {
			heard := map[int]int{}
			for n := 0; n < nodes-1; n++ {
				to := (node + n + 1) % nodes
				from := RailSource(node, to, nodes)
				require.Equal(t, node, (from+n+1)%nodes, "nodes %d: node %d step %d: node %d does not send here", nodes, node, n, from)
				// And node to, at the same step, receives from this node.
				require.Equal(t, node, RailSource(to, (to+n+1)%nodes, nodes), "nodes %d: step %d: %d→%d unmatched", nodes, n, node, to)
				heard[from]++
			}
			require.Len(t, heard, nodes-1, "nodes %d, node %d", nodes, node)
			for from, k := range heard {
				require.NotEqual(t, node, from)
				require.Equal(t, 1, k, "nodes %d: node %d hears from %d %d times", nodes, node, from, k)
			}
		}
		require.Equal(t, 0, RailSource(0, 0, nodes))
	}
}

func placeOf(shape bootstrap.Shape, rank int) symm.Place {
	return symm.Place{Shape: shape, Rank: rank, Node: rank / shape.LocalSize, LocalRank: rank % shape.LocalSize}
}

// Every rank contributes to the id all-gather; only node 0's ranks bring
// ids (one per lane), and each rank takes its rail root's, lane by lane.
func TestRailRootIDsPerRail(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 3, LocalSize: 4}
	const lanes = 3
	ids := make([][]byte, shape.World())
	for r := 0; r < shape.LocalSize; r++ {
		for lane := 0; lane < lanes; lane++ {
			ids[r] = append(ids[r], bytes.Repeat([]byte{byte(16*r + lane + 1)}, nccl.UniqueIDSize)...)
		}
	}
	for r := range ids {
		got, err := railRootIDs(ids, placeOf(shape, r), lanes)
		require.NoError(t, err)
		require.Len(t, got, lanes)
		for lane, id := range got {
			root := r % shape.LocalSize
			require.Equal(t, ids[root][lane*nccl.UniqueIDSize:(lane+1)*nccl.UniqueIDSize], id[:], "rank %d lane %d", r, lane)
		}
	}
	_, err := railRootIDs(ids, placeOf(shape, 6), lanes+1) // fewer ids than lanes
	require.ErrorIs(t, err, device.ErrPeer)
	ids[2] = ids[2][:10]
	_, err = railRootIDs(ids, placeOf(shape, 6), lanes) // rail 2
	require.ErrorIs(t, err, device.ErrPeer)
	require.ErrorContains(t, err, "rank 2")
	_, err = railRootIDs(ids, placeOf(shape, 5), lanes) // rail 1 is unaffected
	require.NoError(t, err)
}

func TestCheckNCCLEndpoint(t *testing.T) {
	require.ErrorIs(t, checkNCCLEndpoint(Endpoint{BlockBytes: 1024}), device.ErrInvalidArgument)
	require.ErrorIs(t, checkNCCLEndpoint(Endpoint{BlockBytes: 1022, DType: dtype.F32}), device.ErrInvalidArgument)
	require.ErrorIs(t, checkNCCLEndpoint(Endpoint{BlockBytes: 0, DType: dtype.BF16}), device.ErrInvalidArgument)
	require.NoError(t, checkNCCLEndpoint(Endpoint{BlockBytes: 1022, DType: dtype.BF16}))
	require.ErrorIs(t, checkNCCLEndpoint(Endpoint{BlockBytes: 1024, DType: dtype.BF16, Lanes: -1}), device.ErrInvalidArgument)
	require.ErrorIs(t, checkNCCLEndpoint(Endpoint{BlockBytes: 1024, DType: dtype.BF16, Lanes: MaxNCCLLanes + 1}), device.ErrInvalidArgument)
	require.NoError(t, checkNCCLEndpoint(Endpoint{BlockBytes: 1024, DType: dtype.BF16, Lanes: MaxNCCLLanes}))
}

// fakeTransport is a candidate for pick's tests.
type fakeTransport struct {
	kind   Kind
	closed *atomic.Int32
}

func (f *fakeTransport) Kind() Kind                                               { return f.kind }
func (f *fakeTransport) RecvBuf(uint32) device.Ptr                                { return 0 }
func (f *fakeTransport) Send(device.Stream, int, device.Ptr, int64, uint32) error { return nil }
func (f *fakeTransport) Wait(device.Stream, uint32) error                         { return nil }
func (f *fakeTransport) Consumed(device.Stream, uint32) error                     { return nil }
func (f *fakeTransport) Close() error                                             { f.closed.Add(1); return nil }

// fakeCandidate builds a fake transport except on the ranks in failOn, where
// it fails with err.
func fakeCandidate(k Kind, rank int, closed *atomic.Int32, err error, failOn ...int) candidate {
	return candidate{k, func(context.Context) (Transport, error) {
		for _, r := range failOn {
			if r == rank {
				return nil, err
			}
		}
		return &fakeTransport{kind: k, closed: closed}, nil
	}}
}

// runComms runs fn on every rank of an in-process world of bare comms.
func runComms(t *testing.T, shape bootstrap.Shape, fn func(ctx context.Context, c bootstrap.Comm) error) []error {
	t.Helper()
	comms, err := bootstrap.Local(shape)
	require.NoError(t, err)
	ctx := testCtx(t, 20*time.Second)
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = fn(ctx, c)
		}()
	}
	wg.Wait()
	for _, c := range comms {
		require.NoError(t, c.Close())
	}
	return errs
}

// A candidate that fails on one rank is dropped on all of them (and closed
// where it was built); the next one is taken everywhere.
func TestPickAgreesOnTheFallback(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	var closedIPC, closedNCCL atomic.Int32
	errNoLib := fmt.Errorf("libfoo missing: %w", device.ErrNotSupported)
	errs := runComms(t, shape, func(ctx context.Context, c bootstrap.Comm) error {
		tr, err := pick(ctx, c, []candidate{
			fakeCandidate(IPC, c.Rank(), &closedIPC, errNoLib, 2),
			fakeCandidate(NCCL, c.Rank(), &closedNCCL, nil),
		})
		if err != nil {
			return err
		}
		if tr.Kind() != NCCL {
			return fmt.Errorf("rank %d got %v", c.Rank(), tr.Kind())
		}
		return nil
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	require.EqualValues(t, 3, closedIPC.Load(), "IPC is closed on the three ranks that built it")
	require.EqualValues(t, 0, closedNCCL.Load())
}

// When nothing runs, every rank gets an error naming each candidate, wrapping
// device.ErrNotSupported.
func TestPickNothingRuns(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 3, LocalSize: 1}
	var closed atomic.Int32
	errNoLib := fmt.Errorf("libfoo missing: %w", device.ErrNotSupported)
	errBroken := errors.New("device on fire")
	errs := runComms(t, shape, func(ctx context.Context, c bootstrap.Comm) error {
		_, err := pick(ctx, c, []candidate{
			fakeCandidate(IPC, c.Rank(), &closed, errNoLib, 0, 1, 2),
			fakeCandidate(NVSHMEM, c.Rank(), &closed, errBroken, 1),
			fakeCandidate(NCCL, c.Rank(), &closed, errNoLib, 0),
		})
		return err
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		require.ErrorIs(t, err, device.ErrNotSupported, "rank %d", r)
		for _, s := range []string{"ipc: ", "nvshmem: ", "nccl: ", "libfoo missing"} {
			require.ErrorContains(t, err, s, "rank %d", r)
		}
		if r != 1 {
			require.ErrorContains(t, err, "rank 1 failed: device on fire", "rank %d", r)
		} else {
			require.ErrorIs(t, err, errBroken)
		}
	}
	require.EqualValues(t, 2+2, closed.Load(), "NVSHMEM closed on ranks 0 and 2, NCCL on ranks 1 and 2")
}

// An explicit kind's failure reaches every rank: the failing rank's own
// error, the others' naming it (ErrPeer, and ErrNotSupported only when the
// cause was).
func TestPickOneCandidate(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 1}
	var closed atomic.Int32
	errBroken := errors.New("device on fire")
	errs := runComms(t, shape, func(ctx context.Context, c bootstrap.Comm) error {
		_, err := pick(ctx, c, []candidate{fakeCandidate(NCCL, c.Rank(), &closed, errBroken, 1)})
		return err
	})
	require.ErrorIs(t, errs[1], errBroken)
	require.ErrorIs(t, errs[0], device.ErrPeer)
	require.NotErrorIs(t, errs[0], device.ErrNotSupported)
	require.ErrorContains(t, errs[0], "internode: nccl: rank 1 failed: device on fire")
	require.EqualValues(t, 1, closed.Load())
}

func TestBoundedTimesOutAndHandsOverLateResults(t *testing.T) {
	release := make(chan struct{})
	late := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := bounded(ctx, "slow join", func() (int, error) {
		<-release
		return 42, nil
	}, func(v int, err error) { late <- v })
	require.ErrorIs(t, err, device.ErrTimeout)
	require.ErrorContains(t, err, "slow join")
	close(release)
	require.Equal(t, 42, <-late)

	v, err := bounded(context.Background(), "quick", func() (int, error) { return 7, nil }, nil)
	require.NoError(t, err)
	require.Equal(t, 7, v)
}

// On the CPU backend NCCL and NVSHMEM cannot run: every rank gets an error
// wrapping device.ErrNotSupported, promptly.
func TestNetworkTransportsRefuseTheCPUBackend(t *testing.T) {
	for _, k := range []Kind{NCCL, NVSHMEM} {
		t.Run(k.String(), func(t *testing.T) {
			shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
			w := simWorld(t, shape, true)
			start := time.Now()
			errs := make([]error, shape.World())
			err := w.Run(testCtx(t, 20*time.Second), func(ctx context.Context, r world.Rank) error {
				place, err := symm.PlaceOf(r.Comm)
				if err != nil {
					return err
				}
				tr, err := New(ctx, k, Endpoint{Dev: r.Dev, Comm: r.Comm, Place: place, BlockBytes: 4096, DType: dtype.BF16})
				if err == nil {
					_ = tr.Close()
				}
				errs[r.Comm.Rank()] = err
				return nil
			})
			require.NoError(t, err)
			for r, err := range errs {
				require.ErrorIs(t, err, device.ErrNotSupported, "rank %d", r)
				require.ErrorContains(t, err, "CUDA backend", "rank %d", r)
			}
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// Auto on separate simulated hosts: IPC cannot map the rail peers and the
// network transports cannot run here, so every rank gets the three reasons.
func TestAutoWithoutAnyTransport(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	w := simWorld(t, shape, true)
	errs := make([]error, shape.World())
	require.NoError(t, w.Run(testCtx(t, 20*time.Second), func(ctx context.Context, r world.Rank) error {
		_, errs[r.Comm.Rank()] = exchange(ctx, r, Auto, 1, 1024)
		return nil
	}))
	for r, err := range errs {
		require.ErrorIs(t, err, device.ErrNotSupported, "rank %d", r)
		for _, s := range []string{"ipc: ", "nvshmem: ", "nccl: ", "not all on its host", "CUDA backend"} {
			require.ErrorContains(t, err, s, "rank %d", r)
		}
	}
}

// The rail exchange, as rs2d drives it, over IPC on the CPU backend (and
// Auto, which picks IPC for emulated nodes on one host).
func TestRailExchangeOnSim(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 2, LocalSize: 1}, {Nodes: 2, LocalSize: 2}, {Nodes: 3, LocalSize: 2}, {Nodes: 4, LocalSize: 1}, {Nodes: 5, LocalSize: 1}} {
		for _, k := range []Kind{IPC, Auto} {
			t.Run(fmt.Sprintf("%v/%v", k, shape), func(t *testing.T) {
				w := simWorld(t, shape, false)
				require.NoError(t, w.Run(testCtx(t, 60*time.Second), func(ctx context.Context, r world.Rank) error {
					got, err := exchange(ctx, r, k, 5, 1000)
					if err == nil && got != IPC {
						err = fmt.Errorf("got transport %v, want ipc", got)
					}
					return err
				}))
			})
		}
	}
}

// exchangeBlockWord is word i of the block that rank from sends to node to
// in call epoch.
func exchangeBlockWord(epoch uint32, from, to, i int) uint32 {
	return epoch*0x9e3779b1 ^ uint32(from)*0x85ebca77 ^ uint32(to)*0xc2b2ae3d ^ uint32(i)
}

// exchangeBytes is the size of the blocks of call c: at most block, and
// varying from call to call.
func exchangeBytes(c int, block int64) int64 { return block - 4*int64(c%3) }

// exchange runs calls calls of the rail stage on one rank the way rs2d
// drives a transport: each call's sends in node-step order, then Wait, then
// a copy of the receive set, all on one stream with no host wait between
// calls (so ranks drift apart as far as the protocol lets them). It then
// checks every block that arrived and closes the transport after a barrier.
// block must be a multiple of 4.
func exchange(ctx context.Context, r world.Rank, k Kind, calls int, block int64) (kind Kind, err error) {
	place, err := symm.PlaceOf(r.Comm)
	if err != nil {
		return 0, err
	}
	ep := Endpoint{Dev: r.Dev, Comm: r.Comm, Place: place, BlockBytes: block, DType: dtype.F32}
	tr, err := New(ctx, k, ep)
	if err != nil {
		return 0, err
	}
	defer func() {
		err = errors.Join(err, r.Comm.Barrier(ctx), tr.Close())
	}()
	nodes := place.Shape.Nodes
	set := int64(nodes) * block
	total := int64(calls) * set

	host := make([]byte, total)
	for c := 0; c < calls; c++ {
		for to := 0; to < nodes; to++ {
			b := host[int64(c)*set+int64(to)*block:][:block]
			for i := 0; i < len(b)/4; i++ {
				binary.LittleEndian.PutUint32(b[4*i:], exchangeBlockWord(uint32(c+1), place.Rank, to, i))
			}
		}
	}
	src, err := r.Dev.Alloc(total)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, r.Dev.Free(src)) }()
	out, err := r.Dev.Alloc(total)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, r.Dev.Free(out)) }()
	if err := r.Dev.CopyToDevice(src, host); err != nil {
		return 0, err
	}
	s, err := r.Dev.NewStream(device.Normal)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	for c := 0; c < calls; c++ {
		epoch := uint32(c + 1)
		n := exchangeBytes(c, block)
		for step := 0; step < nodes; step++ {
			to := (place.Node + step + 1) % nodes
			if to == place.Node {
				continue
			}
			if err := tr.Send(s, to, src.Add(int64(c)*set+int64(to)*block), n, epoch); err != nil {
				return 0, fmt.Errorf("call %d: %w", epoch, err)
			}
		}
		if err := tr.Wait(s, epoch); err != nil {
			return 0, fmt.Errorf("call %d: %w", epoch, err)
		}
		if err := r.Dev.Copy(s, out.Add(int64(c)*set), tr.RecvBuf(epoch), set); err != nil {
			return 0, err
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		return 0, err
	}
	if err := r.Dev.CopyToHost(host, out); err != nil {
		return 0, err
	}
	for c := 0; c < calls; c++ {
		n := exchangeBytes(c, block)
		for m := 0; m < nodes; m++ {
			if m == place.Node {
				continue
			}
			b := host[int64(c)*set+int64(m)*block:][:n]
			for i := 0; i < len(b)/4; i++ {
				want := exchangeBlockWord(uint32(c+1), place.RailPeer(m), place.Node, i)
				if got := binary.LittleEndian.Uint32(b[4*i:]); got != want {
					return 0, fmt.Errorf("rank %d, call %d: block from node %d, word %d: got %#x, want %#x",
						place.Rank, c+1, m, i, got, want)
				}
			}
		}
	}
	return tr.Kind(), nil
}
