"""hiercoll in a production PyTorch setting: the store bootstrap, CUDA graphs, torch.compile.

Skips without torch, without a GPU, or without the library. Runs as one process (a world of one
rank) or under torchrun, with every rank on its GPU or several ranks sharing one; torch.distributed
is initialised with gloo (NCCL refuses ranks that share a GPU), and hiercoll.init() rendezvouses
through its store:

    pytest python/tests/test_torch_graphs.py
    HIERCOLL_DEVICE=0 torchrun --nproc-per-node 2 -m pytest python/tests/test_torch_graphs.py
"""

import os
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # torch_job

for _name, _off in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(_name, _off)

import hiercoll  # noqa: E402
from torch_job import library_ok, one_rank_env  # noqa: E402

try:
    import torch
    import torch.distributed as dist
except ImportError:  # the tests below skip
    torch = None

REPLAYS = 100


@unittest.skipIf(torch is None, "torch is not installed")
@unittest.skipIf(torch is not None and not torch.cuda.is_available(), "no CUDA GPU")
@unittest.skipUnless(library_ok(), "libhiercoll.so is not built (scripts/build-capi.sh)")
class TorchProductionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        one_rank_env()
        device = int(os.environ.get("HIERCOLL_DEVICE", os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device % torch.cuda.device_count())
        torch.zeros(1, device="cuda")
        if not dist.is_initialized():
            dist.init_process_group("gloo")
        cls.w = hiercoll.init()  # through torch.distributed's store
        cls.dev = torch.device("cuda", torch.cuda.current_device())
        cls.world = cls.w.size

    def inputs(self, dtype, m, n, seed):
        """This rank's input of a call and the expected output (every rank makes every rank's input)."""
        xs = []
        for r in range(self.world):
            g = torch.Generator(device=self.dev)
            g.manual_seed(100003 * seed + r)
            xs.append(torch.randint(-64, 64, (m, n), device=self.dev, generator=g).to(dtype))
        rows = slice(self.w.rank * (m // self.world), (self.w.rank + 1) * (m // self.world))
        return xs[self.w.rank], sum(x[rows].double() for x in xs)

    def test_store_bootstrap(self):
        n = hiercoll.world._rendezvous  # this process's store rendezvous so far
        if n == 0:
            # An earlier test module's hiercoll.init() joined before torch.distributed was
            # initialised (the whole suite in one process): the store was never used, and a
            # get of its keys would wait for the store's timeout.
            self.skipTest("hiercoll joined without a store in this process; run this file alone or under torchrun")
        store = dist.distributed_c10d._get_default_store()
        addr = store.get(f"hiercoll/rendezvous/{n}/addr").decode()
        secret = store.get(f"hiercoll/rendezvous/{n}/secret").decode()
        self.assertRegex(secret, r"^[0-9a-f]{64}$")
        self.assertRegex(addr, r"^[0-9a-f]{16} closed$", "rank 0 marks the address closed once every rank joined")
        self.assertIs(hiercoll.init(), self.w)

    def test_graph_reduce_scatter(self):
        """reduce_scatter captured in a torch.cuda.graph, replayed 100 times on fresh inputs with the
        output poisoned before each (small integers: every sum exact), with eager calls between."""
        m, n = 4 * self.world, 136
        for dtype in (torch.bfloat16, torch.int32):
            with self.subTest(dtype=dtype), hiercoll.ReduceScatter2D(m, n, dtype, graphs=True) as rs:
                x = torch.zeros(m, n, dtype=dtype, device=self.dev)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    rs.reduce_scatter(x)  # warm-up, as torch.cuda.graph recommends
                torch.cuda.current_stream().wait_stream(side)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = rs.reduce_scatter(x)
                for i in range(REPLAYS):
                    fresh, want = self.inputs(dtype, m, n, i)
                    x.copy_(fresh)
                    out.fill_(-7)
                    g.replay()
                    torch.cuda.synchronize()
                    self.assertTrue(torch.equal(out.double(), want), f"replay {i}")
                    if i % 10 == 9:
                        fresh, want = self.inputs(dtype, m, n, 1000 + i)
                        got = rs.reduce_scatter(fresh)
                        torch.cuda.synchronize()
                        self.assertTrue(torch.equal(got.double(), want), f"eager call after replay {i}")

    def test_capture_refused_without_graphs(self):
        m, n = self.world, 8
        with hiercoll.ReduceScatter2D(m, n, torch.float32) as rs:
            x = torch.zeros(m, n, device=self.dev)
            rs.reduce_scatter(x)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with self.assertRaisesRegex(hiercoll.InvalidArgumentError, "graphs=True"):
                with torch.cuda.graph(g):
                    rs.reduce_scatter(x, torch.empty(1, n, device=self.dev))
            out = rs.reduce_scatter(x + 1)  # still usable
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(out, torch.full((1, n), float(self.world), device=self.dev)))

    def test_graph_matmul_reduce_scatter(self):
        """matmul_reduce_scatter (torch.mm on a side stream raising the GEMM signals, the scatter
        waiting for them) captured and replayed 100 times on fresh a and b."""
        k, n, rows_per = 24, 136, 3
        m = rows_per * self.world
        for dtype in (torch.bfloat16, torch.float32):
            with self.subTest(dtype=dtype), \
                    hiercoll.ReduceScatter2D(m, n, dtype, overlap_with_gemm=True, graphs=True) as rs:
                a = torch.zeros(m, k, dtype=dtype, device=self.dev)
                b = torch.zeros(k, n, dtype=dtype, device=self.dev)
                out = torch.empty(rows_per, n, dtype=dtype, device=self.dev)
                rs.matmul_reduce_scatter(a, b, out)  # warm-up: the context's product buffer and stream
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    rs.matmul_reduce_scatter(a, b, out)
                for i in range(REPLAYS):
                    a_all, b_all = [], []
                    for r in range(self.world):
                        gen = torch.Generator(device=self.dev)
                        gen.manual_seed(7919 * i + r)
                        a_all.append(torch.randint(-1, 2, (m, k), device=self.dev, generator=gen).to(dtype))
                        b_all.append(torch.randint(-1, 2, (k, n), device=self.dev, generator=gen).to(dtype))
                    mine = slice(self.w.rank * rows_per, (self.w.rank + 1) * rows_per)
                    want = sum(x.double() @ y.double() for x, y in zip(a_all, b_all))[mine]
                    a.copy_(a_all[self.w.rank])
                    b.copy_(b_all[self.w.rank])
                    out.fill_(float("nan"))
                    g.replay()
                    torch.cuda.synchronize()
                    self.assertTrue(torch.equal(out.double(), want), f"replay {i}")

    def test_compile_row_parallel_linear(self):
        """A row-parallel Linear (this rank's share of the inner dimension) followed by the
        reduce-scatter, compiled with fullgraph=True and with mode="reduce-overhead" (CUDA graphs),
        matches eager on fresh inputs; the operators have fake implementations."""
        m, k, n = 8 * self.world, 32, 64
        with hiercoll.ReduceScatter2D(m, n, torch.float32, graphs=True) as rs:
            linear = torch.nn.Linear(k, n, bias=False, device=self.dev)
            with torch.no_grad():
                linear.weight.copy_(torch.randint(-2, 3, (n, k), device=self.dev).float())

            def step(x):
                return rs.reduce_scatter(linear(x))

            for mode in (None, "reduce-overhead"):
                with self.subTest(mode=mode):
                    torch._dynamo.reset()
                    compiled = torch.compile(step, fullgraph=True, mode=mode)
                    for i in range(6):
                        gen = torch.Generator(device=self.dev)
                        gen.manual_seed(31 * i + self.w.rank)
                        x = torch.randint(-2, 3, (m, k), device=self.dev, generator=gen).float()
                        with torch.no_grad():
                            want = step(x).clone()
                            got = compiled(x).clone()
                        torch.cuda.synchronize()
                        self.assertTrue(torch.equal(got, want), f"{mode} call {i}")

    def test_compile_matmul_reduce_scatter(self):
        m, k, n = 4 * self.world, 16, 40
        with hiercoll.ReduceScatter2D(m, n, torch.float32, overlap_with_gemm=True, graphs=True) as rs:
            compiled = torch.compile(lambda a, b: rs.matmul_reduce_scatter(a, b), fullgraph=True)
            for i in range(3):
                gen = torch.Generator(device=self.dev)
                gen.manual_seed(17 * i + self.w.rank)
                a = torch.randint(-2, 3, (m, k), device=self.dev, generator=gen).float()
                b = torch.randint(-2, 3, (k, n), device=self.dev, generator=gen).float()
                want = rs.matmul_reduce_scatter(a, b).clone()
                got = compiled(a, b)
                torch.cuda.synchronize()
                self.assertTrue(torch.equal(got, want), f"call {i}")

    def test_fake_implementations(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with hiercoll.ReduceScatter2D(2 * self.world, 8, torch.float32, overlap_with_gemm=True) as rs:
            with FakeTensorMode():
                x = torch.empty(2 * self.world, 8, device=self.dev)
                out = torch.ops.hiercoll.reduce_scatter(x, rs.handle)
                self.assertEqual(tuple(out.shape), (2, 8))
                a, b = torch.empty(2 * self.world, 5, device=self.dev), torch.empty(5, 8, device=self.dev)
                out = torch.ops.hiercoll.matmul_reduce_scatter(a, b, rs.handle)
                self.assertEqual(tuple(out.shape), (2, 8))
                self.assertEqual(out.device, self.dev)


if __name__ == "__main__":
    unittest.main()
