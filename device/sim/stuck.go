package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/device"
)

// A wait that times out names the word it waited on, which the next rank
// along raises, not necessarily the rank that stalled: on 2 × 2, rank 1
// waits for its rail peer, rank 3, while rank 3 waits for rank 2, which
// never called. So each host keeps the waits on its words that block, and a
// timeout also names the waits that were stuck beside it (blocked when it
// ran out, or timed out within their bound): among them the waits for the
// rank that stalled.

// stuckWait is one blocked wait: which stream waits for which word, since
// when, and when it timed out (zero while it waits).
type stuckWait struct {
	stream   string
	word     device.Word
	since    time.Time
	timedOut time.Time
	timeout  time.Duration
}

// maxBeside bounds the waits a timeout names beside its own.
const maxBeside = 4

// stick records that stream's wait for w blocks.
func (h *Host) stick(stream string, w device.Word, timeout time.Duration) *stuckWait {
	sw := &stuckWait{stream: stream, word: w, since: time.Now(), timeout: timeout}
	h.stuckMu.Lock()
	defer h.stuckMu.Unlock()
	if h.stuck == nil {
		h.stuck = map[*stuckWait]struct{}{}
	}
	h.stuck[sw] = struct{}{}
	return sw
}

// unstick forgets a wait that ended (nil: one that never blocked).
func (h *Host) unstick(sw *stuckWait) {
	if sw == nil {
		return
	}
	h.stuckMu.Lock()
	defer h.stuckMu.Unlock()
	delete(h.stuck, sw)
}

// timedOut records that sw timed out, forgets the waits that timed out
// longer ago than their bound, and returns the other streams' waits stuck
// beside sw (blocked now, or timed out within their bound), oldest first:
// "stream waits for word".
func (h *Host) timedOut(sw *stuckWait) []string {
	now := time.Now()
	h.stuckMu.Lock()
	defer h.stuckMu.Unlock()
	sw.timedOut = now
	var beside []*stuckWait
	for o := range h.stuck {
		switch {
		case !o.timedOut.IsZero() && now.Sub(o.timedOut) > o.timeout:
			delete(h.stuck, o)
		case o == sw || o.stream == sw.stream:
		default:
			beside = append(beside, o)
		}
	}
	slices.SortFunc(beside, func(a, b *stuckWait) int { return a.since.Compare(b.since) })
	var out []string
	seen := map[string]bool{}
	for _, o := range beside {
		s := o.stream + " waits for " + o.word.Label
		if i := strings.Index(o.stream, " ("); i > 0 { // the same kernel's waits are one entry
			s = o.stream[:i] + " waits for " + o.word.Label
		}
		if !seen[s] && len(out) < maxBeside {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
