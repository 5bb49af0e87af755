package symm

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
)

// Multicast is this rank's part of an NVLink multicast object shared by a
// team: the memory it bound (Local, an ordinary device buffer) and the
// object's multicast address here (Addr), through which a load-reduce sums
// every team member's buffer at the same offset.
type Multicast struct {
	obj   device.Multicast
	Local device.Ptr
	Addr  device.Ptr
	Size  int64 // bytes, what was asked rounded up to the granularity
}

// NewMulticast sets up one multicast object of at least size bytes per team:
// the team's first rank creates it and the bootstrap carries its handle to
// the others, every rank adds its device, then, once every device of every
// team is added, binds its memory and maps the object. It is collective over
// comm: every rank calls it, with its own team (teams do not overlap) and
// the same size, after device.AllowMulticast gave it permit. Each step is
// agreed on (bootstrap.Agree), so if any rank fails every rank returns an
// error and nothing stays bound or mapped.
func NewMulticast(ctx context.Context, comm bootstrap.Comm, dev device.Device, permit device.Permit, team team, size int64) (*Multicast, error) {
	m := &Multicast{}
	leader := team.Ranks[0]
	me := comm.Rank()
	var localErr error
	fail := func(err error) error {
		if localErr == nil && err != nil {
			localErr = fmt.Errorf("symm: rank %d: multicast object of the %s team: %w", me, team.Name, err)
		}
		return localErr
	}
	mc, ok := dev.(device.Multicaster)
	if !ok {
		fail(fmt.Errorf("%s has no multicast capability: %w", dev.Name(), device.ErrNotSupported))
	}

	// Create (the leader) and hand the handle out.
	var handle []byte
	if localErr == nil && me == leader {
		fail(func() error {
			g, err := mc.MulticastGranularity(permit, team.Size())
			if err != nil {
				return err
			}
			if m.obj, err = mc.CreateMulticast(permit, team.Size(), (size+g-1)/g*g); err != nil {
				return err
			}
			handle, err = m.obj.Export()
			return err
		}())
	}
	handles, err := m.agree(ctx, comm, localErr, handle)
	if err != nil {
		return nil, err
	}
	// Import, and add every device before any rank binds.
	if me != leader {
		m.obj, err = mc.ImportMulticast(permit, handles[leader])
		fail(err)
	}
	if localErr == nil {
		fail(m.obj.AddDevice())
	}
	if _, err := m.agree(ctx, comm, localErr, nil); err != nil {
		return nil, err
	}
	m.Size = m.obj.Size()
	m.Local, err = m.obj.Bind()
	fail(err)
	if _, err := m.agree(ctx, comm, localErr, nil); err != nil {
		return nil, err
	}
	m.Addr, err = m.obj.Map()
	fail(err)
	if _, err := m.agree(ctx, comm, localErr, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// agree is one collective step of NewMulticast: on any rank's failure every
// rank releases what it holds and returns an error.
func (m *Multicast) agree(ctx context.Context, comm bootstrap.Comm, local error, payload []byte) ([][]byte, error) {
	all, err := bootstrap.Agree(ctx, comm, local, payload)
	if err == nil {
		return all, nil
	}
	closeErr := m.Close()
	if local != nil {
		return nil, errors.Join(local, closeErr)
	}
	var pe *bootstrap.PeerError
	if errors.As(err, &pe) {
		return nil, errors.Join(fmt.Errorf("symm: rank %d could not set up its multicast object: %w", pe.Ranks[0], err), closeErr)
	}
	return nil, errors.Join(fmt.Errorf("symm: rank %d: agreeing on the multicast object: %w", comm.Rank(), err), closeErr)
}

// Close unmaps, unbinds and releases this rank's part. The caller makes
// sure (with a barrier) that no rank of the team still reads through the
// object.
func (m *Multicast) Close() error {
	if m == nil || m.obj == nil {
		return nil
	}
	err := m.obj.Close()
	m.obj, m.Local, m.Addr = nil, 0, 0
	return err
}
