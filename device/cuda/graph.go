package cuda

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/seed12530e24/hiercoll/device"
)

// CUDA graphs: stream capture into a graph, instantiated at EndCapture.

var _ device.Grapher = (*Device)(nil)

// Capturing reports whether the stream is being captured
// (cuStreamIsCapturing; false where the driver has no graphs).
func (s *stream) Capturing() (bool, error) {
	st, err := s.dev.own(s)
	if err != nil {
		return false, err
	}
	on, r := s.dev.drv.streamIsCapturing(s.dev.ctx, st.h)
	return on, s.dev.check(r, "cuStreamIsCapturing(%s)", s.name)
}

// BeginCapture implements device.Grapher with cuStreamBeginCapture_v2 in
// thread-local mode: other threads' unsafe calls do not break the capture.
// Such a capture must end on the OS thread that began it, so the calling
// goroutine stays on its thread until EndCapture (runtime.LockOSThread).
func (d *Device) BeginCapture(s device.Stream) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if !d.drv.hasGraphs() {
		return fmt.Errorf("cuda: %s: the driver has no graph entry points: %w", d.name, device.ErrNotSupported)
	}
	runtime.LockOSThread()
	err = d.check(d.drv.streamBeginCapture(d.ctx, st.h, captureModeThreadLocal), "cuStreamBeginCapture_v2(%s)", st.name)
	if err != nil {
		runtime.UnlockOSThread()
	}
	return err
}

// EndCapture implements device.Grapher, on the goroutine that called
// BeginCapture: cuStreamEndCapture, then
// cuGraphInstantiateWithFlags (the graph itself is destroyed once
// instantiated).
func (d *Device) EndCapture(s device.Stream) (device.Graph, error) {
	st, err := d.own(s)
	if err != nil {
		return nil, err
	}
	if !d.drv.hasGraphs() {
		return nil, fmt.Errorf("cuda: %s: the driver has no graph entry points: %w", d.name, device.ErrNotSupported)
	}
	g, r := d.drv.streamEndCapture(d.ctx, st.h)
	runtime.UnlockOSThread() // BeginCapture's, on the goroutine that began the capture
	if err := d.check(r, "cuStreamEndCapture(%s)", st.name); err != nil {
		return nil, err
	}
	exec, r := d.drv.graphInstantiate(d.ctx, g)
	ierr := d.check(r, "cuGraphInstantiateWithFlags(captured on %s)", st.name)
	derr := d.check(d.drv.graphDestroy(d.ctx, g), "cuGraphDestroy")
	if ierr != nil {
		return nil, ierr
	}
	if derr != nil {
		_ = d.drv.graphExecDestroy(d.ctx, exec)
		return nil, derr
	}
	return &graph{dev: d, exec: exec}, nil
}

// graph is an instantiated CUDA graph (a CUgraphExec).
type graph struct {
	dev    *Device
	exec   uintptr
	mu     sync.Mutex
	closed bool
}

// Launch implements device.Graph with cuGraphLaunch.
func (g *graph) Launch(s device.Stream) error {
	st, err := g.dev.own(s)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return fmt.Errorf("cuda: %s: launch of a closed graph: %w", g.dev.name, device.ErrClosed)
	}
	return g.dev.check(g.dev.drv.graphLaunch(g.dev.ctx, g.exec, st.h), "cuGraphLaunch(%s)", st.name)
}

// Close implements device.Graph with cuGraphExecDestroy.
func (g *graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return g.dev.check(g.dev.drv.graphExecDestroy(g.dev.ctx, g.exec), "cuGraphExecDestroy")
}
