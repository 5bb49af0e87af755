"""ReduceScatter2D on torch tensors (or raw device pointers)."""

import ctypes
import sys

from . import _lib, ops
from . import scaling as _scaling
from ._lib import check, lib
from .world import init

# Names accepted for dtype, by C ABI code.
_DTYPE_NAMES = {
    "bf16": _lib.HC_BF16, "bfloat16": _lib.HC_BF16,
    "fp16": _lib.HC_F16, "f16": _lib.HC_F16, "float16": _lib.HC_F16, "half": _lib.HC_F16,
    "fp32": _lib.HC_F32, "f32": _lib.HC_F32, "float32": _lib.HC_F32, "float": _lib.HC_F32,
    "int32": _lib.HC_I32, "i32": _lib.HC_I32, "int": _lib.HC_I32,
}
_CANONICAL = {_lib.HC_BF16: "bfloat16", _lib.HC_F16: "float16", _lib.HC_F32: "float32", _lib.HC_I32: "int32"}

_torch = None
_raw_stream = None
_compiling = None

def _import_torch():
    """torch, imported on first need (the package works without it), with the
    operators of ops.py registered."""
    global _torch, _raw_stream, _compiling
    if _torch is None:
        import torch
        # The current stream's CUstream as an int without building a
        # torch.cuda.Stream object: what Triton and Inductor use.
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = raw if raw is not None else (lambda i: torch.cuda.current_stream(i).cuda_stream)
        compiler = getattr(torch, "compiler", None)
        _compiling = getattr(compiler, "is_compiling", None) or (lambda: False)
        ops.register(torch)
        _torch = torch
    return _torch


def dtype_code(dtype):
    """The HC_* code of a torch dtype or a name (bf16, float16, float32, int32, ...)."""
    if isinstance(dtype, str):
        code = _DTYPE_NAMES.get(dtype.strip().lower())
        if code is None:
            raise TypeError(f"hiercoll: unknown dtype {dtype!r} (want bfloat16, float16, float32 or int32)")
        return code
    name = str(dtype)
    if name.startswith("torch."):
        code = _DTYPE_NAMES.get(name[len("torch."):])
        if code is not None:
            return code
    raise TypeError(f"hiercoll: dtype {dtype!r} is not supported (want torch.bfloat16, torch.float16, "
                    "torch.float32 or torch.int32)")


def _int(name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"hiercoll: {name} must be an int, not {type(v).__name__}")
    return v


