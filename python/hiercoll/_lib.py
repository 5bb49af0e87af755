"""Loading libhiercoll.so and turning its return codes into exceptions."""

import ctypes
import os
import pathlib
import threading

ABI_VERSION = 9  # HC_ABI_VERSION of capi/hiercoll.h

# Return codes (hiercoll.h).
HC_OK = 0
HC_ERR_INVALID = 1
HC_ERR_NOT_SUPPORTED = 2
HC_ERR_TIMEOUT = 3
HC_ERR_PEER = 4
HC_ERR_CLOSED = 5
HC_ERR_OTHER = 6

# The layouts of B for hc_rs2d_matmul_reduce_scatter.
HC_B_KN = 0  # [k, n] row-major
HC_B_NK = 1  # [n, k] row-major: a torch Linear weight

# Element types.
HC_BF16 = 1
HC_F16 = 2
HC_F32 = 3
HC_I32 = 4
HC_E4M3 = 5  # fp8 (torch.float8_e4m3fn): a GEMM input only
HC_OVERLAP_WITH_GEMM = 1
HC_SPLIT_FIRST_BLOCK = 2
HC_GRAPHS = 4
HC_PULL = 8

# The scalings of fp8 operands (hc_gemm_ex, hc_rs2d_scaled_matmul_reduce_scatter_ex).
HC_SCALE_TENSOR = 0
HC_SCALE_ROW = 1
HC_SCALE_BLOCK = 2

# Backends.
HC_BACKEND_SIM = 1
HC_BACKEND_CUDA = 2

ENV_LIB = "HIERCOLL_LIB"
LIB_NAME = "libhiercoll.so"

try:  # only in a wheel: written by hiercoll_build beside the library it packaged
    from ._wheel import LIBRARY as _wheel_library
except ImportError:
    _wheel_library = None


class HiercollError(RuntimeError):
    """A failure reported by libhiercoll; .code is its HC_ERR_* code."""

    def __init__(self, message, code=HC_ERR_OTHER):
        super().__init__(message)
        self.code = code


class InvalidArgumentError(HiercollError, ValueError):
    """HC_ERR_INVALID: a bad argument, shape, dtype, handle or state."""


class NotSupportedError(HiercollError):
    """HC_ERR_NOT_SUPPORTED: not available here (no GPU, no driver, ...)."""


class HiercollTimeoutError(HiercollError, TimeoutError):
    """HC_ERR_TIMEOUT: a rank did not arrive, or a bounded wait ran out."""


class PeerError(HiercollError):
    """HC_ERR_PEER: another rank failed or left."""


class ClosedError(HiercollError):
    """HC_ERR_CLOSED: the object was closed."""


_ERRORS = {
    HC_ERR_INVALID: InvalidArgumentError,
    HC_ERR_NOT_SUPPORTED: NotSupportedError,
    HC_ERR_TIMEOUT: HiercollTimeoutError,
    HC_ERR_PEER: PeerError,
    HC_ERR_CLOSED: ClosedError,
}

_i64, _u64, _u32, _int = ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int
_P = ctypes.POINTER

# hc_init_store's callbacks (hiercoll.h: hc_store_set_fn, hc_store_get_fn).
STORE_SET = ctypes.CFUNCTYPE(_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, _i64)
STORE_GET = ctypes.CFUNCTYPE(_int, ctypes.c_void_p, ctypes.c_char_p, _i64, ctypes.c_void_p, _i64, _P(_i64))

