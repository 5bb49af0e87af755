package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// Case is one shape of the verification sweep.
type Case struct {
	RowsPer, N int
}

// VerifyOptions configure the sweep.
type VerifyOptions struct {
	DTypes []dtype.DType
	Cases  []Case
	Calls  int // calls per case, each on fresh data
	Repeat int // calls in a row on one context (small shape, fresh data each)
	Config rs2d.Config
	// Register has the pull engine read the caller's buffer in place,
	// registered once per context (Context.Register): the path of
	// registered inputs, the copy engine's pulls among them.
	Register bool
	// InputOffset puts each case's input InputOffset bytes (0 to 15) past
	// a 16-byte aligned base, as a view into a larger tensor.
	InputOffset int64
	Out         Printer
	Title       string
	// Result, if set, is called on rank 0 with each check's result as it
	// ends (hiercoll verify --json prints them).
	Result func(VerifyResult)
}

// VerifyResult is one check of the sweep: a shape and dtype, the calls in a
// row on one context ("repeat"), or the refusal of bad input ("bad-input").
type VerifyResult struct {
	Check       string  `json:"check"` // "case", "repeat" or "bad-input"
	DType       string  `json:"dtype,omitempty"`
	RowsPerRank int     `json:"rows_per_rank,omitempty"`
	N           int     `json:"n,omitempty"`
	Calls       int     `json:"calls,omitempty"`
	OK          bool    `json:"ok"`
	Seconds     float64 `json:"seconds,omitempty"`
	Report      string  `json:"report,omitempty"` // what the ranks found, where not ok
	Simulated   bool    `json:"simulated"`
}

// DefaultCases covers M_per_rank of 1, odd and unaligned N, and a larger
// block; gpu adds one of several MiB per rank.
func DefaultCases(gpu bool) []Case {
	cs := []Case{{1, 1}, {1, 7}, {3, 129}, {17, 1000}, {64, 4096}}
	if gpu {
		cs = append(cs, Case{512, 8192}, Case{1, 8193})
	}
	return cs
}

// Verify returns the verification job.
func Verify(o VerifyOptions) Job {
	return func(ctx context.Context, r world.Rank) error { return verify(ctx, r, o) }
}

func verify(ctx context.Context, r world.Rank, o VerifyOptions) (err error) {
	if o.InputOffset < 0 || o.InputOffset > 15 {
		return fmt.Errorf("verify: input offset of %d bytes, want 0 to 15: %w", o.InputOffset, device.ErrInvalidArgument)
	}
	p := Printer{W: o.Out.W, Rank: r.Comm.Rank()}
	ref, why, err := NewReference(ctx, r)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ref.Close()) }()
	p.Printf("hiercoll verify: %s\n", o.Title)
	simulated := r.Dev.Info().Backend != "cuda"
	result := func(v VerifyResult, report string) {
		if o.Result == nil || r.Comm.Rank() != 0 {
			return
		}
		v.Simulated = simulated
		if !v.OK {
			v.Report = strings.TrimSpace(report)
		}
		o.Result(v)
	}
	if ref != nil {
		p.Printf("  reference: fp64 on the CPU, and NCCL %s's reduce-scatter of the same inputs\n", ref.Version)
	} else {
		p.Printf("  reference: fp64 on the CPU (no NCCL comparison: %s)\n", why)
	}
	s, err := r.Dev.NewStream(device.Normal)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	failed, err := verifyCases(ctx, r, o, p, ref, s, result)
	if err != nil {
		return err
	}
	if o.Repeat > 0 {
		msg, err := verifyRepeat(ctx, r, o, s)
		if err != nil {
			return err
		}
		ok, report, err := gather(ctx, r, msg)
		if err != nil {
			return err
		}
		if !ok {
			failed++
		}
		p.Printf("  %s in a row on one context, fresh data each: %s\n%s", Count(o.Repeat, "call"), verdict(ok), report)
		result(VerifyResult{Check: "repeat", Calls: o.Repeat, OK: ok}, report)
	}
	msg := badInputs(ctx, r, o.Config)
	ok, report, err := gather(ctx, r, msg)
	if err != nil {
		return err
	}
	if !ok {
		failed++
	}
	p.Printf("  bad input rejected before any work: %s\n%s", verdict(ok), report)
	result(VerifyResult{Check: "bad-input", OK: ok}, report)
	if failed > 0 {
		p.Printf("FAIL (%d checks failed)\n", failed)
		return fmt.Errorf("benchmarks: verify: %d checks failed", failed)
	}
	p.Printf("PASS\n")
	return nil
}

