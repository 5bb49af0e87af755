package internode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/native/nvshmem"
	"github.com/seed12530e24/hiercoll/symm"
)

// EnvNVSHMEMStage, set to 1, makes the NVSHMEM transport stage every block
// through its symmetric heap before the put, as it does on its own when the
// job spans several hosts (see shmemRail). It lets one host exercise that
// path; every rank of a job should see the same value (any rank asking for
// it turns it on for all).
const EnvNVSHMEMStage = "HIERCOLL_NVSHMEM_STAGE"

// The NVSHMEM variables this package sets when they are unset (NVSHMEM reads
// them once, when it starts).
const (
	envSymmetricSize   = "NVSHMEM_SYMMETRIC_SIZE"
	envRemoteTransport = "NVSHMEM_REMOTE_TRANSPORT"
)

// shmemRail is the rail stage over NVSHMEM: the IPC transport's one-sided
// protocol, with NVSHMEM's symmetric heap in place of mapped peer heaps, so
// that it reaches rail peers on other hosts too. Send is
// nvshmemx_putmem_signal_on_stream: the block goes to this node's block of
// the rail peer's receive buffer, then the peer's signal word for this node
// is set to the epoch. Wait is nvshmemx_signal_wait_until_on_stream(>=
// epoch) on the word of every other node. As with IPC, the two parity sets
// stand in for a readiness handshake: a peer that is one call ahead writes
// into the other set, and it cannot get two calls ahead, because that needs
// this rank's block of the call in between, which this rank sends only after
// its final reduce of this call. Signals are 64-bit: the 32-bit epochs are
// widened (epochClock) so ">=" keeps holding when they wrap.
//
// Across hosts the put's source must be memory NVSHMEM's network transport
// has registered, which the caller's block is not; so when the job spans
// more than one host (or EnvNVSHMEMStage asks for it), Send first copies the
// block into a staging slot of the symmetric heap (one per destination node)
// and puts from there.
//
// NVSHMEM is one per process (one PE per process, PE = world rank): the
// first transport of the process starts it over the whole job with a unique
// id from rank 0, later ones share it, and the last one to close finalises
// it. nvshmem_malloc, nvshmem_free and finalize synchronise every PE, so
// building and closing transports are collective, and every rank must close
// its transports in the same order (rs2d.Context.Close barriers first, then
// closes).
type shmemRail struct {
	ep     Endpoint
	lib    *nvshmem.Lib
	lay    shmemLayout
	base   device.Ptr // the symmetric allocation (lay), at the same offset on every PE
	clock  epochClock
	closed bool
}

// shmemLayout is the transport's one symmetric allocation, the same on every
// PE:
//
//	signals  nnodes uint64 words, by source node: the (widened) epoch of the
//	         last block that arrived from that node
//	recv[0]  nnodes × BlockBytes: block n from node n (even epochs)
//	recv[1]  the same for odd epochs
//	stage    nnodes × BlockBytes by destination node, only when staging
type shmemLayout struct {
	nodes int
	block int64
	recv  [2]int64 // offsets
	stage int64    // offset; 0 when sends are not staged
	size  int64
}

