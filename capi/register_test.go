package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/seed12530e24/hiercoll/symm"
)

// hc_rs2d_register: a buffer registered at an offset inside a larger
// allocation (collective) is read in place by calls of the pull engine, bit
// for bit right over several calls, and the symmetric input keeps the
// pattern written there first (nothing was copied into it); smaller calls
// fit; after hc_rs2d_deregister the same buffer is still right (and, these
// blocks being small enough to go in one shot, which reads each rank's own
// buffer in place, still not copied in: the Go tests cover the pulled
// path's copy-in). Refusals: another engine (HC_OVERLAP_WITH_GEMM's copy
// engine: HC_ERR_NOT_SUPPORTED), sizes that are not whole rows
// (HC_ERR_INVALID on every rank), deregistering what is not registered
// (HC_ERR_INVALID).
func TestRegister(t *testing.T) {
	hs := simRanks(t, 1, 4)
	const world, rowsPer, n = 4, 3, 5
	const m = world * rowsPer
	const bytesIn = m * n * 4
	input := func(rank, call, i int) int32 { return int32((rank+1)*1000 - call*77 + i*3) }
	eachRank(t, hs, func(rank int, h int64) error {
		copyCtx, err := createRS2D(h, m, n, 4, overlapWithGEMM, 0) // the copy engine
		if err != nil {
			return err
		}
		defer destroyRS2D(copyCtx)
		seg, err := allocMem(h, 4096)
		if err != nil {
			return err
		}
		buf := seg + 512
		if err := registerInput(copyCtx, buf, bytesIn); codeOf(err) != codeNotSupported {
			return fmt.Errorf("register on the copy engine: %v, want HC_ERR_NOT_SUPPORTED", err)
		}

		ctx, err := createRS2D(h, m, n, 4, pullEngine, 0)
		if err != nil {
			return err
		}
		defer destroyRS2D(ctx)
		if err := registerInput(ctx, buf, bytesIn-2); codeOf(err) != codeInvalid {
			return fmt.Errorf("register of %d bytes: %v, want HC_ERR_INVALID", bytesIn-2, err)
		}
		if err := deregisterInput(ctx, buf); codeOf(err) != codeInvalid {
			return fmt.Errorf("deregister of what is not registered: %v, want HC_ERR_INVALID", err)
		}
		sym, err := symmetricInput(ctx)
		if err != nil {
			return err
		}
		pattern := bytes.Repeat([]byte{0xde, 0xad, byte(rank), 0x01}, bytesIn/4)
		if err := copyToDevice(h, sym, pattern); err != nil {
			return err
		}
		if err := registerInput(ctx, buf, bytesIn); err != nil {
			return err
		}
		c, err := newInt32Calls(h, ctx, world, rowsPer, n, rank, input)
		if err != nil {
			return err
		}
		c.in = buf
		for call := range 5 {
			k := c
			if call == 3 {
				k.rowsPer = rowsPer - 1 // fewer rows: still the registration
			}
			if err := k.check(call, nil); err != nil {
				return err
			}
		}
		got := make([]byte, bytesIn)
		if err := copyToHost(h, got, sym); err != nil {
			return err
		}
		if !bytes.Equal(got, pattern) {
			return fmt.Errorf("rank %d: registered calls wrote the symmetric input", rank)
		}
		if err := deregisterInput(ctx, buf); err != nil {
			return err
		}
		if err := c.check(5, nil); err != nil {
			return fmt.Errorf("deregistered: %w", err)
		}
		if err := copyToHost(h, got, sym); err != nil {
			return err
		}
		if !bytes.Equal(got, pattern) {
			return fmt.Errorf("rank %d: a deregistered input of a call in one shot was copied into the symmetric input", rank)
		}
		// Registered again, left for hc_rs2d_destroy to release.
		return registerInput(ctx, buf, bytesIn)
	})
	if n := symm.MappedPeers(); n != 0 {
		t.Fatalf("%d peer mappings left", n)
	}
}
