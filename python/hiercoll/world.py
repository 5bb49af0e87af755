"""Ranks: the process's rank in a torchrun job, or the ranks of a simulated world."""

import ctypes
import threading

from . import _lib
from ._lib import check, lib


class World:
    """One rank of a job as this process sees it: a handle of the C ABI.

    init() gives the process's rank under torchrun (on its GPU); sim_world()
    gives the ranks of an in-process world of simulated GPUs (the CPU
    backend), each to be driven from its own thread.
    """

    def __init__(self, handle):
        self._h = handle
        r, s, lr, ls = (ctypes.c_int() for _ in range(4))
        check(lib().hc_world_info(handle, ctypes.byref(r), ctypes.byref(s),
                                  ctypes.byref(lr), ctypes.byref(ls)))
        backend, ordinal = ctypes.c_int(), ctypes.c_int()
        check(lib().hc_world_device(handle, ctypes.byref(backend), ctypes.byref(ordinal)))
        self.rank, self.size = r.value, s.value
        self.local_rank, self.local_size = lr.value, ls.value
        self.backend = "cuda" if backend.value == _lib.HC_BACKEND_CUDA else "sim"
        self.device_index = ordinal.value

    @property
    def handle(self):
        """The C ABI handle (int64); 0 once closed."""
        return self._h

    @property
    def closed(self):
        return self._h == 0

    def _handle(self):
        if self._h == 0:
            raise _lib.ClosedError("hiercoll: the world is closed", _lib.HC_ERR_CLOSED)
        return self._h

    def close(self):
        """Releases the rank (after its contexts are closed). Idempotent."""
        if self._h:
            check(lib().hc_world_close(self._h))
            self._h = 0

    def __repr__(self):
        return (f"hiercoll.World(rank={self.rank}, size={self.size}, local_rank={self.local_rank}, "
                f"local_size={self.local_size}, device={self.backend}:{self.device_index})")

    # Streams (sim: the only way to get one; CUDA: a real non-blocking CUstream).

    def stream_create(self):
        s = ctypes.c_uint64()
        check(lib().hc_stream_create(self._handle(), ctypes.byref(s)))
        return s.value

    def stream_synchronize(self, stream=0, timeout=60.0):
        """Waits for the stream's work, for at most timeout seconds."""
        check(lib().hc_stream_synchronize(self._handle(), stream, max(1, int(timeout * 1000))))

    def stream_destroy(self, stream):
        check(lib().hc_stream_destroy(self._handle(), stream))

    # Device memory of the rank (meant for the simulated backend).

    def alloc(self, size):
        p = ctypes.c_uint64()
        check(lib().hc_sim_alloc(self._handle(), size, ctypes.byref(p)))
        return p.value

    def free(self, ptr):
        check(lib().hc_sim_free(self._handle(), ptr))

    def copy_to_device(self, ptr, data):
        """Copies a C-contiguous buffer (bytes, bytearray, array, memoryview, ...) to ptr."""
        mv = memoryview(data)
        if not mv.c_contiguous:
            raise ValueError("hiercoll: copy_to_device needs a C-contiguous buffer")
        n = mv.nbytes
        if n == 0:
            return
        if mv.readonly:
            src = ctypes.c_char_p(mv.tobytes())
        else:
            src = (ctypes.c_char * n).from_buffer(mv.cast("B"))
        check(lib().hc_sim_copy_to_device(self._handle(), ptr, ctypes.cast(src, ctypes.c_void_p), n))

    def copy_to_host(self, ptr, size):
        """Returns size bytes from device address ptr as a bytearray."""
        out = bytearray(size)
        if size:
            dst = (ctypes.c_char * size).from_buffer(out)
            check(lib().hc_sim_copy_to_host(self._handle(), ctypes.cast(dst, ctypes.c_void_p), ptr, size))
        return out


_process_lock = threading.Lock()
_process = None


def init():
    """Joins the torchrun job (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT) and returns this process's rank, on GPU
    HIERCOLL_DEVICE or LOCAL_RANK. Collective the first time; later calls
    return the same World. The rendezvous listens on HIERCOLL_PORT, else
    MASTER_PORT+1, so it runs beside torch.distributed."""
    global _process
    with _process_lock:
        if _process is None or _process.closed:
            h = ctypes.c_int64()
            check(lib().hc_init_from_env(ctypes.byref(h)))
            _process = World(h.value)
        return _process


def current():
    """The process's rank if init() has run, else None."""
    return _process if _process is not None and not _process.closed else None


def finalize():
    """Closes the process's rank (close every ReduceScatter2D first)."""
    global _process
    with _process_lock:
        if _process is not None:
            _process.close()
            _process = None


def sim_world(nodes, gpus_per_node):
    """An in-process world of nodes x gpus_per_node simulated GPUs: one World
    per rank, in rank order. Collective calls (ReduceScatter2D, reduce-scatter,
    close) of the ranks must run concurrently, one thread per rank."""
    n = nodes * gpus_per_node
    hs = (ctypes.c_int64 * max(1, min(n, 256)))()  # the library rejects more than 256
    check(lib().hc_init_sim(nodes, gpus_per_node, hs))
    return [World(h) for h in hs[:n]]