func newShmemLayout(nodes int, block int64, staged bool) shmemLayout {
	l := shmemLayout{nodes: nodes, block: block}
	off := alignUp(int64(nodes)*8, symm.Align)
	set := alignUp(int64(nodes)*block, symm.Align)
	for i := range l.recv {
		l.recv[i] = off
		off += set
	}
	if staged {
		l.stage = off
		off += set
	}
	l.size = off
	return l
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// shmemProc is NVSHMEM's state in this process, shared by its transports.
// Its lock is never held across a collective step.
var shmemProc struct {
	mu      sync.Mutex
	up      bool   // started by this package and not finalised
	users   int    // transports built on it and not closed
	broken  error  // why NVSHMEM cannot be used again in this process
	sizeSet string // the NVSHMEM_SYMMETRIC_SIZE this package last set
}

// shmemBreak records that NVSHMEM is in a state no later transport of this
// process may build on (started on some PEs only, or an allocation that
// cannot be freed collectively); it stays up until the process exits.
func shmemBreak(err error) {
	shmemProc.mu.Lock()
	defer shmemProc.mu.Unlock()
	if shmemProc.broken == nil {
		shmemProc.broken = fmt.Errorf("NVSHMEM is unusable in this process: %w", err)
	}
}

// shmemCollective runs one of NVSHMEM's collective calls (malloc, free,
// finalize), which block until every PE makes it, bounded by ctx. NVSHMEM
// has no abort: a call that does not return (a PE is gone) is left running,
// NVSHMEM is not used again in this process, and the error says so.
func shmemCollective(ctx context.Context, what string, fn func() error) error {
	_, err := bounded(ctx, what, func() (struct{}, error) { return struct{}{}, fn() }, nil)
	if err != nil && ctx.Err() != nil && errors.Is(err, device.ErrTimeout) {
		shmemBreak(err)
		return fmt.Errorf("%w (NVSHMEM has no abort: the call is left running, and NVSHMEM is not used again in this process)", err)
	}
	return err
}

// shmemLeave drops one user of NVSHMEM and finalises it (collective,
// bounded by ctx) when it was the last one.
func shmemLeave(ctx context.Context, lib *nvshmem.Lib) error {
	shmemProc.mu.Lock()
	shmemProc.users--
	last := shmemProc.users == 0 && shmemProc.up && shmemProc.broken == nil
	if last {
		shmemProc.up = false
	}
	shmemProc.mu.Unlock()
	if !last {
		return nil
	}
	if err := shmemCollective(ctx, "nvshmemx_hostlib_finalize", lib.Finalize); err != nil {
		return fmt.Errorf("internode: nvshmem: finalize: %w", err)
	}
	return nil
}

// newNVSHMEM builds the transport on every rank (collective; all ranks
// succeed or all fail), in four steps, each ending in an agreement: the
// ranks say who they are and plan, NVSHMEM starts, the symmetric
// allocation, the signal words zeroed.
func newNVSHMEM(ctx context.Context, ep Endpoint) (*shmemRail, error) {
	lib, plan, err := shmemPlanAll(ctx, ep)
	if err != nil {
		return nil, err
	}
	lay := newShmemLayout(ep.Place.Shape.Nodes, ep.BlockBytes, plan.stage)
	if err := shmemStart(ctx, ep, lib, plan, lay); err != nil {
		return nil, err
	}
	t, err := shmemAllocate(ctx, ep, lib, lay)
	if err != nil {
		return nil, err
	}
	// No peer signals into a word before its owner has cleared what an
	// earlier allocation left there.
	if _, err := bootstrap.Agree(ctx, ep.Comm, t.zeroSignals(ctx), nil); err != nil {
		return nil, errors.Join(fmt.Errorf("internode: nvshmem: %w", err), t.release(true))
	}
	return t, nil
}

// shmemPlanAll is step 1: every rank checks that it can run NVSHMEM and
// says which process it is and whether NVSHMEM already runs there (rank 0
// creates the unique id when it does not); every rank plans from the same
// hellos, so all reach the same plan or the same error.
func shmemPlanAll(ctx context.Context, ep Endpoint) (*nvshmem.Lib, shmemPlan, error) {
	var lib *nvshmem.Lib
	me := shmemHello{host: ep.Dev.Info().HostID, pid: os.Getpid(), stage: os.Getenv(EnvNVSHMEMStage) == "1"}
	err := func() error {
		if ep.BlockBytes <= 0 {
			return fmt.Errorf("BlockBytes %d: %w", ep.BlockBytes, device.ErrInvalidArgument)
		}
		if err := needCUDA(ep.Dev); err != nil {
			return err
		}
		shmemProc.mu.Lock()
		broken, up := shmemProc.broken, shmemProc.up
		shmemProc.mu.Unlock()
		if broken != nil {
			return broken
		}
		l, err := nvshmem.Load()
		if err != nil {
			return err
		}
		lib, me.up = l, up
		if !up && ep.Place.Rank == 0 {
			if me.uid, err = lib.UniqueID(); err != nil {
				return fmt.Errorf("rank 0: creating the NVSHMEM unique id: %w", err)
			}
		}
		return nil
	}()
	blobs, err := bootstrap.Agree(ctx, ep.Comm, err, me.encode())
	if err != nil {
		return nil, shmemPlan{}, fmt.Errorf("internode: nvshmem: %w", err)
	}
	hellos := make([]shmemHello, len(blobs))
	for r, b := range blobs {
		if hellos[r], err = decodeShmemHello(b); err != nil {
			return nil, shmemPlan{}, fmt.Errorf("internode: nvshmem: rank %d: %w", r, err)
		}
	}
	plan, err := planShmem(hellos)
	return lib, plan, err
}

// shmemStart is step 2: NVSHMEM starts over the whole job unless it runs
// already, and the ranks agree that it did everywhere.
func shmemStart(ctx context.Context, ep Endpoint, lib *nvshmem.Lib, plan shmemPlan, lay shmemLayout) error {
	place, world := ep.Place, ep.Place.Shape.World()
	fresh := false
	err := func() error {
		if plan.up {
			if pe, n := lib.MyPE(), lib.NPEs(); pe != place.Rank || n != world {
				return fmt.Errorf("rank %d: NVSHMEM already runs in this process as PE %d of %d, not %d of %d: %w",
					place.Rank, pe, n, place.Rank, world, device.ErrInvalidArgument)
			}
			return nil
		}
		shmemProc.mu.Lock()
		prev := shmemProc.sizeSet
		shmemProc.mu.Unlock()
		size, err := shmemEnv(lay.size, plan.oneHost, prev, os.LookupEnv, os.Setenv)
		if err != nil {
			return err
		}
		if size != "" {
			shmemProc.mu.Lock()
			shmemProc.sizeSet = size
			shmemProc.mu.Unlock()
		}
		ordinal := ep.Dev.Info().Ordinal
		what := fmt.Sprintf("NVSHMEM start-up (PE %d of %d, device %d)", place.Rank, world, ordinal)
		_, err = bounded(ctx, what, func() (struct{}, error) {
			return struct{}{}, lib.Init(place.Rank, world, plan.uid, ordinal)
		}, nil)
		if err != nil {
			// A failed start may leave NVSHMEM half up (or still starting,
			// after a timeout): never touch it again here.
			shmemBreak(err)
			return fmt.Errorf("rank %d: %w", place.Rank, err)
		}
		fresh = true
		shmemProc.mu.Lock()
		shmemProc.up = true
		shmemProc.mu.Unlock()
		return nil
	}()
	if _, err := bootstrap.Agree(ctx, ep.Comm, err, nil); err != nil {
		if fresh {
			// Finalize would wait for the PEs that did not start.
			shmemBreak(fmt.Errorf("it started on rank %d but not on every rank: %w", place.Rank, err))
		}
		return fmt.Errorf("internode: nvshmem: %w", err)
	}
	return nil
}

// shmemAllocate is step 3: the symmetric allocation. nvshmem_malloc is
// collective, and so is freeing what it returned, so the ranks share
// whether each got it.
func shmemAllocate(ctx context.Context, ep Endpoint, lib *nvshmem.Lib, lay shmemLayout) (*shmemRail, error) {
	shmemProc.mu.Lock()
	shmemProc.users++
	shmemProc.mu.Unlock()
	t := &shmemRail{ep: ep, lib: lib, lay: lay}
	var p device.Ptr
	mallocErr := shmemCollective(ctx, fmt.Sprintf("nvshmem_malloc of %d bytes (PE %d)", lay.size, ep.Place.Rank), func() (err error) {
		var np nvshmem.Ptr
		np, err = lib.Malloc(lay.size)
		p = device.Ptr(np)
		return err
	})
	if mallocErr != nil {
		p = 0 // a malloc left running keeps what it returns
	}
	t.base = p
	votes, err := bootstrap.Agree(ctx, ep.Comm, nil, bootstrap.Vote(mallocErr == nil))
	if err != nil {
		shmemBreak(err)
		return nil, errors.Join(fmt.Errorf("internode: nvshmem: %w", err), mallocErr)
	}
	if some := bootstrap.CountYes(votes); some != len(votes) {
		if some > 0 {
			// The PEs that got memory cannot free it without the others.
			shmemBreak(fmt.Errorf("the symmetric allocation succeeded on %d of %d PEs", some, len(votes)))
		}
		if mallocErr == nil {
			mallocErr = fmt.Errorf("the symmetric allocation of %d bytes failed on another rank: %w", lay.size, device.ErrPeer)
		}
		return nil, errors.Join(fmt.Errorf("internode: nvshmem: rank %d: %w", ep.Place.Rank, mallocErr), t.release(false))
	}
	return t, nil
}

func (t *shmemRail) zeroSignals(ctx context.Context) error {
	s, err := t.ep.Dev.NewStream(device.Normal)
	if err != nil {
		return err
	}
	err = t.ep.Dev.Memset32(s, t.base, 0, int64(2*t.lay.nodes))
	if err == nil {
		err = s.Synchronize(ctx)
	}
	if err != nil {
		err = fmt.Errorf("rank %d: zeroing the rail signal words: %w", t.ep.Place.Rank, err)
	}
	return errors.Join(err, s.Close())
}

// release frees the symmetric allocation (when free: collective) and drops
// this transport's use of NVSHMEM.
func (t *shmemRail) release(free bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), t.ep.closeTimeout())
	defer cancel()
	var errs []error
	if free && t.base != 0 {
		base := t.base
		if err := shmemCollective(ctx, fmt.Sprintf("nvshmem_free (PE %d)", t.ep.Place.Rank), func() error { return t.lib.Free(nvshmem.Ptr(base)) }); err != nil {
			errs = append(errs, fmt.Errorf("internode: nvshmem: %w", err))
		}
	}
	t.base = 0
	return errors.Join(append(errs, shmemLeave(ctx, t.lib))...)
}

