// Package gputest gives the native loaders' GPU tests device memory through
// the CUDA backend (cgo cannot be used in _test.go files, and the loaders
// should not carry test-only driver code): allocate, copy both ways and
// synchronize the legacy default stream their library calls are enqueued on.
// Only tests import it.
package gputest

import (
	"context"
	"errors"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
)

// Mem is device memory on one GPU's primary context.
type Mem struct {
	dev    *cuda.Device
	legacy device.Stream
}

// Open opens GPU ordinal; the error wraps device.ErrNotSupported without one.
func Open(ordinal int) (*Mem, error) {
	d, err := cuda.Open(ordinal, cuda.Options{})
	if err != nil {
		return nil, err
	}
	s, err := d.StreamFromHandle(0)
	if err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return &Mem{dev: d, legacy: s}, nil
}

// Alloc returns n bytes of device memory.
func (m *Mem) Alloc(n int64) (device.Ptr, error) { return m.dev.Alloc(n) }

// Free releases memory from Alloc.
func (m *Mem) Free(p device.Ptr) error { return m.dev.Free(p) }

// ToDevice copies src to dst.
func (m *Mem) ToDevice(dst device.Ptr, src []byte) error { return m.dev.CopyToDevice(dst, src) }

// ToHost copies src to dst.
func (m *Mem) ToHost(dst []byte, src device.Ptr) error { return m.dev.CopyToHost(dst, src) }

// Sync waits (at most a minute) for the work enqueued on the legacy default
// stream, where the tests enqueue their library calls.
func (m *Mem) Sync() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return m.legacy.Synchronize(ctx)
}

// Close releases the device.
func (m *Mem) Close() error { return errors.Join(m.legacy.Close(), m.dev.Close()) }
