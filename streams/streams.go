// Package streams holds the streams a collective runs on besides the caller's
// and the one way work on them is ordered across streams: Join, an event
// recorded on one stream and waited on by another. Nothing here blocks the
// host; every dependency is on the device.
//
// A collective call forks from the caller's stream (each stream of the Set
// joins it, so the call sees the caller's earlier work), runs its stages on
// the copy, reduction and p2p streams, and joins them all back into the
// caller's stream at the end, so the caller's later work sees the result.
package streams

import (
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
)

// Set is the streams of one collective context.
type Set struct {
	dev device.Device
	// Copy are the copy-engine streams of the scatter (at least one).
	Copy []device.Stream
	// Reduction runs the reduce kernels, at high priority.
	Reduction device.Stream
	// P2P carries the inter-node stage.
	P2P device.Stream

	events  map[device.Stream]device.Event // one per own stream
	foreign device.Event                   // for the caller's streams
}

// NewSet creates copyStreams copy streams and the reduction and p2p streams.
func NewSet(dev device.Device, copyStreams int) (*Set, error) {
	if copyStreams < 1 {
		return nil, fmt.Errorf("streams: %d copy streams: %w", copyStreams, device.ErrInvalidArgument)
	}
	s := &Set{dev: dev, events: map[device.Stream]device.Event{}}
	var err error
	for i := 0; i < copyStreams && err == nil; i++ {
		var c device.Stream
		if c, err = dev.NewStream(device.Normal); err == nil {
			s.Copy = append(s.Copy, c)
		}
	}
	if err == nil {
		s.Reduction, err = dev.NewStream(device.High)
	}
	if err == nil {
		s.P2P, err = dev.NewStream(device.Normal)
	}
	for _, x := range append(s.All(), nil) {
		if err != nil {
			break
		}
		var ev device.Event
		if ev, err = dev.NewEvent(); err == nil {
			if x == nil {
				s.foreign = ev
			} else {
				s.events[x] = ev
			}
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("streams: %w", err), s.Close())
	}
	return s, nil
}

// All lists the set's own streams.
func (s *Set) All() []device.Stream {
	all := append([]device.Stream(nil), s.Copy...)
	for _, x := range []device.Stream{s.Reduction, s.P2P} {
		if x != nil {
			all = append(all, x)
		}
	}
	return all
}

// Join makes later work on waiter wait for all work queued so far on on.
func (s *Set) Join(waiter, on device.Stream) error {
	if waiter == on {
		return nil
	}
	ev, ok := s.events[on]
	if !ok {
		ev = s.foreign
	}
	// Record then wait at once: the wait binds to this record, so reusing
	// one event per source stream is safe.
	if err := ev.Record(on); err != nil {
		return err
	}
	return waiter.WaitEvent(ev)
}

// Fork makes every stream of the set wait for the caller's stream.
func (s *Set) Fork(caller device.Stream) error {
	for _, x := range s.All() {
		if err := s.Join(x, caller); err != nil {
			return err
		}
	}
	return nil
}

// Merge makes the caller's stream wait for every stream of the set.
func (s *Set) Merge(caller device.Stream) error {
	for _, x := range s.All() {
		if err := s.Join(caller, x); err != nil {
			return err
		}
	}
	return nil
}

// Close destroys the streams and events.
func (s *Set) Close() error {
	var errs []error
	for _, ev := range s.events {
		errs = append(errs, ev.Close())
	}
	if s.foreign != nil {
		errs = append(errs, s.foreign.Close())
	}
	s.events, s.foreign = map[device.Stream]device.Event{}, nil
	for _, x := range s.All() {
		errs = append(errs, x.Close())
	}
	s.Copy, s.Reduction, s.P2P = nil, nil, nil
	return errors.Join(errs...)
}