func (t *shmemRail) Kind() Kind { return NVSHMEM }

// RecvBuf is this PE's own address of the epoch's receive set.
func (t *shmemRail) RecvBuf(epoch uint32) device.Ptr {
	return t.base.Add(t.lay.recv[parity(epoch)])
}

// signal is the address of the signal word for blocks from node n.
func (t *shmemRail) signal(n int) device.Ptr { return t.base.Add(int64(8 * n)) }

// Send puts n bytes at src into this node's block of the receive set of the
// rail peer on node to, and then sets that peer's signal word for this node
// to the epoch, all on s.
func (t *shmemRail) Send(s device.Stream, to int, src device.Ptr, n int64, epoch uint32) error {
	if t.closed {
		return fmt.Errorf("internode: nvshmem: send on a closed transport: %w", device.ErrClosed)
	}
	if err := checkBlock(NVSHMEM, t.ep, to, n); err != nil {
		return err
	}
	place := t.ep.Place
	peer := place.RailPeer(to) // its PE: PEs are world ranks
	dst := t.RecvBuf(epoch).Add(int64(place.Node) * t.ep.BlockBytes)
	if t.lay.stage != 0 {
		staged := t.base.Add(t.lay.stage + int64(to)*t.ep.BlockBytes)
		if n > 0 {
			if err := t.ep.Dev.Copy(s, staged, src, n); err != nil {
				return fmt.Errorf("internode: nvshmem: staging the block for rank %d: %w", peer, err)
			}
		}
		src = staged
	}
	err := t.lib.PutSignalOnStream(nvshmem.Ptr(dst), nvshmem.Ptr(src), n, nvshmem.Ptr(t.signal(place.Node)), t.clock.widen(epoch), nvshmem.SignalSet, peer, s.Handle())
	if err != nil {
		return fmt.Errorf("internode: nvshmem: put to rank %d: %w", peer, err)
	}
	return nil
}

