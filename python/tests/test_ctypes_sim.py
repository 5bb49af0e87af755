"""The C ABI through ctypes on simulated GPUs: no torch, no GPU needed.

Skips when libhiercoll.so is not built (scripts/build-capi.sh, or HIERCOLL_LIB).
Runs under pytest or `python3 -m unittest` (with python/ on PYTHONPATH).
"""

import array
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import hiercoll  # noqa: E402
from hiercoll import _lib  # noqa: E402


def _library_or_skip():
    try:
        return hiercoll.library_path()
    except hiercoll.NotSupportedError as e:
        raise unittest.SkipTest(str(e))


def _inputs(rank, call, count):
    return array.array("i", [((rank + 1) * 1000 + call * 100 + i * 7) % 20011 - 10000 for i in range(count)])


class CtypesSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        _library_or_skip()

    def test_abi_version(self):
        self.assertEqual(_lib.lib().hc_abi_version(), hiercoll.ABI_VERSION)

    def test_world1_reduce_scatter(self):
        (w,) = hiercoll.sim_world(1, 1)
        try:
            self.assertEqual((w.rank, w.size, w.local_rank, w.local_size, w.backend), (0, 1, 0, 1, "sim"))
            m, n = 6, 3
            with hiercoll.ReduceScatter2D(m, n, "int32", world=w) as rs:
                self.assertEqual(rs.consumption_order(), [0])
                self.assertEqual(rs.signal_value(), 1)
                self.assertNotEqual(rs.signal_addr(0), 0)
                src, dst = w.alloc(m * n * 4), w.alloc(m * n * 4)
                for call in range(3):
                    x = _inputs(0, call, m * n)
                    w.copy_to_device(src, x)
                    rs.reduce_scatter_ptr(src, m, dst)  # the rank's default stream
                    w.stream_synchronize(0, timeout=20)
                    got = array.array("i", bytes(w.copy_to_host(dst, m * n * 4)))
                    self.assertEqual(got, x)  # world 1: the sum of one rank
                    self.assertEqual(rs.signal_value(), call + 2)
                with self.assertRaises(hiercoll.InvalidArgumentError) as cm:
                    rs.reduce_scatter_ptr(src, m + 1, dst)
                self.assertIsInstance(cm.exception, ValueError)
                self.assertIn("exceeds MaxM", str(cm.exception))
                self.assertEqual(cm.exception.code, _lib.HC_ERR_INVALID)
                with self.assertRaises(hiercoll.InvalidArgumentError):
                    rs.signal_addr(1)
                w.free(src)
                w.free(dst)
            self.assertEqual(rs.handle, 0)
            with self.assertRaises(hiercoll.ClosedError):
                rs.reduce_scatter_ptr(1, 1, 2)
            rs.close()  # idempotent
        finally:
            w.close()
        self.assertTrue(w.closed)
        with self.assertRaises(hiercoll.ClosedError):
            w.alloc(8)

    def test_gemm_e4m3(self):
        """hc_gemm with fp8 operands and per-tensor scales into bf16 on a
        simulated rank: small integers make the result exact."""
        import struct
        (w,) = hiercoll.sim_world(1, 1)
        try:
            e4m3 = {-1: 0xB8, 0: 0x00, 1: 0x38, 2: 0x40}  # the e4m3 codes of these values
            m, n, k = 2, 3, 16
            a = [[(i * 5 + kk * 3) % 4 - 1 for kk in range(k)] for i in range(m)]
            wt = [[(j * 7 + kk) % 4 - 1 for kk in range(k)] for j in range(n)]  # b = wt^T, [n, k] row-major
            pa, pb, pc, ps = w.alloc(m * k), w.alloc(n * k), w.alloc(m * n * 2), w.alloc(8)
            w.copy_to_device(pa, bytes(e4m3[v] for row in a for v in row))
            w.copy_to_device(pb, bytes(e4m3[v] for row in wt for v in row))
            w.copy_to_device(pc, b"\xff" * (m * n * 2))  # NaN poison
            w.copy_to_device(ps, struct.pack("<ff", 0.5, 3.0))
            _lib.check(_lib.lib().hc_gemm(w.handle, _lib.HC_E4M3, pa, 0, pb, 0, _lib.HC_B_NK, ps, ps + 4,
                                          _lib.HC_BF16, pc, 0, m, n, k, 0, 0))
            w.stream_synchronize(0, timeout=20)
            got = bytes(w.copy_to_host(pc, m * n * 2))
            for i in range(m):
                for j in range(n):
                    want = 1.5 * sum(a[i][kk] * wt[j][kk] for kk in range(k))
                    bf16 = got[2 * (i * n + j):2 * (i * n + j) + 2]
                    self.assertEqual(struct.unpack("<f", b"\x00\x00" + bf16)[0], want, (i, j))
            with self.assertRaises(hiercoll.NotSupportedError):  # fp8 wants b [n, k]
                _lib.check(_lib.lib().hc_gemm(w.handle, _lib.HC_E4M3, pa, 0, pb, 0, _lib.HC_B_KN, 0, 0,
                                              _lib.HC_BF16, pc, 0, m, n, k, 0, 0))
            for p in (pa, pb, pc, ps):
                w.free(p)
        finally:
            w.close()

    def test_gemm_ex_scalings(self):
        """hc_gemm_ex with fp8 operands into bf16 on a simulated rank, row-wise and block-wise scales
        (powers of two, K over two 128-deep blocks, N over two 128-column blocks) in the kernels' layout:
        every fp32 sum is exact, so each element is the exact scaled product rounded once to bf16."""
        import struct
        (w,) = hiercoll.sim_world(1, 1)
        try:
            e4m3 = {-1: 0xB8, 0: 0x00, 1: 0x38}
            m, n, k = 3, 136, 160
            kb, nb = 2, 2
            a = [[(i * 5 + kk * 3) % 3 - 1 for kk in range(k)] for i in range(m)]
            wt = [[(j * 7 + kk) % 3 - 1 for kk in range(k)] for j in range(n)]  # b = wt^T, [n, k] row-major
            for code, sa, sb, scale in (
                (_lib.HC_SCALE_ROW, [2.0 ** (i - 1) for i in range(m)], [2.0 ** (j % 5 - 2) for j in range(n)],
                 lambda i, j, kk, sa, sb: sa[i] * sb[j]),
                # block-wise: scale_a [kb, m] (block (i, q) at q*m + i), scale_b [nb, kb]
                (_lib.HC_SCALE_BLOCK, [2.0 ** ((q * 3 + i) % 4 - 2) for q in range(kb) for i in range(m)],
                 [2.0 ** (p - q) for p in range(nb) for q in range(kb)],
                 lambda i, j, kk, sa, sb: sa[kk // 128 * m + i] * sb[j // 128 * kb + kk // 128]),
            ):
                pa, pb, pc = w.alloc(m * k), w.alloc(n * k), w.alloc(m * n * 2)
                ps, pt = w.alloc(4 * len(sa)), w.alloc(4 * len(sb))
                w.copy_to_device(pa, bytes(e4m3[v] for row in a for v in row))
                w.copy_to_device(pb, bytes(e4m3[v] for row in wt for v in row))
                w.copy_to_device(pc, b"\xff" * (m * n * 2))  # NaN poison
                w.copy_to_device(ps, struct.pack(f"<{len(sa)}f", *sa))
                w.copy_to_device(pt, struct.pack(f"<{len(sb)}f", *sb))
                _lib.check(_lib.lib().hc_gemm_ex(w.handle, _lib.HC_E4M3, pa, 0, pb, 0, _lib.HC_B_NK, code, ps, pt,
                                                 _lib.HC_BF16, pc, 0, m, n, k, 0, 0))
                w.stream_synchronize(0, timeout=20)
                got = bytes(w.copy_to_host(pc, m * n * 2))
                for i in range(m):
                    for j in range(n):
                        want = sum(a[i][kk] * wt[j][kk] * scale(i, j, kk, sa, sb) for kk in range(k))
                        v = struct.unpack("<f", b"\x00\x00" + got[2 * (i * n + j):2 * (i * n + j) + 2])[0]
                        self.assertLessEqual(abs(v - want), abs(want) * 2.0 ** -8, (code, i, j, v, want))
                with self.assertRaises(hiercoll.InvalidArgumentError):  # one fp32 short of b's scales
                    _lib.check(_lib.lib().hc_gemm_ex(w.handle, _lib.HC_E4M3, pa, 0, pb, 0, _lib.HC_B_NK, code, ps,
                                                     pt + 4, _lib.HC_BF16, pc, 0, m, n, k, 0, 0))
                for p in (pa, pb, pc, ps, pt):
                    w.free(p)
            with self.assertRaises(hiercoll.InvalidArgumentError):
                _lib.check(_lib.lib().hc_gemm_ex(w.handle, _lib.HC_E4M3, 4096, 0, 8192, 0, _lib.HC_B_NK, 3, 0, 0,
                                                 _lib.HC_BF16, 16384, 0, m, n, k, 0, 0))
        finally:
            w.close()

    def test_2x2_threads(self):
        """A 2 x 2 world, one Python thread per rank (ctypes releases the GIL)."""
        ranks = hiercoll.sim_world(2, 2)
        world, rows_per, n = 4, 2, 5
        m = world * rows_per

        def rank_main(w):
            s = w.stream_create()
            self.split_first_block(w, s, m, n)
            with hiercoll.ReduceScatter2D(m, n, "int32", overlap_with_gemm=True, world=w) as rs:
                order = rs.consumption_order()
                self.assertEqual(sorted(order), list(range(world)))
                self.assertEqual(order[-1], w.rank)
                src, dst = w.alloc(m * n * 4), w.alloc(rows_per * n * 4)
                for call in range(3):
                    if call == 2:
                        # Signals raised for calls that are then rejected by the library, or given up
                        # by the caller (skip_call), release nothing later.
                        v = rs.signal_value()
                        for dest in order:
                            rs.raise_signal(dest, stream=s)
                        with self.assertRaisesRegex(ValueError, "not divisible by world size 4"):
                            rs.reduce_scatter_ptr(src, m - 1, dst, stream=s)
                        self.assertEqual(rs.signal_value(), v + 2)
                        rs.skip_call()
                        self.assertEqual(rs.signal_value(), v + 4)
                    self.checked_call(w, rs, s, order, call, src, dst, m, n)
            w.stream_destroy(s)

        self.run_ranks(ranks, rank_main)

    def test_pull_zero_copy_1x4_threads(self):
        """engine="pull": rows written into the context's symmetric input (input_ptr) and passed
        as the input are summed in place; a plain buffer works too (copied in first). int32 against
        the sum computed here, several calls in a row."""
        ranks = hiercoll.sim_world(1, 4)
        world, rows_per, n = 4, 3, 5
        m = world * rows_per

        def rank_main(w):
            s = w.stream_create()
            with hiercoll.ReduceScatter2D(m, n, "int32", world=w, engine="pull") as rs:
                sym, own, dst = rs.input_ptr(), w.alloc(m * n * 4), w.alloc(rows_per * n * 4)
                self.assertNotEqual(sym, 0)
                for call in range(4):
                    self.check_int32_call(w, rs, s, call, sym if call % 2 == 0 else own, dst, world, rows_per, n)
            with hiercoll.ReduceScatter2D(m, n, "int32", world=w, overlap_with_gemm=True) as rs:
                # The copy engine has no symmetric input: this is its small products' context's (ABI 9).
                self.assertNotEqual(rs.input_ptr(), 0)
            with hiercoll.ReduceScatter2D(m, n, "int32", world=w) as rs:
                self.assertNotEqual(rs.input_ptr(), 0)  # the default engine here: pull
            w.stream_destroy(s)

        self.run_ranks(ranks, rank_main)
        (w,) = hiercoll.sim_world(1, 1)
        with self.assertRaisesRegex(ValueError, "engine"):
            hiercoll.ReduceScatter2D(m, n, "int32", world=w, engine="ring")
        w.close()

    def test_pull_registered_1x4_threads(self):
        """engine="pull": two buffers registered at offsets of one allocation (register_ptr,
        collective) are summed in place, int32 against the sum computed here over calls in a row,
        and nothing is copied into the symmetric input (it keeps the bytes written there first);
        deregistered, a buffer is still right (these small calls go in one shot, which reads each
        rank's own buffer in place, registered or not: still nothing copied in). Registering on another
        engine (overlap_with_gemm's copy engine) is NotSupportedError; a size that is not whole rows is
        InvalidArgumentError on every rank."""
        ranks = hiercoll.sim_world(1, 4)
        world, rows_per, n = 4, 3, 5
        m = world * rows_per
        nbytes = m * n * 4

        def rank_main(w):
            s = w.stream_create()
            seg, dst = w.alloc(4096), w.alloc(rows_per * n * 4)
            bufs = [seg + 256, seg + 2048]
            with hiercoll.ReduceScatter2D(m, n, "int32", world=w, overlap_with_gemm=True) as rs:
                with self.assertRaises(hiercoll.NotSupportedError):  # the copy engine
                    rs.register_ptr(bufs[0], nbytes)
            with hiercoll.ReduceScatter2D(m, n, "int32", world=w, engine="pull") as rs:
                with self.assertRaises(hiercoll.InvalidArgumentError):
                    rs.register_ptr(bufs[0], nbytes - 4)
                sym = rs.input_ptr()
                pattern = bytes([0xA5, w.rank, 0x5A, 0x01]) * (nbytes // 4)
                w.copy_to_device(sym, pattern)
                for b in bufs:
                    rs.register_ptr(b, nbytes)

                def call(c, src):
                    self.check_int32_call(w, rs, s, c, src, dst, world, rows_per, n)

                for c in range(6):
                    call(c, bufs[c % 2])
                self.assertEqual(bytes(w.copy_to_host(sym, nbytes)), pattern, "the symmetric input was written")
                rs.deregister_ptr(bufs[0])
                with self.assertRaises(hiercoll.InvalidArgumentError):
                    rs.deregister_ptr(bufs[0])
                call(6, bufs[0])
                self.assertEqual(bytes(w.copy_to_host(sym, nbytes)), pattern, "a call in one shot copied its input in")
            w.stream_destroy(s)

        self.run_ranks(ranks, rank_main)

    def check_int32_call(self, w, rs, s, call, src, dst, world, rows_per, n, msg=None, before=None):
        """Writes rank w's int32 rows of call (_inputs) at src, runs before() (a producer's signals)
        where given, reduce-scatters them into dst on stream s, and checks this rank's rows against
        the sum over the ranks computed here."""
        m = world * rows_per
        w.copy_to_device(src, _inputs(w.rank, call, m * n))
        if before is not None:
            before()
        rs.reduce_scatter_ptr(src, m, dst, stream=s)
        w.stream_synchronize(s, timeout=20)
        got = array.array("i", bytes(w.copy_to_host(dst, rows_per * n * 4)))
        base = w.rank * rows_per * n
        want = [sum(_inputs(r, call, m * n)[base + j] for r in range(world)) for j in range(rows_per * n)]
        self.assertEqual(list(got), want, msg or f"call {call}")

    def run_ranks(self, ranks, rank_main):
        """Runs rank_main(w) for every rank of a simulated world, one Python thread each (ctypes
        releases the GIL), closes each rank (which frees what it allocated), and fails the test with
        every rank's error."""
        errors = []

        def run(w):
            try:
                rank_main(w)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(f"rank {w.rank}: {e!r}")
            finally:
                try:
                    w.close()
                except BaseException as e:  # noqa: BLE001
                    errors.append(f"rank {w.rank} close: {e!r}")

        threads = [threading.Thread(target=run, args=(w,)) for w in ranks]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertFalse(any(t.is_alive() for t in threads), "a rank did not finish")
        self.assertEqual(errors, [])

    def checked_call(self, w, rs, s, order, call, src, dst, m, n, msg=None, early=False):
        """One overlapped int32 call on fresh inputs: the producer's signals to every destination
        (with early, first the early signal of the split first block), the call, and this rank's
        rows against the sum computed here."""
        def signals():  # the GEMM producer's
            if early:
                rs.raise_early(order[0], stream=s)
            for dest in order:
                rs.raise_signal(dest, stream=s)

        self.check_int32_call(w, rs, s, call, src, dst, len(order), m // len(order), n, msg, signals)

    def split_first_block(self, w, s, m, n):
        """A rank of a split_first_block context: the first block in consumption order goes in two
        parts, the first after the early signal (without it the scatter would wait forever)."""
        rows_per = m // 4
        with hiercoll.ReduceScatter2D(m, n, "int32", overlap_with_gemm=True, split_first_block=True, world=w) as rs:
            self.assertEqual(rs.early_rows(m), rows_per // 2)
            self.assertNotEqual(rs.early_signal_addr(0), 0)
            order = rs.consumption_order()
            src, dst = w.alloc(m * n * 4), w.alloc(rows_per * n * 4)
            self.checked_call(w, rs, s, order, 7, src, dst, m, n, early=True)
            w.free(src)
            w.free(dst)
        with self.assertRaises(hiercoll.InvalidArgumentError):  # an early signal needs GEMM overlap
            hiercoll.ReduceScatter2D(m, n, "int32", split_first_block=True, world=w)

    def test_argument_errors(self):
        (w,) = hiercoll.sim_world(1, 1)
        try:
            with self.assertRaises(TypeError):
                hiercoll.ReduceScatter2D(4, 4, "float64", world=w)
            with self.assertRaises(TypeError):
                hiercoll.ReduceScatter2D(4.0, 4, "bf16", world=w)
            with self.assertRaisesRegex(hiercoll.InvalidArgumentError, "max_m=0"):
                hiercoll.ReduceScatter2D(0, 4, "bf16", world=w)
            with self.assertRaisesRegex(hiercoll.InvalidArgumentError, "was not made by hc_stream_create"):
                w.stream_synchronize(0x1234)
            rs = hiercoll.ReduceScatter2D(4, 4, "bf16", world=w)
            try:
                with self.assertRaises(ValueError):  # torch tensors need a CUDA rank
                    rs.reduce_scatter(None)
                v = rs.signal_value()
                rs.skip_call()  # nothing without overlap_with_gemm
                self.assertEqual(rs.signal_value(), v)
                with hiercoll.ReduceScatter2D(4, 4, "bf16", overlap_with_gemm=True, world=w) as ro:
                    v = ro.signal_value()
                    with self.assertRaises(ValueError):  # rejected by the package's own checks
                        ro.reduce_scatter(None)
                    self.assertEqual(ro.signal_value(), v + 2)
                with self.assertRaisesRegex(hiercoll.InvalidArgumentError, "destroy them before closing"):
                    w.close()
                self.assertFalse(w.closed)
            finally:
                rs.close()
        finally:
            w.close()
        with self.assertRaisesRegex(hiercoll.InvalidArgumentError, "both must be positive"):
            hiercoll.sim_world(0, 1)

    def test_dtype_codes(self):
        for name, code in [("bf16", 1), ("bfloat16", 1), ("float16", 2), ("half", 2), ("fp32", 3), ("int32", 4)]:
            self.assertEqual(hiercoll.dtype_code(name), code)
        with self.assertRaises(TypeError):
            hiercoll.dtype_code("int64")

    def test_library_candidates(self):
        old = os.environ.get(_lib.ENV_LIB)
        os.environ[_lib.ENV_LIB] = "/nonexistent/libhiercoll.so"
        try:
            with self.assertRaisesRegex(hiercoll.NotSupportedError, "names a missing file"):
                hiercoll.library_path()
        finally:
            if old is None:
                del os.environ[_lib.ENV_LIB]
            else:
                os.environ[_lib.ENV_LIB] = old

    def test_graphs_2x2_threads(self):
        """A context made with graphs=True on a 2 x 2 world: every call's signal value is 1, calls
        stay correct over many calls, and a given-up call's signals are cleared (clear_signals),
        not passed over."""
        ranks = hiercoll.sim_world(2, 2)
        world, rows_per, n = 4, 2, 3
        m = world * rows_per

        def rank_main(w):
            s = w.stream_create()
            with hiercoll.ReduceScatter2D(m, n, "int32", overlap_with_gemm=True, graphs=True, world=w) as rs:
                self.assertTrue(rs.graphs)
                order = rs.consumption_order()
                src, dst = w.alloc(m * n * 4), w.alloc(rows_per * n * 4)
                for call in range(20):
                    self.assertEqual(rs.signal_value(), 1)
                    if call == 5:  # a call given up after its signals were raised
                        for dest in order:
                            rs.raise_signal(dest, stream=s)
                        rs.skip_call()
                        rs.clear_signals(stream=s)
                        self.assertEqual(rs.signal_value(), 1)
                    self.checked_call(w, rs, s, order, call, src, dst, m, n, f"call {call}")
            w.stream_destroy(s)

        self.run_ranks(ranks, rank_main)

    def test_store_rendezvous(self):
        """hiercoll.init(store=...) in two processes sharing a store (a directory here, torch's
        store under torch.distributed): rank 0 publishes a fresh secret and its address, rank 1
        reads them, and they meet. Without a GPU each then fails opening its GPU, which comes
        after the rendezvous: a rendezvous that failed would be a timeout or a store error."""
        with tempfile.TemporaryDirectory() as d:
            procs = [_rank_process(r, 2, d) for r in range(2)]
            outs = [p.communicate(timeout=120)[0] for p in procs]
            for r, out in enumerate(outs):
                self.assertRegex(out, r"RESULT (joined world of 2|no GPU after the rendezvous)", f"rank {r}: {out}")
            secret = pathlib.Path(d, _key("hiercoll/rendezvous/1/secret")).read_text()
            self.assertRegex(secret, r"^[0-9a-f]{64}$")
            # Once the rendezvous has ended, rank 0 marks its address closed.
            addr = pathlib.Path(d, _key("hiercoll/rendezvous/1/addr")).read_text()
            self.assertRegex(addr, r"^[0-9a-f]{16} closed$")

    def test_store_errors_reach_the_caller(self):
        """A store that fails: the rank's error carries the store's own message."""
        with tempfile.TemporaryDirectory() as d:
            p = _rank_process(1, 2, d, broken=True)
            out = p.communicate(timeout=120)[0]
            self.assertIn("RESULT error", out)
            self.assertIn("the store is down", out)

    def test_operator_shapes(self):
        from hiercoll import ops
        self.assertEqual(ops.scattered_shape(12, 5, 4), (3, 5))
        self.assertEqual(ops.matmul_scattered_shape((8, 3), (3, 7), 2), (4, 7))


def _key(k):
    return k.replace("/", "%")


class DirStore:
    """torch's store API over files in a directory, for processes on one host."""

    def __init__(self, path, broken=False):
        self.path, self.broken = pathlib.Path(path), broken

    def set(self, key, value):
        if self.broken:
            raise RuntimeError("the store is down")
        tmp = self.path / (_key(key) + ".tmp")
        tmp.write_bytes(value if isinstance(value, bytes) else value.encode())
        tmp.rename(self.path / _key(key))

    def wait(self, keys, timeout):
        if self.broken:
            raise RuntimeError("the store is down")
        end = time.monotonic() + timeout.total_seconds()
        while not all((self.path / _key(k)).exists() for k in keys):
            if time.monotonic() > end:
                raise TimeoutError(f"{keys} not set within {timeout}")
            time.sleep(0.01)

    def get(self, key):
        return (self.path / _key(key)).read_bytes()


def _rank_process(rank, size, store_dir, broken=False):
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(size))
    return subprocess.Popen([sys.executable, __file__, "rank", store_dir, "broken" if broken else "ok"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _rank_main(store_dir, broken):
    """One rank of test_store_rendezvous: prints RESULT and what happened."""
    try:
        w = hiercoll.init(store=DirStore(store_dir, broken == "broken"), host="127.0.0.1")
        print(f"RESULT joined world of {w.size}", flush=True)
        hiercoll.finalize()
    except hiercoll.NotSupportedError as e:
        ok = "GPU" in str(e) or "CUDA" in str(e)
        print(f"RESULT {'no GPU after the rendezvous' if ok else 'error'}: {e}", flush=True)
    except hiercoll.HiercollError as e:
        print(f"RESULT error: {e}", flush=True)


if __name__ == "__main__" and sys.argv[1:2] == ["rank"]:
    _rank_main(sys.argv[2], sys.argv[3])
    sys.exit(0)


if __name__ == "__main__":
    unittest.main()
