"""hiercoll for PyTorch: hierarchical GPU collectives over hiercoll's C ABI.

    import torch, hiercoll
    torch.cuda.set_device(local_rank)
    hiercoll.init()                     # joins the torchrun job (idempotent)
    with hiercoll.ReduceScatter2D(max_m=8192, n=8192, dtype=torch.bfloat16) as rs:
        out = rs.reduce_scatter(x)      # [M, N] -> [M/world, N], on the current stream
    with hiercoll.ReduceScatter2D(8192, 8192, torch.bfloat16, overlap_with_gemm=True) as rs:
        out = rs.matmul_reduce_scatter(a, b)  # a @ b block by block, scattered as blocks finish
        out = rs.scaled_matmul_reduce_scatter(a8, w8.t(), scale_a, scale_b)  # fp8 e4m3 operands
    c = hiercoll.gemm(a8, w8.t(), scale_a, scale_b)  # the own GEMM alone (Hopper)

An installed wheel loads the shared library inside it. Uninstalled (from a
checkout), the library is found through HIERCOLL_LIB, else next to this
package, else at build/libhiercoll.so of the repository the package sits in. torch is
needed only for reduce_scatter on tensors; sim_world() runs the collective on
simulated GPUs without it (raw pointers, for tests).
"""

from ._lib import (
    ABI_VERSION,
    ClosedError,
    HiercollError,
    HiercollTimeoutError,
    InvalidArgumentError,
    NotSupportedError,
    PeerError,
    library_path,
)
from . import scaling
from .gemm import gemm
from .rs2d import ReduceScatter2D, dtype_code
from .world import World, current, finalize, init, sim_world

__version__ = "0.1.0"

__all__ = [
    "ABI_VERSION",
    "ClosedError",
    "HiercollError",
    "HiercollTimeoutError",
    "InvalidArgumentError",
    "NotSupportedError",
    "PeerError",
    "ReduceScatter2D",
    "World",
    "current",
    "dtype_code",
    "finalize",
    "gemm",
    "init",
    "library_path",
    "scaling",
    "sim_world",
]