// Wait makes s wait until the signal word of every other node holds at
// least the epoch.
func (t *shmemRail) Wait(s device.Stream, epoch uint32) error {
	if t.closed {
		return fmt.Errorf("internode: nvshmem: wait on a closed transport: %w", device.ErrClosed)
	}
	want := t.clock.widen(epoch)
	for n := 0; n < t.lay.nodes; n++ {
		if n == t.ep.Place.Node {
			continue
		}
		if err := t.lib.SignalWaitUntilOnStream(nvshmem.Ptr(t.signal(n)), nvshmem.CmpGE, want, s.Handle()); err != nil {
			return fmt.Errorf("internode: nvshmem: waiting for the block from rank %d (node %d): %w", t.ep.Place.RailPeer(n), n, err)
		}
	}
	return nil
}

// Close frees the symmetric allocation and, for the last NVSHMEM transport
// of the process, finalises NVSHMEM. Both synchronise every PE: every rank
// closes its transports, in the same order.
func (t *shmemRail) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	return t.release(true)
}

// epochClock widens the 32-bit call epochs to the 64-bit values NVSHMEM's
// signals carry, so that "signal >= epoch" keeps holding across the wrap of
// the 32-bit counter (IPC's 32-bit waits compare cyclically instead). An
// epoch is read relative to the latest one seen, as a signed 32-bit step, so
// every rank, seeing the same epochs, widens them the same way.
type epochClock struct {
	mu      sync.Mutex
	started bool
	last    uint32
	wide    uint64
}

