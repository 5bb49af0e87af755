package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

var _ device.Matmul = (*Device)(nil)

// Gemm implements device.Matmul with a plain Go GEMM, run on the stream like
// any other work: row-major, every element of C accumulated in fp32 in k
// order (acc += a[i,k]·b[k,j] for k = 0, 1, ...), then rounded once to the
// dtype with package dtype's round-to-nearest-even conversions. bf16 and
// fp16 products are exact in fp32, so for them the only roundings are the
// K-1 fp32 additions and the final one. Rows are spread over up to
// GOMAXPROCS workers (fewer with g.SMs). It is meant for the small shapes of
// tests: O(M·N·K) with no blocking for caches.
//
// The addresses are checked when the GEMM runs, as the CPU backend checks
// copies: an operand that runs past its allocation fails the stream.
func (d *Device) Gemm(s device.Stream, g device.GemmSpec) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if err := g.Check(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	g = g.Dense()
	return st.enqueue(op{run: func() error {
		if err := d.gemm(g); err != nil {
			return fmt.Errorf("gemm %dx%dx%d: %w", g.M, g.N, g.K, err)
		}
		d.host.notify()
		return nil
	}})
}

func (d *Device) gemm(g device.GemmSpec) error {
	na, nb, nc := g.Extent()
	a, err := d.host.Bytes(g.A, na)
	if err != nil {
		return fmt.Errorf("A: %w", err)
	}
	b, err := d.host.Bytes(g.B, nb)
	if err != nil {
		return fmt.Errorf("B: %w", err)
	}
	c, err := d.host.Bytes(g.C, nc)
	if err != nil {
		return fmt.Errorf("C: %w", err)
	}
	if device.Overlap(g.C, nc, g.A, na) || device.Overlap(g.C, nc, g.B, nb) {
		return fmt.Errorf("C overlaps A or B: %w", device.ErrInvalidArgument)
	}
	load := loader(g.DType)
	// B widened to fp32 once: [K, N] dense.
	bf := make([]float32, g.K*g.N)
	for k := 0; k < g.K; k++ {
		for j := 0; j < g.N; j++ {
			if g.BT {
				bf[k*g.N+j] = load(b, j*g.LDB+k)
			} else {
				bf[k*g.N+j] = load(b, k*g.LDB+j)
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), g.M)
	if g.SMs > 0 {
		workers = min(workers, g.SMs)
	}
	var wg sync.WaitGroup
	per := (g.M + workers - 1) / workers
	for w := 0; w < workers; w++ {
		r0, r1 := w*per, min((w+1)*per, g.M)
		if r0 >= r1 {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := make([]float32, g.N)
			for i := r0; i < r1; i++ {
				clear(acc)
				for k := 0; k < g.K; k++ {
					aik := load(a, i*g.LDA+k)
					row := bf[k*g.N : (k+1)*g.N]
					for j, bkj := range row {
						// The explicit conversion rounds the product to fp32
						// on its own, so no platform fuses it into an FMA
						// (exact anyway for bf16 and fp16 operands).
						acc[j] += float32(aik * bkj)
					}
				}
				for j, v := range acc {
					store(g.DType, c, i*g.LDC+j, v)
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// loader returns the reader of element i of a buffer of dt, widened to fp32
// (exact for bf16 and fp16).
func loader(dt dtype.DType) func(b []byte, i int) float32 {
	switch dt {
	case dtype.BF16:
		return func(b []byte, i int) float32 { return dtype.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:])) }
	case dtype.F16:
		return func(b []byte, i int) float32 { return dtype.F16ToF32(binary.LittleEndian.Uint16(b[2*i:])) }
	default: // F32: GemmSpec.Check admits nothing else
		return func(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
	}
}

// store rounds v to dt (nearest even) and writes it as element i.
func store(dt dtype.DType, b []byte, i int, v float32) {
	switch dt {
	case dtype.BF16:
		binary.LittleEndian.PutUint16(b[2*i:], dtype.F32ToBF16(v))
	case dtype.F16:
		binary.LittleEndian.PutUint16(b[2*i:], dtype.F32ToF16(v))
	default:
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
}

// Library names the CPU backend's GEMM.
func (d *Device) Library() string { return "the CPU backend's GEMM (Go, fp32 accumulation)" }