// verifyCases checks every dtype and case in turn, printing a line for
// each and the engine's description where it changes, and counts those
// that failed.
func verifyCases(ctx context.Context, r world.Rank, o VerifyOptions, p Printer, ref *Reference, s device.Stream,
	result func(VerifyResult, string)) (int, error) {
	failed := 0
	total := len(o.DTypes) * len(o.Cases)
	i := 0
	last := ""
	for _, dt := range o.DTypes {
		for _, c := range o.Cases {
			i++
			start := time.Now()
			msg, desc, err := verifyCase(ctx, r, o, ref, s, dt, c)
			if desc != last { // the engine a bound picks can change with the shape
				p.Printf("  %s\n", desc)
				last = desc
			}
			if err != nil {
				return failed, fmt.Errorf("%v rows/rank %d N %d: %w", dt, c.RowsPer, c.N, err)
			}
			ok, report, err := gather(ctx, r, msg)
			if err != nil {
				return failed, err
			}
			if !ok {
				failed++
			}
			p.Printf("  [%2d/%d] %-5s rows/rank %-4d N %-5d %s  %s  (%v)\n%s", i, total, dt, c.RowsPer, c.N, Count(o.Calls, "call"),
				verdict(ok), time.Since(start).Round(time.Millisecond), report)
			result(VerifyResult{Check: "case", DType: dt.String(), RowsPerRank: c.RowsPer, N: c.N, Calls: o.Calls, OK: ok,
				Seconds: time.Since(start).Seconds()}, report)
		}
	}
	return failed, nil
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// gather collects every rank's message ("" means fine) and reports at rank 0
// the ranks that had something to say.
func gather(ctx context.Context, r world.Rank, msg string) (bool, string, error) {
	all, err := r.Comm.AllGather(ctx, []byte(msg))
	if err != nil {
		return false, "", err
	}
	var b strings.Builder
	ok := true
	for q, m := range all {
		if len(m) > 0 {
			ok = false
			fmt.Fprintf(&b, "      rank %d: %s\n", q, m)
		}
	}
	return ok, b.String(), nil
}

// verifyCase runs o.Calls calls of one shape on fresh data; it returns ""
// when every output matched, else what went wrong on this rank.
func verifyCase(ctx context.Context, r world.Rank, o VerifyOptions, ref *Reference, s device.Stream, dt dtype.DType, c Case) (msg, desc string, err error) {
	ws := r.Comm.Size()
	m := c.RowsPer * ws
	cfg := o.Config
	cfg.MaxM, cfg.N, cfg.DType = m, c.N, dt
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
	if err != nil {
		return "", "", err
	}
	defer func() { err = errors.Join(err, rs.Close()) }()
	desc = fmt.Sprintf("engine %v, transport between nodes %s", rs.Config().Engine, rs.Transport())
	if mem := rs.Memory(); mem.Engine == rs2d.EngineRing {
		desc += fmt.Sprintf(": %d channels × %d slots of %s per peer", mem.Ring.Channels, mem.Ring.Slots, FormatBytes(mem.Ring.ChunkBytes))
	}
	buf, err := allocBuffers(r.Dev, m, c.N, ws, dt, ref != nil)
	if err != nil {
		return "", desc, err
	}
	defer func() { err = errors.Join(err, buf.free()) }()
	buf.in = buf.inBase.Add(o.InputOffset)
	if o.InputOffset != 0 {
		desc += fmt.Sprintf(", the input %d bytes past a 16-byte aligned base", o.InputOffset)
	}
	if es := int64(dt.Size()); o.InputOffset%es != 0 {
		desc += fmt.Sprintf(" (not a multiple of %v's %d bytes: refused)", dt, es)
		return refusedMisaligned(ctx, rs, buf, o.Register, s), desc, nil
	}
	if err := registerInput(ctx, rs, buf, o.Register); err != nil {
		return "", desc, err
	}
	if o.Register {
		desc += ", the input registered"
	}

	rank := r.Comm.Rank()
	count := c.RowsPer * c.N
	got := make([]byte, buf.outBytes())
	for call := 0; call < o.Calls; call++ {
		seed, err := agreeSeed(ctx, r)
		if err != nil {
			return "", desc, err
		}
		in := Inputs{Seed: seed, DType: dt, World: ws, RowsPer: c.RowsPer, Cols: c.N}
		if err := r.Dev.CopyToDevice(buf.in, in.Rank(rank)); err != nil {
			return "", desc, err
		}
		for _, out := range []device.Ptr{buf.out, buf.ref} {
			if out != 0 {
				if err := r.Dev.CopyToDevice(out, check.Poison(dt, count)); err != nil {
					return "", desc, err
				}
			}
		}
		if err := rs.ReduceScatter(ctx, buf.inTensor(), buf.outTensor(), s); err != nil {
			return "", desc, err
		}
		if ref != nil {
			if err := ref.ReduceScatter(buf.in, buf.ref, int64(count), dt, s); err != nil {
				return "", desc, err
			}
		}
		if err := s.Synchronize(ctx); err != nil {
			return "", desc, err
		}
		want := in.Expected(rank)
		if err := r.Dev.CopyToHost(got, buf.out); err != nil {
			return "", desc, err
		}
		if rep := want.Compare(got, rs.Roundings()); !rep.OK() {
			return fmt.Sprintf("call %d: hiercoll vs fp64: %v", call, rep), desc, nil
		}
		if ref == nil {
			continue
		}
		nccl := make([]byte, len(got))
		if err := r.Dev.CopyToHost(nccl, buf.ref); err != nil {
			return "", desc, err
		}
		// NCCL's ring rounds once per hop.
		if rep := want.Compare(nccl, ws); !rep.OK() {
			return fmt.Sprintf("call %d: NCCL itself vs fp64: %v", call, rep), desc, nil
		}
		if dt == dtype.I32 && string(nccl) != string(got) {
			return fmt.Sprintf("call %d: int32 result differs from NCCL's", call), desc, nil
		}
	}
	return "", desc, nil
}

// refusedMisaligned checks that an input not aligned to its elements is
// refused by the call (and by Register, with register) before any work.
func refusedMisaligned(ctx context.Context, rs *rs2d.Context, buf *buffers, register bool, s device.Stream) string {
	if err := rs.ReduceScatter(ctx, buf.inTensor(), buf.outTensor(), s); !errors.Is(err, device.ErrInvalidArgument) {
		return fmt.Sprintf("a misaligned input: got %v, want an invalid-argument error", err)
	}
	if register {
		if err := rs.Register(ctx, buf.inTensor()); !errors.Is(err, device.ErrInvalidArgument) {
			return fmt.Sprintf("registering a misaligned input: got %v, want an invalid-argument error", err)
		}
	}
	return ""
}

// registerInput registers buf's input with rs where register is set.
func registerInput(ctx context.Context, rs *rs2d.Context, buf *buffers, register bool) error {
	if !register {
		return nil
	}
	if err := rs.Register(ctx, buf.inTensor()); err != nil {
		return fmt.Errorf("benchmarks: --register: %w", err)
	}
	return nil
}

// verifyRepeat makes o.Repeat calls on one context with fresh data each.
func verifyRepeat(ctx context.Context, r world.Rank, o VerifyOptions, s device.Stream) (msg string, err error) {
	ws, rank := r.Comm.Size(), r.Comm.Rank()
	const rowsPer, n = 4, 96
	dt := dtype.I32
	cfg := o.Config
	cfg.MaxM, cfg.N, cfg.DType = rowsPer*ws, n, dt
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, rs.Close()) }()
	buf, err := allocBuffers(r.Dev, rowsPer*ws, n, ws, dt, false)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, buf.free()) }()
	if err := registerInput(ctx, rs, buf, o.Register); err != nil {
		return "", err
	}
	seed, err := agreeSeed(ctx, r)
	if err != nil {
		return "", err
	}
	got := make([]byte, buf.outBytes())
	for call := 0; call < o.Repeat; call++ {
		in := Inputs{Seed: seed + uint64(call), DType: dt, World: ws, RowsPer: rowsPer, Cols: n}
		if err := r.Dev.CopyToDevice(buf.in, in.Rank(rank)); err != nil {
			return "", err
		}
		if err := r.Dev.CopyToDevice(buf.out, check.Poison(dt, rowsPer*n)); err != nil {
			return "", err
		}
		if err := rs.ReduceScatter(ctx, buf.inTensor(), buf.outTensor(), s); err != nil {
			return "", err
		}
		if err := s.Synchronize(ctx); err != nil {
			return "", err
		}
		if err := r.Dev.CopyToHost(got, buf.out); err != nil {
			return "", err
		}
		if rep := in.Expected(rank).Compare(got, 1); !rep.OK() {
			return fmt.Sprintf("call %d of %d: %v", call, o.Repeat, rep), nil
		}
	}
	return "", nil
}

