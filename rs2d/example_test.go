package rs2d_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// A reduce-scatter over 2 nodes × 2 simulated GPUs: rank r's input row i
// holds r+i in every column, so row i of the sum is 4i+6 and rank r gets
// row r.
func ExampleContext_ReduceScatter() {
	w, err := world.Sim(bootstrap.Shape{Nodes: 2, LocalSize: 2}, world.SimOptions{})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const m, n = 4, 3 // M rows per rank's input: one output row per rank
	results := make([]int32, m)
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dtype.I32})
		if err != nil {
			return err
		}
		defer rs.Close()
		in, _ := r.Dev.Alloc(m * n * 4)
		out, _ := r.Dev.Alloc(n * 4)
		defer r.Dev.Free(in)
		defer r.Dev.Free(out)
		host := make([]byte, m*n*4)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				binary.LittleEndian.PutUint32(host[4*(i*n+j):], uint32(r.Comm.Rank()+i))
			}
		}
		if err := r.Dev.CopyToDevice(in, host); err != nil {
			return err
		}
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()
		err = rs.ReduceScatter(ctx,
			rs2d.Tensor{Ptr: in, Rows: m, Cols: n, DType: dtype.I32},
			rs2d.Tensor{Ptr: out, Rows: 1, Cols: n, DType: dtype.I32}, s)
		if err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		got := make([]byte, n*4)
		if err := r.Dev.CopyToHost(got, out); err != nil {
			return err
		}
		results[r.Comm.Rank()] = int32(binary.LittleEndian.Uint32(got))
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(results)
	// Output: [6 10 14 18]
}
