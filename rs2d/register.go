package rs2d

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/symm"
)

// registration is a caller's input registered on every rank (Register): its
// window (the node peers' buffers as mapped here) and the device table of
// their addresses by local rank that the pull kernel reads through.
type registration struct {
	win    *symm.Window
	views  device.Ptr   // LocalSize uint64 addresses, this context's device memory
	peers  []device.Ptr // the same on the host
	serial uint32       // 1, 2, ...: the same on every rank
	bytes  int64        // of each rank's buffer
	// wholePages: every rank's buffer lies in an allocation of whole large
	// pages (wholePages), so the copy engine may pull it.
	wholePages bool
}

// Register registers t, this rank's input of later calls, with every rank
// (as NCCL's ncclCommRegister): a call whose input starts at t.Ptr and
// fits in t is then read by the peers in place, with no copy into the
// symmetric input first, whatever allocation t lies in (a plain PyTorch
// tensor). Only the pull engine reads peers' inputs (Memory().Engine ==
// EnginePull, whole calls or rounds); other engines return ErrNotSupported.
// A tensor that is the context's own symmetric input (Input) needs no
// registration: Register returns nil and registers nothing.
//
// The contract:
//   - Register is collective: every rank calls it, each with its own tensor
//     of the same shape (else every rank fails; nothing is registered).
//   - Every rank then passes its registered tensor to the same calls (or
//     none does). A call whose input is registered on some ranks and not on
//     others (or another registration) is caught by the kernel's first
//     handshake: on the CPU backend the call fails naming both inputs; on
//     GPUs the kernel traps (the CUDA context is lost), since its peers
//     would otherwise sum rows nobody wrote.
//   - t must stay allocated, and no rank may write it while a call reading
//     it runs, until Deregister or Close. A call ends only once every peer
//     read this rank's rows, so the next input may be written after the call
//     in stream order, as with Input.
//   - The memory must be IPC-exportable: cudaMalloc'ed memory, such as
//     PyTorch's default caching allocator's. Memory from cuMemCreate (VMM,
//     PyTorch's expandable segments) cannot be registered (ErrNotSupported);
//     calls with it unregistered still work. On one node of 2 GPUs the copy
//     engine reads large registered inputs, but only where every rank's
//     tensor lies in an allocation of whole 2 MiB pages (device.Info's
//     PageBytes; PyTorch's caching allocator rounds large tensors so); SM
//     loads read the others (the copy engine read an allocation 16 bytes
//     past whole pages about a third slower, below the SM loads' rate:
//     benchmarks/RESULTS.md).
//
// Registering costs each rank one small device table (8 bytes per GPU of
// the node), which Memory does not count: the registered memory is the
// caller's.
func (c *Context) Register(ctx context.Context, t Tensor) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return fmt.Errorf("rs2d: register on a closed context: %w", device.ErrClosed)
	case c.mem.Engine != EnginePull:
		return fmt.Errorf("rs2d: register: the %v engine reads the input where it is and registers nothing; registered inputs are for the pull engine (Config.Engine = EnginePull): %w",
			c.mem.Engine, device.ErrNotSupported)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	if c.input.Size > 0 && t.Ptr == c.symInput() {
		return nil // the symmetric input: read in place already
	}
	bad := c.checkRegister(t)
	if bad != nil {
		// Still take part, so that the peers fail too instead of waiting:
		// a window of nothing fails here and tells them (its own error
		// says no more than bad).
		_, _ = symm.NewWindow(ctx, c.comm, c.dev, 0, 0)
		return bad
	}
	win, err := symm.NewWindow(ctx, c.comm, c.dev, t.Ptr, t.Bytes())
	if err != nil {
		return fmt.Errorf("rs2d: register %v: %w", t, err)
	}
	// Every rank got here: the serial advances alike everywhere, even if
	// this rank fails below.
	c.regSerial++
	r := &registration{win: win, serial: c.regSerial, bytes: t.Bytes()}
	local := r.writeViews(c)
	// All or nothing: a registration on some ranks only would have the
	// others read garbage. The ranks agree on the pages too, so that they
	// pull its calls the same way.
	pages, err := bootstrap.Agree(ctx, c.comm, local, bootstrap.Vote(c.wholePages(t)))
	if err != nil {
		return errors.Join(fmt.Errorf("rs2d: register %v: %w", t, err), r.release(c.dev))
	}
	r.wholePages = bootstrap.CountYes(pages) == len(pages)
	if c.regs == nil {
		c.regs = map[device.Ptr]*registration{}
	}
	c.regs[t.Ptr] = r
	return nil
}