# name: (argtypes) — every function returns int.
_PROTOTYPES = {
    "hc_abi_version": (),
    "hc_last_error": (ctypes.c_char_p, _int),
    "hc_init_from_env": (_P(_i64),),
    "hc_init_store": (STORE_SET, STORE_GET, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, _P(_i64)),
    "hc_init_sim": (_int, _int, _P(_i64)),
    "hc_world_info": (_i64, _P(_int), _P(_int), _P(_int), _P(_int)),
    "hc_world_device": (_i64, _P(_int), _P(_int)),
    "hc_world_close": (_i64,),
    "hc_rs2d_create": (_i64, _i64, _i64, _int, _int, _int, _P(_i64)),
    "hc_rs2d_destroy": (_i64,),
    "hc_rs2d_reduce_scatter": (_i64, _u64, _i64, _u64, _u64),
    "hc_rs2d_input": (_i64, _P(_u64)),
    "hc_rs2d_register": (_i64, _u64, _i64),
    "hc_rs2d_deregister": (_i64, _u64),
    "hc_rs2d_signal_value": (_i64, _P(_u32)),
    "hc_rs2d_signal_addr": (_i64, _int, _P(_u64)),
    "hc_rs2d_raise_signal": (_i64, _int, _u64),
    "hc_rs2d_skip_call": (_i64,),
    "hc_rs2d_clear_signals": (_i64, _u64),
    "hc_rs2d_early_rows": (_i64, _i64, _P(_i64)),
    "hc_rs2d_raise_early": (_i64, _int, _u64),
    "hc_rs2d_early_signal_addr": (_i64, _int, _P(_u64)),
    "hc_rs2d_consumption_order": (_i64, _P(_int), _int),
    "hc_rs2d_matmul_reduce_scatter": (_i64, _u64, _i64, _u64, _i64, _int, _i64, _i64, _u64, _u64, _u64),
    "hc_rs2d_scaled_matmul_reduce_scatter": (_i64, _u64, _i64, _u64, _i64, _u64, _u64, _i64, _i64, _u64, _u64, _u64),
    "hc_gemm": (_i64, _int, _u64, _i64, _u64, _i64, _int, _u64, _u64, _int, _u64, _i64, _i64, _i64, _i64, _u64, _u64),
    "hc_gemm_workspace_bytes": (_i64, _P(_i64)),
    "hc_gemm_ex": (_i64, _int, _u64, _i64, _u64, _i64, _int, _int, _u64, _u64, _int, _u64, _i64, _i64, _i64, _i64, _u64,
                   _u64),
    "hc_rs2d_scaled_matmul_reduce_scatter_ex": (_i64, _u64, _i64, _u64, _i64, _int, _u64, _u64, _i64, _i64, _u64, _u64,
                                                _u64),
    "hc_stream_create": (_i64, _P(_u64)),
    "hc_stream_synchronize": (_i64, _u64, _i64),
    "hc_stream_destroy": (_i64, _u64),
    "hc_sim_alloc": (_i64, _i64, _P(_u64)),
    "hc_sim_free": (_i64, _u64),
    "hc_sim_copy_to_device": (_i64, _u64, ctypes.c_void_p, _i64),
    "hc_sim_copy_to_host": (_i64, ctypes.c_void_p, _u64, _i64),
}

_lock = threading.Lock()
_lib = None


def library_candidates():
    """Where the library is looked for, in order: installed from a wheel, the
    library inside it (the wheel's _wheel.py marks that); else HIERCOLL_LIB;
    else next to the package, then build/libhiercoll.so of the checkout."""
    here = pathlib.Path(__file__).resolve().parent
    if _wheel_library is not None:
        return [here / _wheel_library]
    env = os.environ.get(ENV_LIB)
    if env:
        return [pathlib.Path(env)]
    return [here / LIB_NAME, here.parent.parent / "build" / LIB_NAME]


def library_path():
    """The path of the library that lib() loads (see library_candidates)."""
    candidates = library_candidates()
    for p in candidates:
        if p.is_file():
            return p
    tried = ", ".join(str(p) for p in candidates)
    if _wheel_library is not None:
        hint = "the installed wheel lacks its library; reinstall it"
    elif os.environ.get(ENV_LIB):
        hint = f"{ENV_LIB} names a missing file"
    else:
        hint = f"build it with scripts/build-capi.sh, or set {ENV_LIB}"
    raise NotSupportedError(f"hiercoll: {LIB_NAME} not found (tried {tried}); {hint}",
                            HC_ERR_NOT_SUPPORTED)


def lib():
    """The loaded library, with every prototype declared (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            path = library_path()
            handle = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
            for name, argtypes in _PROTOTYPES.items():
                fn = getattr(handle, name)
                fn.argtypes = argtypes
                fn.restype = ctypes.c_int
            got = handle.hc_abi_version()
            if got != ABI_VERSION:
                raise NotSupportedError(
                    f"hiercoll: {path} has ABI version {got}; this package needs {ABI_VERSION}",
                    HC_ERR_NOT_SUPPORTED)
            _lib = handle
    return _lib


def last_error():
    """The calling thread's last error message from the library."""
    h = lib()
    size = 1024
    while True:
        buf = ctypes.create_string_buffer(size)
        n = h.hc_last_error(buf, size)
        if n < size:
            return buf.value.decode("utf-8", "replace")
        size = n + 1


def error(rc):
    """The exception for return code rc, with the thread's last message."""
    cls = _ERRORS.get(rc, HiercollError)
    msg = last_error() or f"hiercoll: error code {rc}"
    return cls(msg, rc)


def check(rc):
    """Raises the exception for rc unless it is HC_OK."""
    if rc != HC_OK:
        raise error(rc)