func (c *epochClock) widen(e uint32) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started, c.last, c.wide = true, e, uint64(e)
		return c.wide
	}
	step := int64(int32(e - c.last))
	w := uint64(int64(c.wide) + step)
	if step > 0 {
		c.last, c.wide = e, w
	}
	return w
}

// shmemHello is what each rank tells the others before NVSHMEM starts.
type shmemHello struct {
	host  string // device.Info.HostID
	pid   int
	up    bool   // NVSHMEM already runs in this process
	stage bool   // EnvNVSHMEMStage=1 here
	uid   []byte // rank 0, when NVSHMEM does not run yet
}

func (h shmemHello) encode() []byte {
	var flags byte
	if h.up {
		flags |= 1
	}
	if h.stage {
		flags |= 2
	}
	host := h.host
	if len(host) > 0xffff {
		host = host[:0xffff]
	}
	b := []byte{flags}
	b = binary.LittleEndian.AppendUint64(b, uint64(h.pid))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(host)))
	b = append(b, host...)
	return append(b, h.uid...)
}

func decodeShmemHello(b []byte) (shmemHello, error) {
	var h shmemHello
	if len(b) < 11 {
		return h, fmt.Errorf("a truncated NVSHMEM hello of %d bytes: %w", len(b), device.ErrPeer)
	}
	h.up, h.stage = b[0]&1 != 0, b[0]&2 != 0
	h.pid = int(binary.LittleEndian.Uint64(b[1:]))
	n := int(binary.LittleEndian.Uint16(b[9:]))
	b = b[11:]
	if len(b) < n {
		return h, fmt.Errorf("a truncated NVSHMEM hello (host name of %d bytes, %d left): %w", n, len(b), device.ErrPeer)
	}
	h.host = string(b[:n])
	if rest := b[n:]; len(rest) > 0 {
		h.uid = rest
	}
	return h, nil
}