// badInputs checks that every malformed call is refused with an
// invalid-argument error before anything is enqueued, and that the context
// still works afterwards.
func badInputs(ctx context.Context, r world.Rank, base rs2d.Config) (msg string) {
	ws := r.Comm.Size()
	const rowsPer, n = 2, 8
	dt := dtype.F32
	cfg := base
	cfg.MaxM, cfg.N, cfg.DType = rowsPer*ws, n, dt
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
	if err != nil {
		return err.Error()
	}
	buf, err := allocBuffers(r.Dev, rowsPer*ws, n, ws, dt, false)
	if err != nil {
		return errors.Join(err, rs.Close()).Error()
	}
	defer buf.free()
	s, err := r.Dev.NewStream(device.Normal)
	if err != nil {
		return errors.Join(err, rs.Close()).Error()
	}
	defer s.Close()
	in, out := buf.inTensor(), buf.outTensor()
	// The last 16 bytes of the output's allocation: too small for any input.
	outBase, outSize, err := r.Dev.AddressRange(out.Ptr)
	if err != nil {
		return errors.Join(err, rs.Close()).Error()
	}
	tail := outBase.Add(outSize - 16)
	bad := map[string][2]rs2d.Tensor{
		"M not divisible by world": {with(in, func(t *rs2d.Tensor) { t.Rows = ws*rowsPer - 1 }), out},
		"M > MaxM":                 {with(in, func(t *rs2d.Tensor) { t.Rows = ws * (rowsPer + 1) }), with(out, func(t *rs2d.Tensor) { t.Rows = rowsPer + 1 })},
		"N mismatch":               {with(in, func(t *rs2d.Tensor) { t.Cols = n - 1 }), with(out, func(t *rs2d.Tensor) { t.Cols = n - 1 })},
		"dtype mismatch":           {with(in, func(t *rs2d.Tensor) { t.DType = dtype.BF16 }), with(out, func(t *rs2d.Tensor) { t.DType = dtype.BF16 })},
		"output rows wrong":        {in, with(out, func(t *rs2d.Tensor) { t.Rows = rowsPer + 1 })},
		"output aliases input":     {in, with(out, func(t *rs2d.Tensor) { t.Ptr = in.Ptr })},
		"input buffer too small":   {with(in, func(t *rs2d.Tensor) { t.Ptr = tail }), out},
		// Half the rows, so that the 2 bytes further still fit the allocation.
		"input not element-aligned":  {with(in, func(t *rs2d.Tensor) { t.Ptr, t.Rows = t.Ptr.Add(2), ws }), with(out, func(t *rs2d.Tensor) { t.Rows = 1 })},
		"output not element-aligned": {with(in, func(t *rs2d.Tensor) { t.Rows = ws }), with(out, func(t *rs2d.Tensor) { t.Ptr, t.Rows = t.Ptr.Add(2), 1 })},
	}
	var problems []string
	for name, tt := range bad {
		if err := rs.ReduceScatter(ctx, tt[0], tt[1], s); !errors.Is(err, device.ErrInvalidArgument) {
			problems = append(problems, fmt.Sprintf("%s: got %v, want an invalid-argument error", name, err))
		}
	}
	// Still usable after the refusals: a good call succeeds on every rank.
	if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
		problems = append(problems, "good call after refusals: "+err.Error())
	} else if err := s.Synchronize(ctx); err != nil {
		problems = append(problems, "good call after refusals: "+err.Error())
	}
	if err := rs.Close(); err != nil {
		problems = append(problems, "close: "+err.Error())
	}
	if err := rs.ReduceScatter(ctx, in, out, s); !errors.Is(err, device.ErrClosed) {
		problems = append(problems, fmt.Sprintf("call on a closed context: got %v, want a closed error", err))
	}
	return strings.Join(problems, "; ")
}

func with(t rs2d.Tensor, f func(*rs2d.Tensor)) rs2d.Tensor {
	f(&t)
	return t
}
