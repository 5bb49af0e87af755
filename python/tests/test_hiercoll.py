"""hiercoll with torch: tensors on the rank's GPU, the current stream, argument checks.

Skips without torch, without a GPU, or without the library. Runs as one process (a world of one
rank: the torchrun variables are set for it when absent) or under torchrun, every rank running
the same tests:

    pytest python/tests/test_hiercoll.py
    torchrun --nproc-per-node 2 -m pytest python/tests/test_hiercoll.py
"""

import os
import pathlib
import sys
import time
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # torch_job

import hiercoll  # noqa: E402
from torch_job import library_ok, one_rank_env  # noqa: E402

try:
    import torch
except ImportError:  # the tests below skip
    torch = None


@unittest.skipIf(torch is None, "torch is not installed")
class TorchDTypeTest(unittest.TestCase):
    def test_dtype_codes(self):
        self.assertEqual(hiercoll.dtype_code(torch.bfloat16), 1)
        self.assertEqual(hiercoll.dtype_code(torch.float16), 2)
        self.assertEqual(hiercoll.dtype_code(torch.float32), 3)
        self.assertEqual(hiercoll.dtype_code(torch.int32), 4)
        for bad in (torch.float64, torch.int64, torch.uint8):
            with self.assertRaises(TypeError):
                hiercoll.dtype_code(bad)


