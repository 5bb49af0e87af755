package launch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// The variables Run sets in every child.
const (
	EnvRank           = bootstrap.EnvRank
	EnvWorldSize      = bootstrap.EnvWorldSize
	EnvLocalRank      = bootstrap.EnvLocalRank
	EnvLocalWorldSize = bootstrap.EnvLocalWorldSize
	EnvGroupRank      = "GROUP_RANK"       // the (emulated) node index
	EnvGroupWorldSize = "GROUP_WORLD_SIZE" // the number of (emulated) nodes
	EnvMasterAddr     = bootstrap.EnvMasterAddr
	EnvMasterPort     = bootstrap.EnvMasterPort
	EnvHiercollPort   = bootstrap.EnvPort
	EnvHiercollToken  = bootstrap.EnvToken
	EnvDevice         = "HIERCOLL_DEVICE" // the GPU ordinal on this host
	EnvNCCLHostID     = "NCCL_HOSTID"     // set per emulated node when Nodes > 1

	// NVLink multicast switches: set to "off" unless the caller set them.
	EnvNCCLNVLSEnable               = "NCCL_NVLS_ENABLE"
	EnvNVSHMEMDisableNVLS           = "NVSHMEM_DISABLE_NVLS"
	EnvTorchSymmMemDisableMulticast = "TORCH_SYMM_MEM_DISABLE_MULTICAST"
)

// multicastOff is the value each multicast switch gets when the caller's
// environment leaves it unset.
var multicastOff = []struct{ name, value string }{
	{EnvNCCLNVLSEnable, "0"},
	{EnvNVSHMEMDisableNVLS, "1"},
	{EnvTorchSymmMemDisableMulticast, "1"},
}

// DefaultGrace is how long children get between SIGTERM and SIGKILL.
const DefaultGrace = 5 * time.Second

// Spec is a job to run on this host.
type Spec struct {
	NProc   int      // ranks in all
	Nodes   int      // emulated nodes on this host; default 1; must divide NProc
	Command []string // program and arguments, run once per rank
	Env     []string // extra "NAME=value" for every rank (after the launcher's own)
	PerRank func(rank int) []string
	Stdout  io.Writer // default os.Stdout
	Stderr  io.Writer // default os.Stderr
	Grace   time.Duration
	// RawStdout copies the children's stdout lines without the "[rank N] "
	// prefix (stderr keeps it): for a job whose stdout only rank 0 writes,
	// such as a report or JSON lines another program reads.
	RawStdout bool
}

func (s Spec) check() (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, fmt.Errorf("launch: %s: %w", fmt.Sprintf(format, args...), hcerr.ErrInvalidArgument)
	}
	if s.Nodes == 0 {
		s.Nodes = 1
	}
	switch {
	case s.NProc < 1:
		return bad("--nproc %d: need at least one process", s.NProc)
	case s.Nodes < 1 || s.NProc%s.Nodes != 0:
		return bad("--nodes %d does not divide --nproc %d", s.Nodes, s.NProc)
	case len(s.Command) == 0 || s.Command[0] == "":
		return bad("no command to run")
	case s.Grace < 0:
		return bad("negative grace period %v", s.Grace)
	}
	for _, kv := range s.Env {
		if !strings.Contains(kv, "=") {
			return bad("environment entry %s is not NAME=value", hcerr.Quote(kv))
		}
	}
	if s.Grace == 0 {
		s.Grace = DefaultGrace
	}
	if s.Stdout == nil {
		s.Stdout = os.Stdout
	}
	if s.Stderr == nil {
		s.Stderr = os.Stderr
	}
	return s, nil
}

// RankError is a child that failed: it exited non-zero or died of a signal.
// errors.Is(err, hcerr.ErrPeer) holds, and Err is the *exec.ExitError.
type RankError struct {
	Rank     int
	PID      int
	ExitCode int    // -1 when a signal ended it
	Status   string // "exit status 3", "signal: killed"
	Err      error
}

func (e *RankError) Error() string {
	return fmt.Sprintf("launch: rank %d (pid %d) failed: %s", e.Rank, e.PID, e.Status)
}

func (e *RankError) Unwrap() []error { return []error{hcerr.ErrPeer, e.Err} }