class ReduceScatter2D:
    """A ReduceScatter2D context: sum reduce-scatter of an [M, N] tensor per
    rank into [M/world, N] per rank, reducing inside each node first.

    Creating and closing it are collective (every rank, same arguments).
    max_m is the largest M of a call (divisible by the world size), n the
    columns of every call. world defaults to hiercoll.init() (the torchrun
    job); pass a rank of hiercoll.sim_world() to run on simulated GPUs
    (raw pointers only).

        with hiercoll.ReduceScatter2D(8192, 8192, torch.bfloat16) as rs:
            out = rs.reduce_scatter(x)    # on torch.cuda.current_stream()

    The pull engine (engine="pull", and what engine="auto" takes without
    overlap_with_gemm on nodes of 2 to 8 GPUs) pushes small calls in one shot
    and has each rank read larger ones from the peers' symmetric inputs in one
    kernel; write the rows into rs.input(m) (zero copy) or register a tensor
    (rs.register) and pass that, or pass any tensor (one device copy first).
    """

    def __init__(self, max_m, n, dtype, overlap_with_gemm=False, reduction_sms=0, world=None, split_first_block=False,
                 graphs=False, engine="auto"):
        self._h = 0
        self._world = world if world is not None else init()
        code = dtype_code(dtype)
        self.max_m, self.n = _int("max_m", max_m), _int("n", n)
        self.dtype = _CANONICAL[code]
        self.world_size = self._world.size
        self.overlap_with_gemm = bool(overlap_with_gemm)
        self.split_first_block = bool(split_first_block)
        self.graphs = bool(graphs)
        if engine not in ("auto", "pull"):
            raise ValueError(f"hiercoll: engine {engine!r}: want 'auto' or 'pull'")
        self.engine = engine
        flags = (_lib.HC_OVERLAP_WITH_GEMM if self.overlap_with_gemm else 0) | \
            (_lib.HC_SPLIT_FIRST_BLOCK if self.split_first_block else 0) | \
            (_lib.HC_GRAPHS if self.graphs else 0) | \
            (_lib.HC_PULL if engine == "pull" else 0)
        h = ctypes.c_int64()
        check(lib().hc_rs2d_create(self._world._handle(), self.max_m, self.n, code,
                                   flags, _int("reduction_sms", reduction_sms), ctypes.byref(h)))
        self._h = h.value
        ops.contexts[self._h] = self
        if "torch" in sys.modules and self._world.backend == "cuda":
            _import_torch()  # before any torch.compile trace reaches a call
        self._rs = lib().hc_rs2d_reduce_scatter
        self._torch_dtype = None
        self._device_index = self._world.device_index
        self._c = None  # matmul_reduce_scatter's [max_m, n] product buffer
        self._own_ms = set()  # M values the own GEMM ran with outside a graph capture
        self._gemm_stream = None
        self._order = None

    @property
    def world(self):
        return self._world

    @property
    def handle(self):
        """The C ABI handle (int64); 0 once closed."""
        return self._h

    def _handle(self):
        if self._h == 0:
            raise _lib.ClosedError("hiercoll: the ReduceScatter2D context is closed", _lib.HC_ERR_CLOSED)
        return self._h

    def _stream(self, stream):
        if stream is not None:
            return int(stream)
        if self._world.backend != "cuda":
            return 0
        _import_torch()
        return _raw_stream(self._world.device_index)

    def _check_kind(self, what, t):
        """t is a torch tensor of the context's dtype on this rank's GPU."""
        if not isinstance(t, _torch.Tensor):
            raise TypeError(f"hiercoll: {what} must be a torch.Tensor, not {type(t).__name__}")
        if t.dtype != self._torch_dtype:
            raise TypeError(f"hiercoll: {what} is {t.dtype}; the context was made for {self._torch_dtype}")
        dev = t.device
        if dev.type != "cuda" or dev.index != self._world.device_index:
            raise ValueError(f"hiercoll: {what} is on {dev}; this rank's GPU is cuda:{self._world.device_index} "
                             "(call torch.cuda.set_device(LOCAL_RANK) before allocating)")

    def _check_tensor(self, what, t, rows):
        self._check_kind(what, t)
        if t.dim() != 2 or (rows is not None and t.shape[0] != rows) or t.shape[1] != self.n:
            want = f"[{rows}, {self.n}]" if rows is not None else f"[M, {self.n}]"
            raise ValueError(f"hiercoll: {what} has shape {list(t.shape)}; want {want}")
        if not t.is_contiguous():
            raise ValueError(f"hiercoll: {what} must be contiguous (row-major [M, N])")

    def reduce_scatter(self, input, output=None):
        """Enqueues output = (sum over ranks of input)[this rank's rows] on the
        current CUDA stream and returns output ([M/world, N], allocated when
        None). Every rank calls it with the same M. Nothing is synchronised.
        A call rejected by these checks or the library's passes over the
        call's signal value (see skip_call). Under torch.compile it is the
        operator hiercoll::reduce_scatter; in a CUDA graph (torch.cuda.graph,
        mode="reduce-overhead") the context must be made with graphs=True."""
        h = self._handle()
        if output is None and _compiling is not None and _compiling():
            return _torch.ops.hiercoll.reduce_scatter(input, h)
        try:
            output = self._checked(input, output)
        except (TypeError, ValueError):
            if self.overlap_with_gemm:
                self.skip_call()
            raise
        rc = self._rs(h, input.data_ptr(), input.shape[0], output.data_ptr(), _raw_stream(self._device_index))
        if rc:
            raise _lib.error(rc)
        return output

    def input(self, m):
        """This rank's symmetric input as an [m, n] torch tensor (the pull engine):
        rows written into it and passed to reduce_scatter are read by the peers
        in place, with no copy first. It aliases the context's memory: valid
        until close; a call that reads it ends once every peer has read it, so
        the next rows may go in after the call in stream order. Ranks may mix it
        with tensors of their own, except at sizes where those are copied in
        pieces (one node of 2 GPUs, blocks from 128 MiB; on more than 2 GPUs
        calls of blocks from 8 MiB go around a ring that reads each rank's
        tensor where it lies) or where the copy engine pulls its rows (one node of 2 GPUs,
        blocks from 256 MiB): there every rank passes it or none does; a call that
        mixes them fails on simulated ranks, and on GPUs its kernel traps (the CUDA
        context is lost) rather than sum rows nobody wrote or wait. On a context
        made with overlap_with_gemm it is the input of the context's second
        context, which reduce-scatters matmul_reduce_scatter's small products
        (the product buffer, read there in place)."""
        self._tensors_ok()
        self._check_m(m)
        return _symmetric_tensor(self.input_ptr(), m, self.n, self._torch_dtype, self._device_index)

    def input_ptr(self):
        """The address of this rank's symmetric input ([max_m, n], the pull engine),
        for reduce_scatter_ptr (simulated ranks too)."""
        p = ctypes.c_uint64()
        check(lib().hc_rs2d_input(self._handle(), ctypes.byref(p)))
        return p.value

    def register(self, tensor):
        """Registers tensor (a contiguous [rows, n] tensor of the context's dtype on this rank's GPU) as
        this rank's input of later calls, like NCCL's ncclCommRegister (the pull engine; collective:
        every rank registers its own tensor of the same shape). A call whose input is that tensor (or
        its first M rows) is then read by the peers in place, with no copy into the symmetric input:
        a plain torch tensor gets rs.input(m)'s speed. Every rank passes its registered tensor to the
        same calls (or none does) and keeps it alive until deregister or close; the memory must come
        from cudaMalloc (PyTorch's default allocator; not expandable segments: NotSupportedError, and
        calls with it unregistered still work). On one node of 2 GPUs large calls are read by the copy
        engine where every rank's tensor lies in an allocation of whole 2 MiB pages (as the caching
        allocator's large blocks do; it read one 16 bytes past them 25-35% slower on 2 H200s), by SM
        loads otherwise. Registering rs.input(m) does nothing."""
        h = self._handle()
        try:
            self._tensors_ok()
            self._check_tensor("tensor", tensor, None)
        except (TypeError, ValueError):
            lib().hc_rs2d_register(h, 0, 0)  # take part, so that the peers fail now instead of waiting
            raise
        check(lib().hc_rs2d_register(h, tensor.data_ptr(), tensor.numel() * tensor.element_size()))

    def deregister(self, tensor):
        """Releases tensor's registration (register); local, but every rank should deregister what it
        registered. Synchronise the streams of the calls that read it first."""
        self.deregister_ptr(tensor.data_ptr())

    def register_ptr(self, ptr, nbytes):
        """register on a device address: nbytes (whole rows of n elements) at ptr (simulated ranks too)."""
        check(lib().hc_rs2d_register(self._handle(), _int("ptr", ptr), _int("nbytes", nbytes)))

    def deregister_ptr(self, ptr):
        """deregister on a device address."""
        check(lib().hc_rs2d_deregister(self._handle(), _int("ptr", ptr)))

    def _tensors_ok(self):
        """Sets up the torch side on first use: torch tensors need a CUDA rank."""
        if self._torch_dtype is None:
            if self._world.backend != "cuda":
                raise ValueError("hiercoll: torch tensors need a CUDA rank; use reduce_scatter_ptr on simulated ranks")
            torch = _import_torch()
            self._torch_dtype = getattr(torch, self.dtype)

    def _check_m(self, m):
        w = self.world_size
        if m <= 0 or m % w or m > self.max_m:
            raise ValueError(f"hiercoll: M={m} must be positive, divisible by the world size {w} "
                             f"and at most max_m={self.max_m}")

    def _checked(self, input, output):
        """reduce_scatter's argument checks; returns the output, allocated when None.
        The common case (a contiguous [M, N] CUDA tensor of the context's dtype on
        the rank's GPU) is checked with a few attribute reads; anything else takes
        the checks that say what is wrong."""
        if self._torch_dtype is not None and type(input) is _torch.Tensor and input.dtype is self._torch_dtype \
                and input.get_device() == self._device_index and input.dim() == 2:
            m, n = input.shape
            if n == self.n and 0 < m <= self.max_m and m % self.world_size == 0 and input.is_contiguous():
                rows = m // self.world_size
                if output is None:
                    return _torch.empty((rows, n), dtype=self._torch_dtype, device=input.device)
                if type(output) is _torch.Tensor and output.dtype is self._torch_dtype \
                        and output.get_device() == self._device_index and output.dim() == 2 \
                        and output.shape[0] == rows and output.shape[1] == n and output.is_contiguous():
                    return output
        self._tensors_ok()
        self._check_tensor("input", input, None)
        m = input.shape[0]
        w = self.world_size
        self._check_m(m)
        if output is None:
            output = _torch.empty((m // w, self.n), dtype=self._torch_dtype, device=input.device)
        else:
            self._check_tensor("output", output, m // w)
        return output

    def matmul_reduce_scatter(self, a, b, output=None):
        """GEMM + reduce-scatter, overlapped where the product is large enough
        (a context made with overlap_with_gemm=True): enqueues output = (sum
        over ranks of a @ b)[this rank's rows] on the current CUDA stream and
        returns output ([M/world, n], allocated when None). a is [M, K] and b
        [K, n] (K: this rank's share of the inner dimension), both of the context's dtype
        (bfloat16, float16 or float32) on the rank's GPU, any strides.

        hiercoll's own GEMM (Hopper GPUs, bf16 and fp16, rows of a and b
        16-byte aligned; b may be a transposed Linear weight) computes the
        product into an [max_m, n] buffer the context keeps, in one launch on
        a stream of the library's, signalling each part of a destination's
        rows as soon as it is stored, so the scatter copies it while the rest
        is computed; on one node it may add the peers' landed blocks to the
        rank's own rows itself (two ranks: always, with the reduce pass's
        bits; more: where the GEMM outlasts the copies, rounding to the dtype
        after each added block, as a ring does per hop). Where it cannot (fp32, other strides, another GPU, a
        context with split_first_block), torch.mm computes the product block
        by block, in consumption_order(), on a side stream, raising each
        block's signal right after it (with split_first_block the first block
        in two GEMMs, the early signal between them). Inside a CUDA graph
        capture the own GEMM is used for an M it already ran with outside
        one. Small products with the own GEMM (below 4e10 FLOP per rank,
        2·M·n·K, times the ranks less one, or fewer than 128 rows per rank) go instead as the GEMM, then
        the reduce-scatter of the product in place by the context's second
        context (the default engine): there the copy engine's latencies would
        cost more than the overlap hides. Every rank calls it with the same M.
        Nothing is synchronised."""
        self._handle()
        if output is None and _compiling is not None and _compiling():
            return _torch.ops.hiercoll.matmul_reduce_scatter(a, b, self._h)
        if not self.overlap_with_gemm:
            raise ValueError("hiercoll: matmul_reduce_scatter needs a context made with overlap_with_gemm=True")
        self._tensors_ok()
        torch = _torch
        if not self._torch_dtype.is_floating_point:
            raise TypeError(f"hiercoll: matmul_reduce_scatter needs a floating dtype; the context is {self.dtype}")
        for what, t in (("a", a), ("b", b)):
            self._check_kind(what, t)
            if t.dim() != 2:
                raise ValueError(f"hiercoll: {what} has shape {list(t.shape)}; want a matrix")
        m, k = a.shape
        if b.shape[0] != k or b.shape[1] != self.n:
            raise ValueError(f"hiercoll: a is {list(a.shape)} and b {list(b.shape)}; want a [M, K] and b [K, {self.n}]")
        output, rows = self._product_output(m, output, a.device)
        if self._gemm_stream is None:
            self._gemm_stream = torch.cuda.Stream(device=a.device)
            self._order = self.consumption_order()
        c, gs = self._c, self._gemm_stream
        if self._own_matmul(a, b, m, k, c, output):
            return output
        early = self.early_rows(m) if self.split_first_block else 0
        # After the caller's work on a and b, and after the previous call, which read c.
        gs.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(gs):
                for i, d in enumerate(self._order):
                    r0, r1 = d * rows, (d + 1) * rows
                    if i == 0 and early > 0:
                        torch.mm(a[r0:r0 + early], b, out=c[r0:r0 + early])
                        self.raise_early(d, gs.cuda_stream)
                        r0 += early
                    torch.mm(a[r0:r1], b, out=c[r0:r1])
                    self.raise_signal(d, gs.cuda_stream)
        except BaseException:
            self.skip_call()  # the signals raised so far must release nothing later
            self.clear_signals(gs.cuda_stream)
            raise
        self.reduce_scatter(c[:m], output)
        torch.cuda.current_stream().wait_stream(gs)
        return output

    def _product_output(self, m, output, device):
        """For a GEMM + reduce-scatter of M rows: checks M, returns the output (allocated when None) and its
        rows, and makes the context's [max_m, n] product buffer at the first call."""
        self._check_m(m)
        rows = m // self.world_size
        if output is None:
            output = _torch.empty((rows, self.n), dtype=self._torch_dtype, device=device)
        else:
            self._check_tensor("output", output, rows)
        if self._c is None:
            # The small products' context's symmetric input (ABI 9), so that those
            # reduce-scatter the product where the GEMM wrote it; a buffer of ours
            # where that context's engine has none (one GPU per node, more than 8).
            try:
                self._c = _symmetric_tensor(self.input_ptr(), self.max_m, self.n, self._torch_dtype,
                                            self._device_index)
            except _lib.NotSupportedError:
                self._c = _torch.empty((self.max_m, self.n), dtype=self._torch_dtype, device=device)
        return output, rows

    def _own_matmul(self, a, b, m, k, c, output):
        """c[:m] = a @ b by the own GEMM and the reduce-scatter of it into
        output (hc_rs2d_matmul_reduce_scatter), if it can take the operands;
        False (nothing enqueued) where it cannot."""
        torch = _torch
        laid = _b_layout(b)
        if self.split_first_block or a.stride(1) != 1 or laid is None:
            return False
        layout, ldb = laid
        capturing = torch.cuda.is_current_stream_capturing()
        if capturing and m not in self._own_ms:
            return False  # its first call for an M uploads tables, which a capture cannot hold
        rc = lib().hc_rs2d_matmul_reduce_scatter(self._h, a.data_ptr(), a.stride(0), b.data_ptr(), ldb, layout,
                                                 m, k, c.data_ptr(), output.data_ptr(),
                                                 _raw_stream(self._device_index))
        if rc == _lib.HC_ERR_NOT_SUPPORTED:
            return False
        if rc:
            raise _lib.error(rc)
        if not capturing:
            self._own_ms.add(m)
        return True

    def scaled_matmul_reduce_scatter(self, a, b, scale_a, scale_b, output=None):
        """matmul_reduce_scatter with fp8 operands: output = (sum over ranks of
        the scaled a @ b)[this rank's rows], in the context's dtype (bfloat16 or
        float16), enqueued on the current CUDA stream; output ([M/world, n]) is
        allocated when None. a is [M, K] and b [K, n], both
        torch.float8_e4m3fn, b the transpose of an [n, K] row-major weight
        (w.t(), as torch._scaled_mm takes it); scale_a and scale_b are float32
        tensors on the rank's GPU in torch._scaled_mm's shapes, which say the
        scaling (hiercoll.scaling): one element each (per-tensor: scale_a *
        scale_b * (a @ b)), [M, 1] and [1, n] (row-wise), or [M, ceil(K/128)]
        and [ceil(K/128), ceil(n/128)] (block-wise: 1 x 128 blocks of a,
        128 x 128 blocks of the weight, each 128-deep k block's sum scaled in
        fp32). hiercoll's own GEMM computes
        it (Hopper GPUs; rows of a and w 16-byte aligned): elsewhere it raises
        NotSupportedError. Under torch.compile it is the operator
        hiercoll::scaled_matmul_reduce_scatter. Every rank calls it with the
        same M. Nothing is synchronised."""
        h = self._handle()
        if output is None and _compiling is not None and _compiling():
            return _torch.ops.hiercoll.scaled_matmul_reduce_scatter(a, b, scale_a, scale_b, h)
        if not self.overlap_with_gemm:
            raise ValueError("hiercoll: scaled_matmul_reduce_scatter needs a context made with overlap_with_gemm=True")
        self._tensors_ok()
        torch = _torch
        if self._torch_dtype not in (torch.bfloat16, torch.float16):
            raise TypeError(f"hiercoll: fp8 products go to bfloat16 or float16; the context is {self.dtype}")
        if b.dim() == 2 and b.shape[1] != self.n:
            raise ValueError(f"hiercoll: b is {list(b.shape)}; want [K, {self.n}]")
        # Row- and block-wise scales in the kernels' layout: copies (where
        # torch's layout differs) are made on the current stream, which the
        # call joins after the GEMM has read them.
        code, sa, sb = _check_fp8_operands(a, b, scale_a, scale_b, self._device_index)
        m, k = a.shape
        output, _ = self._product_output(m, output, a.device)
        stream = _raw_stream(self._device_index)
        if code == _lib.HC_SCALE_TENSOR:
            check(lib().hc_rs2d_scaled_matmul_reduce_scatter(
                h, a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(1), sa.data_ptr(), sb.data_ptr(),
                m, k, self._c.data_ptr(), output.data_ptr(), stream))
        else:
            check(lib().hc_rs2d_scaled_matmul_reduce_scatter_ex(
                h, a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(1), code, sa.data_ptr(), sb.data_ptr(),
                m, k, self._c.data_ptr(), output.data_ptr(), stream))
        return output

    def reduce_scatter_ptr(self, in_ptr, m, out_ptr, stream=0):
        """The C ABI call itself: device addresses of a contiguous [m, n]
        input and [m/world, n] output, and a CUstream (or a simulated stream
        from World.stream_create; 0 is the default stream)."""
        rc = self._rs(self._handle(), in_ptr, m, out_ptr, stream)
        if rc:
            raise _lib.error(rc)

    def signal_value(self):
        """The value a GEMM producer writes into a signal word to release the next call."""
        v = ctypes.c_uint32()
        check(lib().hc_rs2d_signal_value(self._handle(), ctypes.byref(v)))
        return v.value

    def signal_addr(self, dest):
        """The device address of the 32-bit GEMM signal word of destination rank dest."""
        a = ctypes.c_uint64()
        check(lib().hc_rs2d_signal_addr(self._handle(), _int("dest", dest), ctypes.byref(a)))
        return a.value

    def raise_signal(self, dest, stream=None):
        """Enqueues the write that releases the next call's scatter to rank dest,
        on stream (default: the current CUDA stream; 0 on simulated ranks)."""
        check(lib().hc_rs2d_raise_signal(self._handle(), _int("dest", dest), self._stream(stream)))

    def early_rows(self, m):
        """With split_first_block: how many rows of the first block in consumption order a producer
        of a call of m rows raises the early signal after (0: the context does not split)."""
        r = ctypes.c_int64()
        check(lib().hc_rs2d_early_rows(self._handle(), _int("m", m), ctypes.byref(r)))
        return r.value

    def early_signal_addr(self, dest):
        """The device address of the 32-bit early signal word of destination rank dest."""
        a = ctypes.c_uint64()
        check(lib().hc_rs2d_early_signal_addr(self._handle(), _int("dest", dest), ctypes.byref(a)))
        return a.value

    def raise_early(self, dest, stream=None):
        """Enqueues the write of the next call's early signal for rank dest (the first block in
        consumption order): its first early_rows(m) rows are complete."""
        check(lib().hc_rs2d_raise_early(self._handle(), _int("dest", dest), self._stream(stream)))

    def skip_call(self):
        """Passes over the next call's signal value, as a rejected call does:
        for a producer that raised a call's signals and then did not make the
        call. Collective (every rank skips the same calls); nothing without
        overlap_with_gemm."""
        check(lib().hc_rs2d_skip_call(self._handle()))

    def clear_signals(self, stream=None):
        """On a context made with graphs=True, enqueues on stream (default: the
        current CUDA stream) the reset of this rank's GEMM signal words: for a
        producer that raised a call's signals and then gave the call up (every
        call there has the same signal value). Nothing on other contexts."""
        check(lib().hc_rs2d_clear_signals(self._handle(), self._stream(stream)))

    def consumption_order(self):
        """Destination ranks in the order the scatter consumes their rows."""
        order = (ctypes.c_int * self.world_size)()
        check(lib().hc_rs2d_consumption_order(self._handle(), order, self.world_size))
        return list(order)

    def close(self):
        """Releases the context after a barrier with the other ranks
        (collective). Idempotent."""
        if self._h:
            h, self._h = self._h, 0
            ops.contexts.pop(h, None)
            check(lib().hc_rs2d_destroy(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self._h == 0 else f"handle={self._h}"
        return (f"hiercoll.ReduceScatter2D(max_m={self.max_m}, n={self.n}, dtype={self.dtype}, "
                f"world={self.world_size}, overlap_with_gemm={self.overlap_with_gemm}, "
                f"split_first_block={self.split_first_block}, graphs={self.graphs}, {state})")


def _b_layout(b):
    """(HC_B_KN or HC_B_NK, ldb) for a [K, N] b that is row-major or the transpose of a row-major
    [N, K] weight; None for other strides."""
    if b.stride(1) == 1:
        return _lib.HC_B_KN, b.stride(0)
    if b.stride(0) == 1:
        return _lib.HC_B_NK, b.stride(1)
    return None


def _check_fp8_operands(a, b, scale_a, scale_b, device_index, scales_optional=False):
    """a [M, K] and b [K, N] fp8 e4m3 with unit stride along K (b the transpose
    of a row-major [N, K] weight), float32 scales of one of the scalings in
    torch's shapes (scaling.py; None allowed for per-tensor ones when
    scales_optional), all on the GPU. Returns the scaling's HC_SCALE_* code
    and the scales laid out as the kernels read them."""
    torch = _torch
    scales = tuple((what, t) for what, t in (("scale_a", scale_a), ("scale_b", scale_b))
                   if t is not None or not scales_optional)
    for what, t in (("a", a), ("b", b)) + scales:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"hiercoll: {what} must be a torch.Tensor, not {type(t).__name__}")
        dev = t.device
        if dev.type != "cuda" or dev.index != device_index:
            raise ValueError(f"hiercoll: {what} is on {dev}; this rank's GPU is cuda:{device_index}")
    for what, t in (("a", a), ("b", b)):
        if t.dtype != torch.float8_e4m3fn:
            raise TypeError(f"hiercoll: {what} is {t.dtype}; want torch.float8_e4m3fn")
        if t.dim() != 2:
            raise ValueError(f"hiercoll: {what} has shape {list(t.shape)}; want a matrix")
    for what, t in scales:
        if t.dtype != torch.float32:
            raise ValueError(f"hiercoll: {what} must be float32 scales, not {t.dtype} {list(t.shape)}")
    if b.shape[0] != a.shape[1]:
        raise ValueError(f"hiercoll: a is {list(a.shape)} and b {list(b.shape)}; want a [M, K] and b [K, N]")
    if a.stride(1) != 1 or b.stride(0) != 1:
        raise ValueError("hiercoll: fp8 operands must be K-contiguous: a row-major, b the transpose of a "
                         "row-major [N, K] weight (w.t()), as torch._scaled_mm takes them")
    (m, k), n = a.shape, b.shape[1]
    shapes = [tuple(t.shape) if t is not None else (1,) for t in (scale_a, scale_b)]
    kind = _scaling.infer(m, n, k, *shapes)
    if kind != _scaling.TENSOR and (scale_a is None or scale_b is None):
        raise ValueError(f"hiercoll: {kind}-wise scaling needs both scale_a and scale_b")
    sa, sb = _scaling.kernel_layout(kind, scale_a, scale_b)
    return _scaling.CODES[kind], sa, sb


class _CudaArray:
    """A device buffer described by __cuda_array_interface__ (version 3), which
    torch.as_tensor wraps without copying."""

    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False), "version": 3,
                                         "strides": None}


def _symmetric_tensor(ptr, m, n, dtype, device_index):
    """A torch tensor of dtype [m, n] over the device memory at ptr. bfloat16 has
    no array-interface type string: it is wrapped as int16 and viewed."""
    torch = _import_torch()
    size = torch.empty((), dtype=dtype).element_size()
    typestr = {2: "<i2", 4: "<i4"}[size]
    with torch.cuda.device(device_index):
        t = torch.as_tensor(_CudaArray(ptr, (m, n), typestr), device=f"cuda:{device_index}")
    return t.view(dtype)
