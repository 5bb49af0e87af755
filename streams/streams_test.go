package streams_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/streams"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// rig is a simulated GPU with a buffer of words and helpers to gate streams
// on them.
type rig struct {
	t      *testing.T
	ctx    context.Context
	dev    *sim.Device
	buf    device.Ptr
	opener device.Stream // raises gates; never gated itself
}

const rigWords = 256

func newRig(t *testing.T) *rig {
	t.Helper()
	dev := sim.New(sim.NewHost("streams"), 0, sim.Options{WaitTimeout: time.Minute})
	buf, err := dev.Alloc(4 * rigWords)
	require.NoError(t, err)
	opener, err := dev.NewStream(device.Normal)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(func() {
		cancel()
		require.NoError(t, opener.Close())
		require.NoError(t, dev.Free(buf))
		require.NoError(t, dev.Close())
	})
	return &rig{t: t, ctx: ctx, dev: dev, buf: buf, opener: opener}
}

func (r *rig) word(i int) device.Ptr { return r.buf.Add(int64(4 * i)) }

func (r *rig) stream() device.Stream {
	s, err := r.dev.NewStream(device.Normal)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { require.NoError(r.t, s.Close()) })
	return s
}

// gate makes s wait until word i is raised to 1.
func (r *rig) gate(s device.Stream, i int) {
	require.NoError(r.t, r.dev.WaitValue32(s, device.Word{Addr: r.word(i), Label: fmt.Sprintf("gate %d", i)}, device.EQ, 1))
}

// open raises gate i, after a pause in which work that wrongly does not
// wait for the gate would run.
func (r *rig) open(i int) {
	time.Sleep(20 * time.Millisecond)
	require.NoError(r.t, r.dev.WriteValue32(r.opener, r.word(i), 1))
}

func (r *rig) write(s device.Stream, i int, v uint32) {
	require.NoError(r.t, r.dev.WriteValue32(s, r.word(i), v))
}

func (r *rig) copyWord(s device.Stream, dst, src int) {
	require.NoError(r.t, r.dev.Copy(s, r.word(dst), r.word(src), 4))
}

func (r *rig) sync(ss ...device.Stream) {
	for _, s := range ss {
		require.NoError(r.t, s.Synchronize(r.ctx))
	}
}

func (r *rig) read(i int) uint32 {
	var b [4]byte
	require.NoError(r.t, r.dev.CopyToHost(b[:], r.word(i)))
	return binary.LittleEndian.Uint32(b[:])
}

func newSet(t *testing.T, dev device.Device, copies int) *streams.Set {
	t.Helper()
	set, err := streams.NewSet(dev, copies)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, set.Close()) })
	return set
}

func value() uint32 { return rand.Uint32()>>1 | 2 }

func TestNewSetAndClose(t *testing.T) {
	for _, copies := range []int{1, 3} {
		t.Run(fmt.Sprint(copies), func(t *testing.T) {
			r := newRig(t)
			baseline := sim.Live()
			set, err := streams.NewSet(r.dev, copies)
			require.NoError(t, err)
			require.Len(t, set.Copy, copies)
			require.NotNil(t, set.Reduction)
			require.NotNil(t, set.P2P)
			require.Contains(t, fmt.Sprint(set.Reduction), "high", "the reduction stream runs at high priority")
			all := set.All()
			require.Equal(t, append(append([]device.Stream(nil), set.Copy...), set.Reduction, set.P2P), all)
			seen := map[device.Stream]bool{}
			for _, s := range all {
				require.False(t, seen[s], "a stream is listed twice")
				seen[s] = true
			}
			live := sim.Live()
			require.Equal(t, baseline.Streams+int64(copies+2), live.Streams)
			require.Equal(t, baseline.Events+int64(copies+3), live.Events, "one event per stream and one for callers")

			// Use it, so that events are recorded, then close it.
			caller := r.stream()
			require.NoError(t, set.Fork(caller))
			require.NoError(t, set.Merge(caller))
			r.sync(caller)
			require.NoError(t, set.Close())
			require.Equal(t, baseline.Streams+1, sim.Live().Streams, "only the caller's stream is left")
			require.Equal(t, baseline.Events, sim.Live().Events)
			require.Empty(t, set.All())
			require.NoError(t, set.Close(), "a second Close is a no-op")
		})
	}
}

