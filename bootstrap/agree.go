package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// The first byte of a rank's vote in Agree.
const (
	voteOK          = 0
	voteFailed      = 1
	voteUnsupported = 2 // failed, and its error wraps hcerr.ErrNotSupported
)

// maxVoteReason bounds the text of a failed vote (MaxBlob bounds the whole blob).
const maxVoteReason = 4 << 10

// Agree tells every rank how this rank's part of a collective step went
// (local is nil on success) and returns every rank's payload, by rank, when
// every rank succeeded. Otherwise every rank gets an error: a failed rank its
// own, a rank that succeeded a *PeerError naming each rank that failed and
// why. So no rank goes on to a step its peers will not join. It is itself
// collective: every rank of comm calls it.
func Agree(ctx context.Context, comm Comm, local error, payload []byte) ([][]byte, error) {
	blob := []byte{voteOK}
	switch {
	case local != nil && errors.Is(local, hcerr.ErrNotSupported):
		blob[0] = voteUnsupported
	case local != nil:
		blob[0] = voteFailed
	}
	if local != nil {
		reason := local.Error()
		if len(reason) > maxVoteReason {
			reason = reason[:maxVoteReason] + "..."
		}
		blob = append(blob, reason...)
	} else {
		blob = append(blob, payload...)
	}
	all, err := comm.AllGather(ctx, blob)
	if err != nil {
		return nil, errors.Join(local, fmt.Errorf("rank %d: agreeing with the other ranks: %w", comm.Rank(), err))
	}
	if local != nil {
		return nil, local
	}
	payloads := make([][]byte, len(all))
	var failed PeerError
	for r, b := range all {
		switch {
		case len(b) == 0:
			failed.add(r, "sent an empty vote", false)
		case b[0] != voteOK:
			failed.add(r, string(b[1:]), b[0] == voteUnsupported)
		default:
			payloads[r] = b[1:]
		}
	}
	if len(failed.Ranks) > 0 {
		return nil, &failed
	}
	return payloads, nil
}

// PeerError is other ranks' failures, as Agree reports them to a rank that
// succeeded: each failed rank and its reason.
type PeerError struct {
	Ranks   []int
	Reasons []string
	// unsupported: every failed rank's error wrapped ErrNotSupported.
	unsupported bool
}

func (e *PeerError) add(rank int, reason string, unsupported bool) {
	e.unsupported = unsupported && (len(e.Ranks) == 0 || e.unsupported)
	e.Ranks = append(e.Ranks, rank)
	e.Reasons = append(e.Reasons, reason)
}

func (e *PeerError) Error() string {
	parts := make([]string, len(e.Ranks))
	for i, r := range e.Ranks {
		parts[i] = fmt.Sprintf("rank %d failed: %s", r, e.Reasons[i])
	}
	return strings.Join(parts, "; ")
}

// Is matches hcerr.ErrPeer, and hcerr.ErrNotSupported when every failed
// rank's own error did.
func (e *PeerError) Is(target error) bool {
	return target == hcerr.ErrPeer || (e.unsupported && target == hcerr.ErrNotSupported)
}

// Vote is a yes-or-no payload for Agree (a rank's answer to a question
// every rank must settle alike).
func Vote(yes bool) []byte {
	if yes {
		return []byte{1}
	}
	return []byte{0}
}

// Yes reports whether payload is a yes Vote.
func Yes(payload []byte) bool { return len(payload) == 1 && payload[0] == 1 }

// CountYes is how many of payloads are yes Votes.
func CountYes(payloads [][]byte) int {
	n := 0
	for _, p := range payloads {
		if Yes(p) {
			n++
		}
	}
	return n
}
