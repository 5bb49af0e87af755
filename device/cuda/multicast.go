package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/internal/fdpass"
)

// NVLink multicast objects (device.Multicaster) over the driver's virtual
// memory management:
//
//	MulticastGranularity  cuMulticastGetGranularity and cuMemGetAllocationGranularity (MINIMUM; the larger)
//	CreateMulticast       cuMulticastCreate (POSIX-fd handle type)
//	Export / Import       cuMemExportToShareableHandle / cuMemImportFromShareableHandle (POSIX fd), the fd
//	                      passed over a Unix socket to the node's other processes (internal/fdpass)
//	AddDevice             cuMulticastAddDevice
//	Bind                  cuMemCreate, cuMulticastBindMem (the whole object), then cuMemAddressReserve,
//	                      cuMemMap and cuMemSetAccess for the buffer's own (unicast) address
//	Map                   cuMemAddressReserve, cuMemMap and cuMemSetAccess of the multicast handle
//	Close                 the reverse: cuMemUnmap, cuMemAddressFree, cuMulticastUnbind, cuMemRelease
//
// Every one of these first checks its device.Permit (Permit.Check runs the
// gate again): no multicast driver call is made without it.

var _ device.Multicaster = (*Device)(nil)

// nominalMulticastSize is the size the granularity query describes (the
// granularity does not depend on it).
const nominalMulticastSize = 2 << 20

// fdTimeout bounds the handing of an exported handle to the other ranks.
const fdTimeout = 2 * time.Minute

// MulticastGranularity implements device.Multicaster: what both the
// multicast object and the memory bound to it must be multiples of.
func (d *Device) MulticastGranularity(p device.Permit, devices int) (int64, error) {
	if err := d.allowMulticast(p); err != nil {
		return 0, err
	}
	if devices < 1 {
		return 0, fmt.Errorf("cuda: %s: multicast granularity for %d devices: %w", d.name, devices, device.ErrInvalidArgument)
	}
	mg, r := d.drv.multicastGranularity(d.ctx, devices, nominalMulticastSize)
	if err := d.check(r, "cuMulticastGetGranularity(%d devices, MINIMUM)", devices); err != nil {
		return 0, err
	}
	ag, r := d.drv.memGetAllocationGranularity(d.ctx, d.dev)
	if err := d.check(r, "cuMemGetAllocationGranularity(device %d, MINIMUM)", d.dev); err != nil {
		return 0, err
	}
	if mg <= 0 || ag <= 0 {
		return 0, fmt.Errorf("cuda: %s: granularities %d (multicast) and %d (allocation): %w", d.name, mg, ag, device.ErrNotSupported)
	}
	return lcm(mg, ag), nil
}

func lcm(a, b int64) int64 {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// CreateMulticast implements device.Multicaster with cuMulticastCreate.
func (d *Device) CreateMulticast(p device.Permit, devices int, size int64) (device.Multicast, error) {
	g, err := d.MulticastGranularity(p, devices) // checks p
	if err != nil {
		return nil, err
	}
	if size <= 0 || size%g != 0 {
		return nil, fmt.Errorf("cuda: %s: multicast object of %d bytes: not a positive multiple of the granularity %d: %w",
			d.name, size, g, device.ErrInvalidArgument)
	}
	h, r := d.drv.multicastCreate(d.ctx, devices, size)
	if err := d.check(r, "cuMulticastCreate(%d devices, %d bytes)", devices, size); err != nil {
		return nil, err
	}
	d.multicasts.Add(1)
	return &multicast{dev: d, handle: h, size: size, devices: devices, gran: g}, nil
}

// ImportMulticast implements device.Multicaster: it takes the object's
// POSIX fd from the exporting process and imports it.
func (d *Device) ImportMulticast(p device.Permit, handle []byte) (device.Multicast, error) {
	if err := d.allowMulticast(p); err != nil {
		return nil, err
	}
	x, err := decodeExport(handle)
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: multicast handle: %w", d.name, err)
	}
	g, err := d.MulticastGranularity(p, x.devices)
	if err != nil {
		return nil, err
	}
	fd, err := fdpass.Take(x.socket, x.token, fdTimeout)
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: fetching the multicast object's descriptor: %w", d.name, err)
	}
	h, r := d.drv.memImportFromFD(d.ctx, fd)
	syscall.Close(fd) // the driver holds its own reference
	if err := d.check(r, "cuMemImportFromShareableHandle(POSIX fd)"); err != nil {
		return nil, err
	}
	d.multicasts.Add(1)
	return &multicast{dev: d, handle: h, size: x.size, devices: x.devices, gran: g}, nil
}