func TestNewSetRejectsNoCopyStreams(t *testing.T) {
	r := newRig(t)
	baseline := sim.Live()
	for _, n := range []int{0, -1} {
		_, err := streams.NewSet(r.dev, n)
		require.ErrorIs(t, err, device.ErrInvalidArgument)
	}
	require.Equal(t, baseline, sim.Live())
}

var errInjected = errors.New("injected failure")

// failingDevice fails its streamsOK+1-th NewStream or eventsOK+1-th NewEvent
// (a negative count never fails).
type failingDevice struct {
	device.Device
	streamsOK, eventsOK int
}

func (d *failingDevice) NewStream(p device.Priority) (device.Stream, error) {
	if d.streamsOK == 0 {
		return nil, errInjected
	}
	d.streamsOK--
	return d.Device.NewStream(p)
}

func (d *failingDevice) NewEvent() (device.Event, error) {
	if d.eventsOK == 0 {
		return nil, errInjected
	}
	d.eventsOK--
	return d.Device.NewEvent()
}

func TestNewSetFailureReleasesEverything(t *testing.T) {
	cases := []struct{ streamsOK, eventsOK int }{
		{0, -1}, {1, -1}, {2, -1}, {3, -1}, // copy, copy, reduction, p2p
		{-1, 0}, {-1, 2}, {-1, 4}, // a stream's event, the callers' event
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("streams%d/events%d", c.streamsOK, c.eventsOK), func(t *testing.T) {
			r := newRig(t)
			baseline := sim.Live()
			_, err := streams.NewSet(&failingDevice{Device: r.dev, streamsOK: c.streamsOK, eventsOK: c.eventsOK}, 2)
			require.ErrorIs(t, err, errInjected)
			require.Equal(t, baseline, sim.Live(), "a failed NewSet left streams or events")
		})
	}
	baseline := sim.Live()
	closed := sim.New(sim.NewHost("closed"), 0, sim.Options{})
	require.NoError(t, closed.Close())
	_, err := streams.NewSet(closed, 1)
	require.ErrorIs(t, err, device.ErrClosed)
	require.Equal(t, baseline, sim.Live())
}

// Fork: every stream of the set sees the caller's earlier work.
func TestForkOrdersTheSetAfterTheCaller(t *testing.T) {
	r := newRig(t)
	set := newSet(t, r.dev, 2)
	caller := r.stream()
	const gate, data = 0, 1
	v := value()
	r.gate(caller, gate)
	r.write(caller, data, v)
	require.NoError(t, set.Fork(caller))
	for i, s := range set.All() {
		r.copyWord(s, 10+i, data)
	}
	r.open(gate)
	r.sync(set.All()...)
	for i := range set.All() {
		require.Equal(t, v, r.read(10+i), "stream %d of the set ran before the caller's write", i)
	}
}

// Merge: the caller's later work sees the work of every stream of the set,
// whichever of them finishes last.
func TestMergeOrdersTheCallerAfterEveryStream(t *testing.T) {
	r := newRig(t)
	set := newSet(t, r.dev, 3)
	all := set.All()
	for last := range all {
		t.Run(fmt.Sprint("last", last), func(t *testing.T) {
			caller := r.stream()
			base := 40 * last // words of this round: gates, data, copies
			want := make([]uint32, len(all))
			for i, s := range all {
				want[i] = value()
				r.gate(s, base+i)
				r.write(s, base+10+i, want[i])
			}
			require.NoError(t, set.Merge(caller))
			for i := range all {
				r.copyWord(caller, base+20+i, base+10+i)
			}
			done, err := r.dev.NewEvent()
			require.NoError(t, err)
			defer func() { require.NoError(t, done.Close()) }()
			require.NoError(t, done.Record(caller))

			// Every stream but the last may run: the caller must still wait.
			for i := range all {
				if i != last {
					require.NoError(t, r.dev.WriteValue32(r.opener, r.word(base+i), 1))
				}
			}
			for i, s := range all {
				if i != last {
					r.sync(s)
				}
			}
			time.Sleep(20 * time.Millisecond) // a caller that does not wait for the last stream finishes by now
			finished, err := done.Done()
			require.NoError(t, err)
			require.False(t, finished, "the caller did not wait for stream %d", last)
			r.open(base + last)
			r.sync(caller, all[last])
			for i := range all {
				require.Equal(t, want[i], r.read(base+20+i), "the caller ran before stream %d's write", i)
			}
		})
	}
}