// job is what every rank of one Run shares.
type job struct {
	spec                     Spec
	lws                      int
	masterPort, hiercollPort int
	token                    string
}

// Run starts the job, waits for every child, and returns nil when all exited
// 0. See the package documentation for the environment and failure handling.
func Run(ctx context.Context, spec Spec) error {
	spec, err := spec.check()
	if err != nil {
		return err
	}
	j := job{spec: spec, lws: spec.NProc / spec.Nodes}
	if j.masterPort, j.hiercollPort, err = twoFreePorts(); err != nil {
		return fmt.Errorf("launch: finding free loopback ports: %w", err)
	}
	// The job's rendezvous secret: nobody outside this process tree can know it.
	secret := make([]byte, 16)
	rand.Read(secret) // crypto/rand: never fails (it aborts the program instead)
	j.token = hex.EncodeToString(secret)

	out := &sink{}
	children := make([]*child, spec.NProc)
	for rank := range children {
		c, err := j.start(rank, os.Environ(), out)
		if err != nil {
			for _, started := range children[:rank] {
				started.signal(syscall.SIGKILL)
				<-started.exited
			}
			return err
		}
		children[rank] = c
	}
	return supervise(ctx, children, spec.Grace)
}

// child is one running rank.
type child struct {
	rank   int
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's result, valid after exited
}

func (j job) start(rank int, base []string, out *sink) (*child, error) {
	cmd := exec.Command(j.spec.Command[0], j.spec.Command[1:]...)
	cmd.Env = j.env(rank, base)
	stdout := out.lines(rank, j.spec.Stdout)
	if j.spec.RawStdout {
		stdout.prefix = ""
	}
	stderr := out.lines(rank, j.spec.Stderr)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so that a signal reaches what it starts too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Grandchildren that keep the output pipes open do not hold Wait up.
	cmd.WaitDelay = j.spec.Grace
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch: rank %d: cannot start %q: %w (%w)", rank, j.spec.Command[0], err, hcerr.ErrInvalidArgument)
	}
	c := &child{rank: rank, cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		stdout.flush()
		stderr.flush()
		close(c.exited)
	}()
	return c, nil
}

// signal sends sig to the child and its process group.
func (c *child) signal(sig syscall.Signal) {
	select {
	case <-c.exited:
		return
	default:
	}
	c.cmd.Process.Signal(sig)
	syscall.Kill(-c.pid, sig)
}