// allowMulticast checks p before a multicast driver call on d.
func (d *Device) allowMulticast(p device.Permit) error {
	if err := d.live(); err != nil {
		return err
	}
	return p.Check(d)
}

// multicast is this device's hold on a multicast object.
type multicast struct {
	dev     *Device
	handle  uint64 // CUmemGenericAllocationHandle of the object
	size    int64
	devices int
	gran    int64
	offer   *fdpass.Offer

	added  bool
	mem    uint64     // the bound physical memory
	local  device.Ptr // its unicast mapping
	mapped device.Ptr // the multicast mapping
	closed bool
}

func (m *multicast) Size() int64 { return m.size }

// exportRecord is what Export hands the other ranks: the object's size and
// team size, and where and how to fetch its descriptor.
type exportRecord struct {
	size    int64
	devices int
	socket  string
	token   []byte
}

var exportMagic = []byte("HCMC1")

func (x exportRecord) encode() []byte {
	b := append([]byte(nil), exportMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(x.size))
	b = binary.LittleEndian.AppendUint32(b, uint32(x.devices))
	b = append(b, x.token...)
	return append(b, x.socket...)
}

func decodeExport(b []byte) (exportRecord, error) {
	var x exportRecord
	head := len(exportMagic) + 12 + fdpass.TokenSize
	if len(b) <= head || !bytes.HasPrefix(b, exportMagic) {
		return x, fmt.Errorf("a %d-byte record that is not a hiercoll multicast export: %w", len(b), device.ErrInvalidArgument)
	}
	b = b[len(exportMagic):]
	x.size = int64(binary.LittleEndian.Uint64(b))
	x.devices = int(binary.LittleEndian.Uint32(b[8:]))
	x.token = append([]byte(nil), b[12:12+fdpass.TokenSize]...)
	x.socket = string(b[12+fdpass.TokenSize:])
	if x.size <= 0 || x.devices < 1 {
		return x, fmt.Errorf("an export of %d bytes for %d devices: %w", x.size, x.devices, device.ErrInvalidArgument)
	}
	return x, nil
}

// Export implements device.Multicast: the object's POSIX fd is offered to
// the team's other devices-1 ranks for fdTimeout.
func (m *multicast) Export() ([]byte, error) {
	d := m.dev
	if m.closed {
		return nil, fmt.Errorf("cuda: %s: multicast object: %w", d.name, device.ErrClosed)
	}
	if m.offer == nil {
		fd, r := d.drv.memExportToFD(d.ctx, m.handle)
		if err := d.check(r, "cuMemExportToShareableHandle(POSIX fd)"); err != nil {
			return nil, err
		}
		offer, err := fdpass.NewOffer(fd, m.devices-1, fdTimeout)
		syscall.Close(fd) // the offer holds its own duplicate
		if err != nil {
			return nil, fmt.Errorf("cuda: %s: offering the multicast object: %w", d.name, err)
		}
		m.offer = offer
	}
	return exportRecord{size: m.size, devices: m.devices, socket: m.offer.Name(), token: m.offer.Token()}.encode(), nil
}

// AddDevice implements device.Multicast with cuMulticastAddDevice.
func (m *multicast) AddDevice() error {
	d := m.dev
	if m.closed || m.added {
		return fmt.Errorf("cuda: %s: add to a multicast object that is closed or has it: %w", d.name, device.ErrInvalidArgument)
	}
	if err := d.check(d.drv.multicastAddDevice(d.ctx, m.handle, d.dev), "cuMulticastAddDevice(device %d)", d.dev); err != nil {
		return err
	}
	m.added = true
	return nil
}