// Join orders two streams of the set, and two streams of callers.
func TestJoin(t *testing.T) {
	r := newRig(t)
	set := newSet(t, r.dev, 1)
	a, b := r.stream(), r.stream()
	cases := []struct {
		name       string
		waiter, on device.Stream
	}{
		{"set stream on set stream", set.Copy[0], set.Reduction},
		{"set stream on caller", set.P2P, a},
		{"caller on set stream", a, set.Copy[0]},
		{"caller on caller", b, a},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gate, data, out := 10*i, 10*i+1, 10*i+2
			v := value()
			r.gate(c.on, gate)
			r.write(c.on, data, v)
			require.NoError(t, set.Join(c.waiter, c.on))
			r.copyWord(c.waiter, out, data)
			r.open(gate)
			r.sync(c.waiter)
			require.Equal(t, v, r.read(out))
		})
	}
	// Joining a stream to itself is a no-op.
	require.NoError(t, set.Join(a, a))
	r.write(a, 100, 7)
	r.sync(a)
	require.Equal(t, uint32(7), r.read(100))
}

// One event per source stream is reused: a wait binds to the record made for
// it, so a later Join from another caller does not release an earlier one.
func TestJoinReusesEventsSafely(t *testing.T) {
	r := newRig(t)
	set := newSet(t, r.dev, 1)
	first, second := r.stream(), r.stream()
	const gate, data, out = 0, 1, 2
	v := value()
	r.gate(first, gate)
	r.write(first, data, v)
	r.gate(set.Copy[0], 3) // the set stream reaches its wait only after the re-record below
	require.NoError(t, set.Fork(first))
	r.copyWord(set.Copy[0], out, data)
	// Another caller, idle, re-records the callers' event; so does the set's
	// own event for Copy[0], joined into P2P.
	require.NoError(t, set.Fork(second))
	require.NoError(t, set.Join(set.P2P, set.Copy[0]))
	r.sync(second)
	r.open(3)
	r.open(gate)
	r.sync(set.Copy[0])
	require.Equal(t, v, r.read(out), "the set stream's wait bound to the later record")
}

// A failure on a stream of the set reaches the caller through Merge.
func TestMergePropagatesFailure(t *testing.T) {
	r := newRig(t)
	set := newSet(t, r.dev, 2)
	caller := r.stream()
	// An out-of-bounds copy on one stream of the set.
	require.NoError(t, r.dev.Copy(set.Copy[1], r.buf, r.buf.Add(4*rigWords-4), 8))
	require.NoError(t, set.Merge(caller))
	r.write(caller, 5, 1)
	err := caller.Synchronize(r.ctx)
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.Zero(t, r.read(5), "the caller's later work ran after a failure it waited on")
}

// Close waits for the set's queued work, then releases every stream and event.
func TestCloseDrainsAndReleases(t *testing.T) {
	r := newRig(t)
	baseline := sim.Live()
	set, err := streams.NewSet(r.dev, 2)
	require.NoError(t, err)
	caller := r.stream()
	require.NoError(t, set.Fork(caller))
	for i, s := range set.All() {
		r.gate(s, 0)
		r.write(s, 10+i, uint32(i+1))
	}
	require.NoError(t, set.Merge(caller))
	closed := make(chan error, 1)
	go func() { closed <- set.Close() }()
	r.open(0)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-r.ctx.Done():
		t.Fatal("Close did not return")
	}
	for i := 0; i < 4; i++ {
		require.Equal(t, uint32(i+1), r.read(10+i), "stream %d's work was dropped", i)
	}
	r.sync(caller)
	live := sim.Live()
	require.Equal(t, baseline.Streams+1, live.Streams, "only the caller's stream is left")
	require.Equal(t, baseline.Events, live.Events)
}
