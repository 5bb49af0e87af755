package device

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NVLink multicast (NVLS): one object that the GPUs of a node bind their
// own memory to. A load-reduce on the object's address (PTX
// multimem.ld_reduce) returns the sum of every bound buffer at that offset,
// computed in the NVSwitch.
//
// Safety. Creating a multicast object on the project's lent GPU machines can
// take the host's GPUs out of service for days. So the capability is
// optional (Multicaster, found by type assertion, never part of Device), and
// every one of its calls takes a Permit that only AllowMulticast hands out,
// after the gate (multicastGate) has passed; backends check the permit again
// (Permit.Check) before any multicast driver call.

// AllowMulticastEnv is the environment variable a user sets to 1 to let
// hiercoll create NVLink multicast objects on GPUs.
const AllowMulticastEnv = "HIERCOLL_ALLOW_MULTICAST"

// multicastOff are the variables other libraries read to keep NVLink
// multicast off. While any of them disables it, hiercoll refuses too.
var multicastOff = []struct {
	name     string
	disables func(value string) bool
}{
	{"NCCL_NVLS_ENABLE", func(v string) bool { n, err := strconv.Atoi(strings.TrimSpace(v)); return err != nil || n == 0 }},
	{"NVSHMEM_DISABLE_NVLS", isTrueish},
	{"TORCH_SYMM_MEM_DISABLE_MULTICAST", isTrueish},
}

// isTrueish reads a "disable" switch the cautious way: anything but an
// explicit false value disables.
func isTrueish(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "no", "off":
		return false
	}
	return true
}

// Multicaster is the optional capability of a Device to create NVLink
// multicast objects. Obtain a Permit with AllowMulticast first: each call
// refuses without one.
//
// Setting one up for a team of n devices (symm.NewMulticast does this): one
// rank creates it (CreateMulticast, size a multiple of the granularity) and
// passes Export's handle to the others (ImportMulticast); every rank adds
// its device (AddDevice); once every device of the team is added, every rank
// binds its memory (Bind) and maps the object (Map).
type Multicaster interface {
	// MulticastGranularity is what a multicast object's size for devices
	// devices must be a multiple of (the minimum granularity).
	MulticastGranularity(p Permit, devices int) (int64, error)
	// CreateMulticast creates a multicast object of size bytes for a team
	// of devices devices.
	CreateMulticast(p Permit, devices int, size int64) (Multicast, error)
	// ImportMulticast opens, on this device, the object whose Export
	// handle another rank of the team passed.
	ImportMulticast(p Permit, handle []byte) (Multicast, error)
}

// Multicast is one rank's hold on a multicast object.
type Multicast interface {
	// Size is the object's size in bytes: what each device binds.
	Size() int64
	// Export returns the handle other ranks on this host pass to
	// ImportMulticast.
	Export() ([]byte, error)
	// AddDevice adds this rank's device to the object. Every device of the
	// team must be added before any rank binds.
	AddDevice() error
	// Bind allocates Size bytes on this device, binds them to the whole
	// object and returns their ordinary (unicast) address, which copies and
	// kernels of this device use like any device memory.
	Bind() (Ptr, error)
	// Map maps the object on this device and returns its multicast
	// address: only multimem operations (MulticastMemory in the CPU
	// backend) may access it.
	Map() (Ptr, error)
	// Close unmaps, unbinds and frees what this rank holds. The caller
	// makes sure (with a barrier) that no rank still reads through the
	// object.
	Close() error
}

// MulticastMemory is what a host kernel (a Go twin run by the CPU backend)
// uses in place of multimem.ld_reduce: the CPU backend's HostMemory
// implements it.
type MulticastMemory interface {
	// Multimem returns, for the multicast address p, the n bytes at p's
	// offset in every bound buffer, in the order of the devices' ordinals
	// (a world's rank order).
	// It fails where the hardware would fault: p not inside a mapping of a
	// multicast object, [p, p+n) running past it, p not a multiple of
	// align, or a device of the team not (or no longer) bound.
	Multimem(p Ptr, n, align int64) ([][]byte, error)
}

// Permit is the gate's leave to use a device's Multicaster. The zero Permit
// allows nothing; AllowMulticast is the only way to get another.
type Permit struct {
	by string // who asked for multicast by name
}

// AllowMulticast is the gate every use of NVLink multicast goes through. It
// returns a Permit for d when all of these hold:
//   - by names who asked for multicast by name (an engine the user named;
//     nothing chosen automatically asks);
//   - HIERCOLL_ALLOW_MULTICAST=1;
//   - none of NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1,
//     TORCH_SYMM_MEM_DISABLE_MULTICAST=1 is set;
//   - the device reports multicast support (MULTICAST_SUPPORTED=1);
//   - the backend has a Multicaster.
//
// The CPU backend's multicast objects are host memory, not hardware: for it
// only the first and last conditions apply. Otherwise the error wraps
// ErrNotSupported and names every condition that refused.
func AllowMulticast(d Device, by string) (Permit, error) {
	if err := multicastGate(by, d.Info(), os.LookupEnv); err != nil {
		return Permit{}, fmt.Errorf("device: %s: NVLink multicast refused: %w", d.Name(), err)
	}
	if _, ok := d.(Multicaster); !ok {
		return Permit{}, fmt.Errorf("device: %s: NVLink multicast refused: it cannot create multicast objects (%T is no device.Multicaster): %w",
			d.Name(), d, ErrNotSupported)
	}
	return Permit{by: by}, nil
}

// Check is what a backend calls before any multicast driver call on d: p
// must have come from AllowMulticast, and the gate must still pass for d
// (the environment may have changed since, and d is the device the backend
// is about to use).
func (p Permit) Check(d Device) error {
	if p.by == "" {
		return fmt.Errorf("device: %s: NVLink multicast refused: no permit from AllowMulticast: %w", d.Name(), ErrNotSupported)
	}
	if err := multicastGate(p.by, d.Info(), os.LookupEnv); err != nil {
		return fmt.Errorf("device: %s: NVLink multicast refused: %w", d.Name(), err)
	}
	return nil
}

// multicastGate returns nil when multicast may be used on a device described
// by info for the caller named by, else an error wrapping ErrNotSupported
// that names every refusing condition.
func multicastGate(by string, info Info, lookup func(string) (string, bool)) error {
	var refusals []string
	if strings.TrimSpace(by) == "" {
		refusals = append(refusals, "nobody asked for it by name (only a named engine may use multicast, and Auto never does)")
	}
	if info.Backend != "sim" {
		if v, ok := lookup(AllowMulticastEnv); !ok || strings.TrimSpace(v) != "1" {
			refusals = append(refusals, AllowMulticastEnv+"=1 is not set")
		}
		for _, off := range multicastOff {
			if v, ok := lookup(off.name); ok && off.disables(v) {
				refusals = append(refusals, fmt.Sprintf("%s=%s is set", off.name, v))
			}
		}
		if !info.Multicast {
			refusals = append(refusals, "the device does not report MULTICAST_SUPPORTED=1")
		}
	}
	if len(refusals) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(refusals, "; "), ErrNotSupported)
	}
	return nil
}