@unittest.skipIf(torch is None, "torch is not installed")
@unittest.skipIf(torch is not None and not torch.cuda.is_available(), "no CUDA GPU")
@unittest.skipUnless(library_ok(), "libhiercoll.so is not built (scripts/build-capi.sh)")
class TorchGPUTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        one_rank_env(rendezvous_port=True)
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        torch.zeros(1, device="cuda")  # torch owns the context first
        cls.w = hiercoll.init()
        cls.dev = torch.device("cuda", cls.w.device_index)
        cls.world = cls.w.size

    def inputs(self, dtype, m, n, call=0):
        """Every rank's input of a call (each rank can make all of them), and the expected output."""
        xs = []
        for r in range(self.world):
            g = torch.Generator(device=self.dev)
            g.manual_seed(1000 * r + call)
            if dtype == torch.int32:
                xs.append(torch.randint(-(1 << 20), 1 << 20, (m, n), dtype=dtype, device=self.dev, generator=g))
            else:
                xs.append(torch.rand(m, n, dtype=dtype, device=self.dev, generator=g) - 0.5)
        rows = slice(self.w.rank * (m // self.world), (self.w.rank + 1) * (m // self.world))
        stacked = torch.stack([x[rows].double() for x in xs])
        # The expected rows, and the sum of magnitudes that bounds the rounding error.
        return xs[self.w.rank], (stacked.sum(0), stacked.abs().sum(0))

    def check(self, out, want, dtype):
        total, magnitude = want
        if dtype == torch.int32:
            self.assertTrue(torch.equal(out, total.to(torch.int32)))
        else:
            # fp32 accumulation, one rounding per level (two with several nodes): the error is at
            # most 2u times the sum of magnitudes, plus the fp32 accumulation's own.
            u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}[dtype]
            err = (out.double() - total).abs()
            self.assertLessEqual(float((err - 2 * u * magnitude - 1e-6).max()), 0.0)

    def test_init_idempotent(self):
        self.assertIs(hiercoll.init(), self.w)
        self.assertEqual(self.w.backend, "cuda")
        self.assertEqual(self.w.device_index, torch.cuda.current_device())

    def test_dtypes_and_shapes(self):
        for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.int32):
            for rows_per, n in ((1, 1), (3, 7), (5, 4099)):
                m = rows_per * self.world
                with self.subTest(dtype=dtype, m=m, n=n), hiercoll.ReduceScatter2D(2 * m, n, dtype) as rs:
                    for call in range(2):  # repeated calls; M below MaxM
                        x, want = self.inputs(dtype, m, n, call)
                        out = rs.reduce_scatter(x)
                        torch.cuda.synchronize()
                        self.assertEqual(tuple(out.shape), (rows_per, n))
                        self.assertEqual(out.dtype, dtype)
                        self.check(out, want, dtype)

    def test_side_stream_and_given_output(self):
        m, n = 4 * self.world, 64
        x, want = self.inputs(torch.float32, m, n)
        out = torch.full((m // self.world, n), float("nan"), device=self.dev)
        s = torch.cuda.Stream(device=self.dev)
        s.wait_stream(torch.cuda.current_stream())
        with hiercoll.ReduceScatter2D(m, n, torch.float32) as rs, torch.cuda.stream(s):
            got = rs.reduce_scatter(x, out)
            s.synchronize()
        self.assertIs(got, out)
        self.check(out, want, torch.float32)

    def test_pull_registered(self):
        """engine="pull" with two tensors carved out of one allocation registered (collective): calls
        on them, alternating, are right against the fp64 reference, and so is a call on a deregistered
        one (blocks this small go in one shot, which reads each rank's own tensor in place; a pulled
        call on a deregistered tensor copies it in first)."""
        for dtype in (torch.bfloat16, torch.int32):
            m, n = 6 * self.world, 136
            with self.subTest(dtype=dtype), hiercoll.ReduceScatter2D(m, n, dtype, engine="pull") as rs:
                seg = torch.empty(2 * m + 3, n, dtype=dtype, device=self.dev)
                regs = [seg[1:1 + m], seg[m + 3:]]  # neither at the allocation's start
                for t in regs:
                    rs.register(t)
                for call in range(6):
                    x, want = self.inputs(dtype, m, n, call)
                    t = regs[call % 2]
                    t.copy_(x)
                    out = rs.reduce_scatter(t)
                    torch.cuda.synchronize()
                    self.check(out, want, dtype)
                rs.deregister(regs[0])
                x, want = self.inputs(dtype, m, n, 6)
                regs[0].copy_(x)
                out = rs.reduce_scatter(regs[0])
                torch.cuda.synchronize()
                self.check(out, want, dtype)

    def test_overlap_with_gemm_signals(self):
        m, n = 2 * self.world, 33
        with hiercoll.ReduceScatter2D(m, n, torch.int32, overlap_with_gemm=True) as rs:
            order = rs.consumption_order()
            self.assertEqual(sorted(order), list(range(self.world)))
            for call in range(3):
                v = rs.signal_value()
                self.assertNotEqual(rs.signal_addr(order[0]), 0)
                x, want = self.inputs(torch.int32, m, n, call)
                for dest in order:
                    rs.raise_signal(dest)  # on the current stream
                out = rs.reduce_scatter(x)
                torch.cuda.synchronize()
                self.check(out, want, torch.int32)
                self.assertEqual(rs.signal_value(), v + 1)

    def test_matmul_reduce_scatter(self):
        """The overlapped GEMM + reduce-scatter against an fp64 reference, on small integers (every
        product and sum exact in each dtype), the output poisoned first; b also as a transposed view.
        bf16 without split_first_block goes through the own GEMM on Hopper, the rest through torch.mm."""
        k, n = 24, 136
        for dtype, split in ((torch.bfloat16, False), (torch.bfloat16, True), (torch.float16, True), (torch.float32, False)):
            for rows_per in (1, 5):
                m = rows_per * self.world
                with self.subTest(dtype=dtype, m=m, split=split), \
                        hiercoll.ReduceScatter2D(2 * m, n, dtype, overlap_with_gemm=True, split_first_block=split) as rs:
                    for call in range(3):
                        a_all, b_all = [], []
                        for r in range(self.world):
                            g = torch.Generator(device=self.dev)
                            g.manual_seed(7000 * r + 10 * call + rows_per)
                            a_all.append(torch.randint(-1, 2, (m, k), device=self.dev, generator=g).to(dtype))
                            b_all.append(torch.randint(-1, 2, (k, n), device=self.dev, generator=g).to(dtype))
                        mine = slice(self.w.rank * rows_per, (self.w.rank + 1) * rows_per)
                        want = sum(a.double() @ b.double() for a, b in zip(a_all, b_all))[mine]
                        a, b = a_all[self.w.rank], b_all[self.w.rank]
                        if call == 2:
                            b = b.t().contiguous().t()  # same values, column-major
                        out = torch.full((rows_per, n), float("nan"), dtype=dtype, device=self.dev)
                        got = rs.matmul_reduce_scatter(a, b, out)
                        torch.cuda.synchronize()
                        self.assertIs(got, out)
                        self.assertTrue(torch.equal(out.double(), want), f"call {call}: {(out.double() - want).abs().max()}")
                    if dtype != torch.float32 and not split and torch.cuda.get_device_capability(self.dev) == (9, 0):
                        self.assertIn(m, rs._own_ms, "a Hopper GPU computes bf16 / fp16 with the own GEMM")
        with hiercoll.ReduceScatter2D(self.world, 8, torch.int32, overlap_with_gemm=True) as rs, \
                self.assertRaisesRegex(TypeError, "floating"):
            x = torch.zeros(self.world, 8, dtype=torch.int32, device=self.dev)
            rs.matmul_reduce_scatter(x, torch.zeros(8, 8, dtype=torch.int32, device=self.dev))
        with hiercoll.ReduceScatter2D(self.world, 8, torch.float32) as rs, \
                self.assertRaisesRegex(ValueError, "overlap_with_gemm"):
            x = torch.zeros(self.world, 8, device=self.dev)
            rs.matmul_reduce_scatter(x, torch.zeros(8, 8, device=self.dev))
        with hiercoll.ReduceScatter2D(self.world, 8, torch.float32, overlap_with_gemm=True) as rs:
            v = rs.signal_value()
            x = torch.zeros(self.world, 4, device=self.dev)
            with self.assertRaisesRegex(ValueError, "want a"):
                rs.matmul_reduce_scatter(x, torch.zeros(5, 8, device=self.dev))
            self.assertEqual(rs.signal_value(), v)  # rejected before any signal was raised

    def test_fp8(self):
        """hiercoll.gemm and scaled_matmul_reduce_scatter with float8_e4m3fn operands, against the fp64
        reference on small integers and power-of-two scales (every product and partial sum exact even in
        the tensor cores' fp8 accumulation; the output rounded once), outputs poisoned first, tails
        included; then what they refuse. Hopper only (elsewhere: NotSupportedError)."""
        if torch.cuda.get_device_capability(self.dev) != (9, 0):
            with self.assertRaises(hiercoll.NotSupportedError):
                a = torch.zeros(16, 16, device=self.dev).to(torch.float8_e4m3fn)
                hiercoll.gemm(a, a.t())
            return
        one = lambda v: torch.tensor([v], dtype=torch.float32, device=self.dev)  # noqa: E731
        sa, sb = one(0.5), one(4.0)
        for m, n, k in ((1, 8, 16), (3, 12, 32), (130, 264, 144), (257, 520, 400)):
            for out_dtype in (torch.bfloat16, torch.float16):
                with self.subTest(m=m, n=n, k=k, out_dtype=out_dtype):
                    g = torch.Generator(device=self.dev)
                    g.manual_seed(m * 7 + k)
                    a = torch.randint(-1, 2, (m, k), device=self.dev, generator=g).float().to(torch.float8_e4m3fn)
                    w = torch.randint(-1, 2, (n, k), device=self.dev, generator=g).float().to(torch.float8_e4m3fn)
                    want = (a.double() @ w.double().t()) * 2.0
                    out = torch.full((m, n), float("nan"), dtype=out_dtype, device=self.dev)
                    got = hiercoll.gemm(a, w.t(), sa, sb, out_dtype=out_dtype, out=out)
                    torch.cuda.synchronize()
                    self.assertIs(got, out)
                    self.assertTrue(torch.equal(out, want.to(out_dtype)), f"{(out.double() - want).abs().max()}")
        # Row-wise and block-wise scales in torch._scaled_mm's shapes and layouts (block-wise scale_a
        # M-major, scale_b the transpose of a contiguous [N/128, K/128]), powers of two: the fp32 sums stay
        # exact, so the output is the exact product rounded once.
        for scaling in ("row", "block"):
            for m, n, k in ((3, 12, 32), (130, 264, 144), (257, 520, 400)):
                with self.subTest(scaling=scaling, m=m, n=n, k=k):
                    a, w, scale_a, scale_b, want = self._scaled_operands(scaling, m, n, k, m * 7 + k)
                    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=self.dev)
                    hiercoll.gemm(a, w.t(), scale_a, scale_b, out=out)
                    torch.cuda.synchronize()
                    self.assertTrue(torch.equal(out, want.to(torch.bfloat16)), f"{(out.double() - want).abs().max()}")
        with self.assertRaisesRegex(ValueError, "fit no scaling"):
            a, w, scale_a, scale_b, _ = self._scaled_operands("block", 130, 264, 144, 1)
            hiercoll.gemm(a, w.t(), scale_a.t(), scale_b)
        rows_per, n, k = 5, 136, 48
        m = rows_per * self.world
        with hiercoll.ReduceScatter2D(m, n, torch.bfloat16, overlap_with_gemm=True) as rs:
            for call in range(2):
                a_all, w_all = [], []
                for r in range(self.world):
                    g = torch.Generator(device=self.dev)
                    g.manual_seed(9000 * r + call)
                    a_all.append(torch.randint(-1, 2, (m, k), device=self.dev, generator=g).float().to(torch.float8_e4m3fn))
                    w_all.append(torch.randint(-1, 2, (n, k), device=self.dev, generator=g).float().to(torch.float8_e4m3fn))
                mine = slice(self.w.rank * rows_per, (self.w.rank + 1) * rows_per)
                want = sum(a.double() @ w.double().t() * 2.0 for a, w in zip(a_all, w_all))[mine]
                out = torch.full((rows_per, n), float("nan"), dtype=torch.bfloat16, device=self.dev)
                got = rs.scaled_matmul_reduce_scatter(a_all[self.w.rank], w_all[self.w.rank].t(), sa, sb, out)
                torch.cuda.synchronize()
                self.assertIs(got, out)
                self.assertTrue(torch.equal(out, want.to(torch.bfloat16)), f"call {call}: {(out.double() - want).abs().max()}")
            a8 = a_all[self.w.rank]
            for exc, text, fn in (
                (ValueError, "K-contiguous", lambda: rs.scaled_matmul_reduce_scatter(a8, w_all[0].t().contiguous(), sa, sb)),
                (ValueError, "float32", lambda: rs.scaled_matmul_reduce_scatter(a8, w_all[0].t(), sa.double(), sb)),
                (ValueError, "fit no scaling", lambda: rs.scaled_matmul_reduce_scatter(a8, w_all[0].t(), sa, sb[:0])),
                (TypeError, "float8_e4m3fn", lambda: rs.scaled_matmul_reduce_scatter(a8.float(), w_all[0].t(), sa, sb)),
            ):
                with self.subTest(text=text), self.assertRaisesRegex(exc, text):
                    fn()
        # Row- and block-wise scales through the GEMM + reduce-scatter: each rank's own scales; each rank's
        # product is exact in fp32 and rounded once to bf16, then summed over the ranks in bf16: within
        # (world + 1) bf16 roundings of the sum of the ranks' magnitudes.
        rows_per, n, k = 68, 264, 160
        m = rows_per * self.world
        with hiercoll.ReduceScatter2D(m, n, torch.bfloat16, overlap_with_gemm=True) as rs:
            for scaling in ("row", "block"):
                with self.subTest(scaling=scaling):
                    ops = [self._scaled_operands(scaling, m, n, k, 77 * r + 5, lo=-1, hi=1) for r in range(self.world)]
                    a, w, scale_a, scale_b, _ = ops[self.w.rank]
                    mine = slice(self.w.rank * rows_per, (self.w.rank + 1) * rows_per)
                    want = sum(o[4] for o in ops)[mine]
                    bound = (self.world + 1) * 2.0 ** -8 * sum(o[4].abs() for o in ops)[mine]
                    out = torch.full((rows_per, n), float("nan"), dtype=torch.bfloat16, device=self.dev)
                    rs.scaled_matmul_reduce_scatter(a, w.t(), scale_a, scale_b, out)
                    torch.cuda.synchronize()
                    err = (out.double() - want).abs()
                    self.assertFalse(bool(torch.isnan(out).any()), "output elements never written")
                    self.assertTrue(bool((err <= bound).all()), f"max error {err.max()}, bound there {bound.flatten()[err.argmax()]}")

    def _scaled_operands(self, scaling, m, n, k, seed, lo=-3, hi=3):
        """a [m, k] and w [n, k] float8_e4m3fn of -1, 0, 1; scale_a and scale_b (for a @ w.t()) of the scaling
        in torch._scaled_mm's shapes, powers of two from 2^lo to 2^hi; and the fp64 product."""
        g = torch.Generator(device=self.dev)
        g.manual_seed(seed)
        a = torch.randint(-1, 2, (m, k), device=self.dev, generator=g).float().to(torch.float8_e4m3fn)
        w = torch.randint(-1, 2, (n, k), device=self.dev, generator=g).float().to(torch.float8_e4m3fn)
        pow2 = lambda *shape: 2.0 ** torch.randint(lo, hi + 1, shape, device=self.dev, generator=g).float()  # noqa: E731
        kb, nb = -(-k // 128), -(-n // 128)
        if scaling == "row":
            sa, sw = pow2(m, 1), pow2(n, 1)
            scale_a, scale_b = sa, sw.t()
            ea, ew = sa.double(), sw.double()
        else:
            sa, sw = pow2(m, kb), pow2(nb, kb)
            scale_a, scale_b = sa.t().contiguous().t(), sw.t()
            ea = sa.double().repeat_interleave(128, dim=1)[:, :k]
            ew = sw.double().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:n, :k]
        return a, w, scale_a, scale_b, (a.double() * ea) @ (w.double() * ew).t()

    def test_bad_arguments(self):
        w = self.world
        m, n = 2 * w, 16
        with hiercoll.ReduceScatter2D(m, n, torch.bfloat16) as rs:
            x = torch.zeros(m, n, dtype=torch.bfloat16, device=self.dev)
            cases = [
                (TypeError, "torch.Tensor", lambda: rs.reduce_scatter([[0.0]])),
                (TypeError, "torch.float32", lambda: rs.reduce_scatter(x.float())),
                (ValueError, "cpu", lambda: rs.reduce_scatter(x.cpu())),
                (ValueError, "shape", lambda: rs.reduce_scatter(x[:, :-1])),
                (ValueError, "shape", lambda: rs.reduce_scatter(x.reshape(-1))),
                (ValueError, "max_m", lambda: rs.reduce_scatter(torch.zeros(2 * m, n, dtype=torch.bfloat16, device=self.dev))),
                (ValueError, "contiguous", lambda: rs.reduce_scatter(torch.zeros(n, m, dtype=torch.bfloat16, device=self.dev).t())),
                (ValueError, "shape", lambda: rs.reduce_scatter(x, torch.empty(m // w + 1, n, dtype=torch.bfloat16, device=self.dev))),
                (TypeError, "torch.int32", lambda: rs.reduce_scatter(x, torch.empty(m // w, n, dtype=torch.int32, device=self.dev))),
                # Caught by the library: the output inside the input.
                (hiercoll.InvalidArgumentError, "overlaps", lambda: rs.reduce_scatter(x, x[: m // w])),
            ]
            if w > 1:
                cases.append((ValueError, "divisible", lambda: rs.reduce_scatter(x[: m - 1])))
            for exc, text, fn in cases:
                with self.subTest(text=text), self.assertRaisesRegex(exc, text):
                    fn()
            with self.assertRaises(hiercoll.InvalidArgumentError):
                rs.signal_addr(w)
        with self.assertRaises(hiercoll.ClosedError):
            rs.reduce_scatter(x)

    def test_host_overhead(self):
        """Prints the host time per enqueue-only call (not asserted: machines differ)."""
        m, n, batch, rounds = self.world, 8, 20, 25
        x = torch.ones(m, n, dtype=torch.bfloat16, device=self.dev)
        out = torch.empty(1, n, dtype=torch.bfloat16, device=self.dev)
        with hiercoll.ReduceScatter2D(m, n, torch.bfloat16) as rs:
            for _ in range(batch):
                rs.reduce_scatter(x, out)
            per_call = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(batch):
                    rs.reduce_scatter(x, out)
                per_call.append((time.perf_counter() - t0) / batch)
                torch.cuda.synchronize()
        per_call.sort()
        print(f"\nhiercoll: host time per reduce_scatter call: {per_call[len(per_call) // 2] * 1e6:.1f} µs (median)")


if __name__ == "__main__":
    unittest.main()