// Bind implements device.Multicast: Size bytes of this device's memory,
// bound to the whole object and mapped at a unicast address.
func (m *multicast) Bind() (device.Ptr, error) {
	d := m.dev
	if m.closed || !m.added || m.mem != 0 {
		return 0, fmt.Errorf("cuda: %s: bind to a multicast object that is closed, does not have this device, or is bound: %w", d.name, device.ErrInvalidArgument)
	}
	mem, r := d.drv.memCreate(d.ctx, d.dev, m.size)
	if err := d.check(r, "cuMemCreate(%d bytes, device %d)", m.size, d.dev); err != nil {
		return 0, err
	}
	if err := d.check(d.drv.multicastBindMem(d.ctx, m.handle, mem, m.size), "cuMulticastBindMem(%d bytes)", m.size); err != nil {
		return 0, errors.Join(err, d.check(d.drv.memRelease(d.ctx, mem), "cuMemRelease"))
	}
	m.mem = mem
	p, err := d.mapHandle(mem, m.size, m.gran)
	if err != nil {
		return 0, err // Close unbinds and releases
	}
	m.local = p
	return p, nil
}

// Map implements device.Multicast: the object mapped at a multicast
// address on this device.
func (m *multicast) Map() (device.Ptr, error) {
	d := m.dev
	if m.closed || m.mapped != 0 {
		return 0, fmt.Errorf("cuda: %s: map of a multicast object that is closed or mapped: %w", d.name, device.ErrInvalidArgument)
	}
	p, err := d.mapHandle(m.handle, m.size, m.gran)
	if err != nil {
		return 0, err
	}
	m.mapped = p
	return p, nil
}

// mapHandle reserves size bytes of address space, maps h there and lets
// this device read and write it.
func (d *Device) mapHandle(h uint64, size, align int64) (device.Ptr, error) {
	p, r := d.drv.memAddressReserve(d.ctx, size, align)
	if err := d.check(r, "cuMemAddressReserve(%d bytes)", size); err != nil {
		return 0, err
	}
	err := d.check(d.drv.memMap(d.ctx, p, size, h), "cuMemMap(%v, %d bytes)", p, size)
	if err == nil {
		if err = d.check(d.drv.memSetAccess(d.ctx, p, size, d.dev), "cuMemSetAccess(%v, %d bytes, device %d)", p, size, d.dev); err != nil {
			err = errors.Join(err, d.check(d.drv.memUnmap(d.ctx, p, size), "cuMemUnmap"))
		}
	}
	if err != nil {
		return 0, errors.Join(err, d.check(d.drv.memAddressFree(d.ctx, p, size), "cuMemAddressFree"))
	}
	return p, nil
}

// unmap undoes mapHandle.
func (d *Device) unmap(p device.Ptr, size int64) error {
	return errors.Join(d.check(d.drv.memUnmap(d.ctx, p, size), "cuMemUnmap(%v)", p),
		d.check(d.drv.memAddressFree(d.ctx, p, size), "cuMemAddressFree(%v)", p))
}

// Close implements device.Multicast.
func (m *multicast) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	d := m.dev
	var errs []error
	if m.mapped != 0 {
		errs = append(errs, d.unmap(m.mapped, m.size))
	}
	if m.mem != 0 {
		errs = append(errs, d.check(d.drv.multicastUnbind(d.ctx, m.handle, d.dev, m.size), "cuMulticastUnbind(device %d)", d.dev))
		if m.local != 0 {
			errs = append(errs, d.unmap(m.local, m.size))
		}
		errs = append(errs, d.check(d.drv.memRelease(d.ctx, m.mem), "cuMemRelease(bound memory)"))
	}
	errs = append(errs, d.check(d.drv.memRelease(d.ctx, m.handle), "cuMemRelease(multicast object)"))
	if m.offer != nil {
		errs = append(errs, m.offer.Close())
	}
	d.multicasts.Add(-1)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda: %s: releasing a multicast object: %w", d.name, err)
	}
	return nil
}
