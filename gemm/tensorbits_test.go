package gemm_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
)

// The per-tensor fp8 path gives the same bits as it did before row-wise
// and block-wise scaling were added: the twin's C for fixed operands (a
// fixed generator, never NaN codes), per-tensor scales, whole tiles and
// stream-K pieces, hashed, against the hashes that version produced.
func TestGemmE4M3TensorScalingBitsUnchanged(t *testing.T) {
	for _, c := range []struct {
		name     string
		m, n, k  int
		out      dtype.DType
		grid     int
		streamK  bool
		sa, sb   float32
		wantHash string
	}{
		{"bf16/whole", 130, 264, 400, dtype.BF16, 0, false, 0.37, 1.9, "d84490e555bf11abd70ad612d3172cb9deea9ac0b6c2a5c93069c334409de4c6"},
		{"fp16/whole", 257, 16, 144, dtype.F16, 0, false, 1.0 / 512, 0.0625, "42de34a89ca49b24f242afa17daf2f9f1c5e6cdda4ea99703635e921697732f0"},
		{"bf16/stream-K", 136, 264, 512, dtype.BF16, 3, true, 3, 0.01, "9c616b133397547a3108a62a0d3afc5c525359f148cf21d4541757ca395a2767"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.streamK {
				defer gemm.SetStreamKMin(gemm.SetStreamKMin(1))
			}
			got := tensorScaledBits(t, c.m, c.n, c.k, c.out, c.grid, c.sa, c.sb)
			require.Equal(t, c.wantHash, got)
		})
	}
}

// tensorScaledBits runs the twin on fixed e4m3 operands (A [m, k], B
// [n, k]) with per-tensor scales sa and sb, and returns the SHA-256 of C.
func tensorScaledBits(t *testing.T, m, n, k int, out dtype.DType, grid int, sa, sb float32) string {
	t.Helper()
	dev := sim.New(sim.NewHost("gemm"), 0, sim.Options{WaitTimeout: 5 * time.Second})
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	s, err := dev.NewStream(device.Normal)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	rng := rand.New(rand.NewPCG(29, uint64(m*n*k)))
	fp8 := func(count int) []byte {
		b := make([]byte, count)
		for i := range b {
			for b[i] = byte(rng.Uint32()); b[i]&0x7f == 0x7f; b[i] = byte(rng.Uint32()) {
			}
		}
		return b
	}
	alloc := func(data []byte) device.Ptr {
		p, err := dev.Alloc(int64(len(data)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
		require.NoError(t, dev.CopyToDevice(p, data))
		return p
	}
	scale := func(v float32) device.Ptr { return alloc(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))) }
	g := gemm.Params{GemmSpec: device.GemmSpec{M: m, N: n, K: k, DType: dtype.E4M3, BT: true,
		A: alloc(fp8(m * k)), B: alloc(fp8(n * k)), C: alloc(make([]byte, m*n*out.Size()))}, Out: out,
		ScaleA: scale(sa), ScaleB: scale(sb), Grid: grid}
	if grid > 0 {
		ws := alloc(make([]byte, gemm.WorkspaceBytes(grid)))
		g.Workspace = ws
	}
	require.NoError(t, gemm.Launch(dev, s, g))
	require.NoError(t, s.Synchronize(context.Background()))
	c := make([]byte, m*n*out.Size())
	require.NoError(t, dev.CopyToHost(c, g.C))
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}