// checkRegister validates a tensor to register before anything collective.
func (c *Context) checkRegister(t Tensor) error {
	cfg := c.cfg
	switch {
	case t.DType != cfg.DType:
		return fmt.Errorf("rs2d: register %v: the context was made for %v: %w", t, cfg.DType, device.ErrInvalidArgument)
	case t.Cols != cfg.N:
		return fmt.Errorf("rs2d: register %v: the context was made for N=%d: %w", t, cfg.N, device.ErrInvalidArgument)
	case t.Rows <= 0 || t.Ptr == 0:
		return fmt.Errorf("rs2d: register %v: want a non-empty tensor: %w", t, device.ErrInvalidArgument)
	}
	if err := t.checkAligned("register: the tensor"); err != nil {
		return err
	}
	if _, ok := c.regs[t.Ptr]; ok {
		return fmt.Errorf("rs2d: register %v: already registered (Deregister it first): %w", t, device.ErrInvalidArgument)
	}
	if c.input.Size > 0 && device.Overlap(c.symInput(), c.input.Size, t.Ptr, t.Bytes()) {
		return fmt.Errorf("rs2d: register %v: it lies in the symmetric input but does not start where it does (Input): %w", t, device.ErrInvalidArgument)
	}
	return nil
}

// wholePages reports whether t lies in an allocation of whole large pages
// of the device (any allocation does where it has none).
func (c *Context) wholePages(t Tensor) bool {
	page := c.dev.Info().PageBytes
	if page <= 0 {
		return true
	}
	base, size, err := c.dev.AddressRange(t.Ptr)
	return err == nil && int64(base)%page == 0 && size%page == 0
}

// writeViews allocates and fills the table of the node peers' buffers.
func (r *registration) writeViews(c *Context) error {
	lws := c.place.Shape.LocalSize
	b := make([]byte, 0, 8*lws)
	for lr := range lws {
		peer := c.place.NodePeer(lr)
		p, ok := r.win.Peer(peer)
		if !ok {
			return fmt.Errorf("the buffer of rank %d, a node peer, is not mapped (another host?): %w", peer, device.ErrNotSupported)
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(p))
		r.peers = append(r.peers, p)
	}
	views, err := c.dev.Alloc(int64(len(b)))
	if err != nil {
		return fmt.Errorf("allocating the table of the peers' inputs: %w", err)
	}
	r.views = views
	if err := c.dev.CopyToDevice(views, b); err != nil {
		return fmt.Errorf("writing the table of the peers' inputs: %w", err)
	}
	return nil
}

func (r *registration) release(dev device.Device) error {
	var errs []error
	if r.views != 0 {
		errs = append(errs, dev.Free(r.views))
		r.views = 0
	}
	return errors.Join(append(errs, r.win.Close())...)
}

// Deregister releases t's registration (Register): later calls with t
// copy it into the symmetric input first. It is local, but every rank
// should deregister the same tensors, as they registered them (a call's
// input must be registered on every rank or none). The caller must have
// synchronized the streams of the calls that read t (the table and the
// peers' mappings are freed at once), and must not replay a CUDA graph that
// captured a call with t afterwards. ErrInvalidArgument if t is not
// registered.
func (c *Context) Deregister(t Tensor) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("rs2d: deregister on a closed context: %w", device.ErrClosed)
	}
	r, ok := c.regs[t.Ptr]
	if !ok {
		return fmt.Errorf("rs2d: deregister %v: not registered: %w", t, device.ErrInvalidArgument)
	}
	delete(c.regs, t.Ptr)
	if err := r.release(c.dev); err != nil {
		return fmt.Errorf("rs2d: deregister %v: %w", t, err)
	}
	return nil
}

// Registered reports whether a call with input in reads it in place
// through a registration: in starts where a registered tensor does and fits
// in it.
func (c *Context) Registered(in Tensor) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registrationOf(in) != nil
}

// registrationOf is the registration a call's input is read through (nil:
// none, the call copies it in).
func (c *Context) registrationOf(in Tensor) *registration {
	r, ok := c.regs[in.Ptr]
	if !ok || in.Bytes() > r.bytes {
		return nil
	}
	return r
}

// releaseRegistrations releases every registration (Close).
func (c *Context) releaseRegistrations() error {
	var errs []error
	for p, r := range c.regs {
		errs = append(errs, r.release(c.dev))
		delete(c.regs, p)
	}
	return errors.Join(errs...)
}
