"""hiercoll's own GEMM on torch tensors (hc_gemm, hc_gemm_ex): bf16 and fp16,
and fp8 e4m3 with per-tensor, row-wise or block-wise scales, on Hopper GPUs."""

import ctypes

from . import _lib
from ._lib import check, lib
from .world import init

# Zeroed workspaces by (device, CUstream): the GEMM's last wave of tiles is
# shared out by k through one, and launches using one must be ordered.
_workspaces = {}


def gemm(a, b, scale_a=None, scale_b=None, out_dtype=None, out=None, world=None):
    """Enqueues out = a @ b on the current CUDA stream with hiercoll's own GEMM
    and returns out ([M, N], allocated when None); fp32 accumulation, out
    rounded once.

    bfloat16 / float16: a [M, K] with unit stride along K; b [K, N] of the
    same dtype, row-major or the transpose of a row-major [N, K] weight;
    out in that dtype. fp8: a and b torch.float8_e4m3fn, b the transpose of a
    row-major [N, K] weight (w.t()), out the scaled product in out_dtype
    (bfloat16 by default, or float16) — torch._scaled_mm's convention, its
    scale shapes saying the scaling (hiercoll.scaling): scale_a and scale_b
    float32 of one element each (None: 1), out = scale_a * scale_b * (a @ b);
    [M, 1] and [1, N]: row-wise; [M, ceil(K/128)] and [ceil(K/128),
    ceil(N/128)]: block-wise (1 x 128 blocks of a, 128 x 128 blocks of the
    weight). Rows must be 16-byte aligned; on a GPU that is not Hopper it
    raises NotSupportedError."""
    from . import rs2d
    from .rs2d import _b_layout, _check_fp8_operands, _import_torch, dtype_code
    torch = _import_torch()
    w = world if world is not None else init()
    if w.backend != "cuda":
        raise ValueError("hiercoll: gemm takes torch tensors, which need a CUDA rank")
    dev = w.device_index
    code = _lib.HC_SCALE_TENSOR
    if a.dtype == torch.float8_e4m3fn:
        code, scale_a, scale_b = _check_fp8_operands(a, b, scale_a, scale_b, dev, scales_optional=True)
        in_code, layout, ldb = _lib.HC_E4M3, _lib.HC_B_NK, b.stride(1)
        out_dtype = out_dtype if out_dtype is not None else torch.bfloat16
        if out_dtype not in (torch.bfloat16, torch.float16):
            raise TypeError(f"hiercoll: fp8 products go to bfloat16 or float16, not {out_dtype}")
    else:
        if a.dtype not in (torch.bfloat16, torch.float16) or b.dtype != a.dtype:
            raise TypeError(f"hiercoll: gemm takes bfloat16 or float16 (both alike) or float8_e4m3fn, not {a.dtype} and {b.dtype}")
        if scale_a is not None or scale_b is not None:
            raise ValueError("hiercoll: scales are for fp8 operands")
        if a.dim() != 2 or b.dim() != 2 or b.shape[0] != a.shape[1]:
            raise ValueError(f"hiercoll: a is {list(a.shape)} and b {list(b.shape)}; want a [M, K] and b [K, N]")
        if a.stride(1) != 1:
            raise ValueError("hiercoll: a must have unit stride along K")
        laid = _b_layout(b)
        if laid is None:
            raise ValueError("hiercoll: b must be row-major or the transpose of a row-major weight")
        layout, ldb = laid
        in_code = dtype_code(a.dtype)
        out_dtype = out_dtype if out_dtype is not None else a.dtype
        if out_dtype != a.dtype:
            raise TypeError(f"hiercoll: a {a.dtype} product goes to {a.dtype}, not {out_dtype}")
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    elif out.dtype != out_dtype or list(out.shape) != [m, n] or out.stride(1) != 1 or out.device != a.device:
        raise ValueError(f"hiercoll: out is {out.dtype} {list(out.shape)}; want {out_dtype} [{m}, {n}] with unit column stride")
    stream = rs2d._raw_stream(a.device.index)  # the CUstream, without a torch.cuda.Stream object
    ws = _workspaces.get((dev, stream))
    if ws is None:
        size = ctypes.c_int64()
        check(lib().hc_gemm_workspace_bytes(w._handle(), ctypes.byref(size)))
        ws = _workspaces[(dev, stream)] = torch.zeros(size.value, dtype=torch.uint8, device=a.device)
    sa = scale_a.data_ptr() if scale_a is not None else 0
    sb = scale_b.data_ptr() if scale_b is not None else 0
    if code == _lib.HC_SCALE_TENSOR:
        check(lib().hc_gemm(w._handle(), in_code, a.data_ptr(), a.stride(0), b.data_ptr(), ldb, layout, sa, sb,
                            dtype_code(out_dtype), out.data_ptr(), out.stride(0), m, n, k, ws.data_ptr(), stream))
    else:  # row- or block-wise scales, in the kernels' layout (copies made on this stream)
        check(lib().hc_gemm_ex(w._handle(), in_code, a.data_ptr(), a.stride(0), b.data_ptr(), ldb, layout, code, sa, sb,
                               dtype_code(out_dtype), out.data_ptr(), out.stride(0), m, n, k, ws.data_ptr(), stream))
    return out
