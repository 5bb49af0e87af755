package sim

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
)

// A capture that forks to a second stream and joins back records work
// instead of running it; each launch runs it again with the values fixed at
// capture, the side lane after the origin's fork point, and the launching
// stream waits for the join.
func TestGraphCaptureForkJoinReplays(t *testing.T) {
	d := newDevice(t, NewHost("graphs"), 0, Options{})
	ctx := testCtx(t)
	s, side := openStream(t, d), openStream(t, d)
	fork, join := newEvent(t, d), newEvent(t, d)
	buf := alloc(t, d, 256)
	require.NoError(t, d.CopyToDevice(buf, make([]byte, 16)))
	word := func(i int) device.Ptr { return buf.Add(int64(4 * i)) }

	require.NoError(t, d.BeginCapture(s))
	capturing, err := s.(*stream).Capturing()
	require.NoError(t, err)
	require.True(t, capturing)
	require.NoError(t, d.WriteValue32(s, word(0), 7))
	require.NoError(t, fork.Record(s))
	require.NoError(t, side.WaitEvent(fork)) // side joins the capture
	require.NoError(t, d.WaitValue32(side, device.Word{Addr: word(0), Label: "origin's write"}, device.EQ, 7))
	require.NoError(t, d.Copy(side, word(1), word(0), 4))
	require.NoError(t, join.Record(side))
	require.NoError(t, s.WaitEvent(join))
	require.NoError(t, d.WriteValue32(s, word(2), 9))
	require.ErrorIs(t, s.Synchronize(ctx), device.ErrInvalidArgument) // no synchronize while captured
	g, err := d.EndCapture(s)
	require.NoError(t, err)
	defer func() { require.NoError(t, g.Close()) }()

	read := func() [3]uint32 {
		b := make([]byte, 12)
		require.NoError(t, d.CopyToHost(b, buf))
		return [3]uint32{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])}
	}
	require.NoError(t, s.Synchronize(ctx))
	require.Equal(t, [3]uint32{0, 0, 0}, read(), "captured work must not run at capture")
	for i := 0; i < 3; i++ {
		require.NoError(t, d.CopyToDevice(buf, make([]byte, 12)))
		require.NoError(t, g.Launch(s))
		require.NoError(t, s.Synchronize(ctx))
		require.Equal(t, [3]uint32{7, 7, 9}, read(), "launch %d", i)
	}
	// After the capture, both streams run their own work again.
	require.NoError(t, d.WriteValue32(side, word(0), 1))
	require.NoError(t, side.Synchronize(ctx))
	require.Equal(t, uint32(1), read()[0])
}

// What CUDA refuses is refused: a side stream never joined back, a captured
// stream waiting for an event recorded outside the capture, a second
// capture on a captured stream.
func TestGraphCaptureMistakes(t *testing.T) {
	d := newDevice(t, NewHost("graph mistakes"), 0, Options{})
	s, side := openStream(t, d), openStream(t, d)
	fork, outside := newEvent(t, d), newEvent(t, d)
	require.NoError(t, outside.Record(side))

	require.NoError(t, d.BeginCapture(s))
	require.ErrorIs(t, d.BeginCapture(s), device.ErrInvalidArgument)
	require.ErrorIs(t, s.WaitEvent(outside), device.ErrInvalidArgument)
	require.NoError(t, fork.Record(s))
	require.NoError(t, side.WaitEvent(fork))
	require.NoError(t, d.Memset32(side, 0, 0, 0))
	_, err := d.EndCapture(s)
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorContains(t, err, "not joined back")
}