// supervise waits for every child. The first failure, or ctx ending, starts
// the shutdown: SIGTERM to everyone left, SIGKILL after grace.
func supervise(ctx context.Context, children []*child, grace time.Duration) error {
	exits := make(chan *child, len(children))
	for _, c := range children {
		go func() {
			<-c.exited
			exits <- c
		}()
	}
	var first *RankError
	var cancelled error
	var kill <-chan time.Time
	var timer *time.Timer
	stopping := false
	stop := func() {
		if stopping {
			return
		}
		stopping = true
		for _, c := range children {
			c.signal(syscall.SIGTERM)
		}
		timer = time.NewTimer(grace)
		kill = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	done := ctx.Done()
	for left := len(children); left > 0; {
		select {
		case c := <-exits:
			left--
			if failed(c) && !stopping {
				first = rankError(c)
				stop()
			}
		case <-done:
			done = nil
			if !stopping {
				cancelled = ctx.Err()
				stop()
			}
		case <-kill:
			kill = nil
			for _, c := range children {
				c.signal(syscall.SIGKILL)
			}
		}
	}
	switch {
	case first != nil:
		return first
	case cancelled != nil:
		return fmt.Errorf("launch: stopped all %d ranks: %w", len(children), cancelled)
	}
	return nil
}

// failed says whether the child itself failed. One that exited 0 but left
// something behind holding its output past the grace period did not.
func failed(c *child) bool {
	if errors.Is(c.err, exec.ErrWaitDelay) && c.cmd.ProcessState != nil && c.cmd.ProcessState.Success() {
		return false
	}
	return c.err != nil
}

func rankError(c *child) *RankError {
	e := &RankError{Rank: c.rank, PID: c.pid, ExitCode: -1, Status: c.err.Error(), Err: c.err}
	if exitErr := (*exec.ExitError)(nil); errors.As(c.err, &exitErr) {
		e.ExitCode = exitErr.ExitCode()
		e.Status = exitErr.String()
	}
	return e
}

// env is the environment of rank: the base, then the launcher's variables,
// then Spec.Env and Spec.PerRank, then the multicast switches where still
// unset. Later entries replace earlier ones of the same name.
func (j job) env(rank int, base []string) []string {
	var e environ
	for _, kv := range base {
		e.setKV(kv)
	}
	node := rank / j.lws
	e.set(EnvRank, strconv.Itoa(rank))
	e.set(EnvWorldSize, strconv.Itoa(j.spec.NProc))
	e.set(EnvLocalRank, strconv.Itoa(rank%j.lws))
	e.set(EnvLocalWorldSize, strconv.Itoa(j.lws))
	e.set(EnvGroupRank, strconv.Itoa(node))
	e.set(EnvGroupWorldSize, strconv.Itoa(j.spec.Nodes))
	e.set(EnvMasterAddr, "127.0.0.1")
	e.set(EnvMasterPort, strconv.Itoa(j.masterPort))
	e.set(EnvHiercollPort, strconv.Itoa(j.hiercollPort))
	e.set(EnvHiercollToken, j.token)
	e.set(EnvDevice, strconv.Itoa(rank))
	if j.spec.Nodes > 1 {
		e.set(EnvNCCLHostID, fmt.Sprintf("hiercoll-node%d", node))
	}
	for _, kv := range j.spec.Env {
		e.setKV(kv)
	}
	if j.spec.PerRank != nil {
		for _, kv := range j.spec.PerRank(rank) {
			e.setKV(kv)
		}
	}
	for _, sw := range multicastOff {
		if e.get(sw.name) == "" {
			e.set(sw.name, sw.value)
		}
	}
	return e.list()
}

// environ is an ordered NAME=value list with last-wins replacement.
type environ struct {
	names []string
	vals  map[string]string
}

func (e *environ) set(name, value string) {
	if e.vals == nil {
		e.vals = map[string]string{}
	}
	if _, ok := e.vals[name]; !ok {
		e.names = append(e.names, name)
	}
	e.vals[name] = value
}

func (e *environ) setKV(kv string) {
	name, value, _ := strings.Cut(kv, "=")
	e.set(name, value)
}

func (e *environ) get(name string) string { return e.vals[name] }

func (e *environ) list() []string {
	out := make([]string, len(e.names))
	for i, n := range e.names {
		out[i] = n + "=" + e.vals[n]
	}
	return out
}

// twoFreePorts asks the kernel for two distinct free loopback ports. They
// are free when this returns; a child binds them moments later.
func twoFreePorts() (int, int, error) {
	a, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer a.Close()
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	return a.Addr().(*net.TCPAddr).Port, b.Addr().(*net.TCPAddr).Port, nil
}

// sink serialises the children's output: one whole line per write.
type sink struct{ mu sync.Mutex }

// lineWriter prefixes each line of one child's stream.
type lineWriter struct {
	sink    *sink
	dst     io.Writer
	prefix  string
	partial []byte // the current line, not yet ended
}

// maxLine bounds how much of an unended line is held back.
const maxLine = 64 << 10

func (s *sink) lines(rank int, dst io.Writer) *lineWriter {
	return &lineWriter{sink: s, dst: dst, prefix: fmt.Sprintf("[rank %d] ", rank)}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) >= maxLine {
				w.emit()
			}
			break
		}
		w.partial = append(w.partial, p[:i]...)
		w.emit()
		p = p[i+1:]
	}
	return n, nil // a failing destination must not stall the child
}

// emit writes the held line, ended.
func (w *lineWriter) emit() {
	line := make([]byte, 0, len(w.prefix)+len(w.partial)+1)
	line = append(append(append(line, w.prefix...), w.partial...), '\n')
	w.partial = w.partial[:0]
	w.sink.mu.Lock()
	defer w.sink.mu.Unlock()
	w.dst.Write(line)
}

// flush ends a last line the child left open.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.emit()
	}
}