// shmemPlan is what every rank decides from everyone's hellos.
type shmemPlan struct {
	up      bool   // NVSHMEM runs in every rank's process already
	uid     []byte // rank 0's unique id, when it does not
	oneHost bool   // every rank is on one host
	stage   bool   // stage the sends through the symmetric heap
}

func planShmem(hellos []shmemHello) (shmemPlan, error) {
	if len(hellos) == 0 {
		return shmemPlan{}, fmt.Errorf("internode: nvshmem: no ranks: %w", device.ErrInvalidArgument)
	}
	plan := shmemPlan{up: hellos[0].up, oneHost: true}
	procs := map[string]int{}
	for r, h := range hellos {
		proc := fmt.Sprintf("%d@%s", h.pid, h.host)
		if q, ok := procs[proc]; ok {
			return plan, fmt.Errorf("internode: nvshmem: ranks %d and %d share process %s, and NVSHMEM runs one PE per process: %w",
				q, r, proc, device.ErrNotSupported)
		}
		procs[proc] = r
		if h.up != plan.up {
			running, idle := 0, r
			if h.up {
				running, idle = r, 0
			}
			return plan, fmt.Errorf("internode: nvshmem: NVSHMEM already runs in the process of rank %d but not in that of rank %d: %w",
				running, idle, device.ErrPeer)
		}
		plan.oneHost = plan.oneHost && h.host == hellos[0].host
		plan.stage = plan.stage || h.stage
	}
	plan.stage = plan.stage || !plan.oneHost
	if !plan.up {
		if len(hellos[0].uid) != nvshmem.UniqueIDSize {
			return plan, fmt.Errorf("internode: nvshmem: rank 0 sent a unique id of %d bytes, want %d: %w",
				len(hellos[0].uid), nvshmem.UniqueIDSize, device.ErrPeer)
		}
		plan.uid = hellos[0].uid
	}
	return plan, nil
}

// symmetricHeapFor is the NVSHMEM_SYMMETRIC_SIZE this package sets when the
// variable is unset: the transport's allocation plus a quarter, plus 128 MiB
// for NVSHMEM's own use of the heap (teams, collective scratch), rounded up
// to whole GiB, so never below NVSHMEM's 1 GiB default. NVSHMEM sizes its
// heap once, when it starts: transports built while it runs share it.
func symmetricHeapFor(need int64) int64 {
	const gib = 1 << 30
	return alignUp(need+need/4+128<<20, gib)
}

// shmemEnv sets what NVSHMEM reads when it starts, leaving alone what the
// user set: NVSHMEM_SYMMETRIC_SIZE to symmetricHeapFor(need), in whole GiB,
// when it is unset or still holds prev, the value this package set for an
// earlier start in this process (so a restart sized for a larger transport
// gets a larger heap); and NVSHMEM_REMOTE_TRANSPORT=none when every rank is
// on one host (no network transport to probe). It returns the size it set
// ("" when it left the user's). The loader keeps NVSHMEM_DISABLE_NVLS=1.
func shmemEnv(need int64, oneHost bool, prev string, lookup func(string) (string, bool), set func(k, v string) error) (string, error) {
	size := ""
	if v, ok := lookup(envSymmetricSize); !ok || (prev != "" && v == prev) {
		size = fmt.Sprintf("%dG", symmetricHeapFor(need)>>30)
		if err := set(envSymmetricSize, size); err != nil {
			return "", fmt.Errorf("setting %s=%s: %w", envSymmetricSize, size, err)
		}
	}
	if _, ok := lookup(envRemoteTransport); !ok && oneHost {
		if err := set(envRemoteTransport, "none"); err != nil {
			return "", fmt.Errorf("setting %s=none: %w", envRemoteTransport, err)
		}
	}
	return size, nil
}

// Consumed implements Transport: nothing, as the two receive sets keep a
// sender one call ahead off the blocks being read.
func (t *shmemRail) Consumed(device.Stream, uint32) error { return nil }
