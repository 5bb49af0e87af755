package intranode

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode/push"
)

// SMGrid is the thread blocks of a push-reduce: push and reduce blocks.
// Every rank must use the same grid (the arrival counters count push
// blocks).
type SMGrid struct {
	PushBlocks, ReduceBlocks int
}

// PushReduce enqueues one node step on s with the SM engine: a single kernel
// that pushes this rank's rows to its node peers and reduces what they
// pushed into step.ReduceTo. Readiness handshakes happen inside the kernel,
// so nothing else is needed on the stream.
func (st *Stage) PushReduce(s device.Stream, step Step, grid SMGrid) error {
	lws := st.lws()
	rowBytes := st.rowBytes()
	p := push.Params{
		In:           step.Input.Add(int64(step.Node*lws*step.RowsPer) * rowBytes),
		Out:          step.ReduceTo,
		Peers:        st.heap.Local().Add(st.buf.PeerTable.Off),
		ScatterOff:   st.buf.ScatterBuf.Off + int64(step.Node*lws*step.RowsPer)*rowBytes,
		CountersOff:  st.buf.Counters.Off,
		ReadyOff:     st.buf.Ready.Off,
		LWS:          lws,
		Rank:         st.place.LocalRank,
		Count:        int64(step.RowsPer) * int64(st.n),
		Chunks:       max(1, min(step.Chunks, push.MaxChunks)),
		PushBlocks:   grid.PushBlocks,
		ReduceBlocks: grid.ReduceBlocks,
		State:        st.heap.Local().Add(st.buf.State.Off),
	}
	if err := push.Launch(st.dev, s, st.dt, p); err != nil {
		return fmt.Errorf("intranode: push-reduce: %w", err)
	}
	return nil
}
