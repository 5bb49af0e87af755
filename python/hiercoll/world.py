"""Ranks: the process's rank in a torchrun job, or the ranks of a simulated world."""

import ctypes
import datetime
import os
import socket
import sys
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
_rendezvous = 0  # store rendezvous made by this process: each gets a prefix of its own


def init(store=None, host=None):
    """Joins the job and returns this process's rank, on GPU HIERCOLL_DEVICE or
    LOCAL_RANK (the rank and world shape from RANK, WORLD_SIZE, LOCAL_RANK,
    LOCAL_WORLD_SIZE). Collective the first time; later calls return the same
    World.

    When torch.distributed is initialised (or a store is given: torch's
    store API, set(key, value) and get(key), with wait(keys, timeout) used
    when present), the ranks rendezvous through its store: rank 0 listens on
    an ephemeral port of host (default MASTER_ADDR, else this host's name) and
    publishes its address and a fresh random secret there. Otherwise through
    the torchrun variables: the rendezvous listens on HIERCOLL_PORT, else
    MASTER_PORT+1, with the launcher's token."""
    global _process, _rendezvous
    with _process_lock:
        if _process is None or _process.closed:
            if store is None:
                store = _default_store()
            h = ctypes.c_int64()
            if store is None:
                check(lib().hc_init_from_env(ctypes.byref(h)))
            else:
                _rendezvous += 1
                _init_store(store, f"hiercoll/rendezvous/{_rendezvous}/", host, h)
            _process = World(h.value)
        return _process


def _default_store():
    """torch.distributed's default store when it is initialised, else None
    (torch is not imported for this: if it is not loaded, it is not initialised)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist.distributed_c10d._get_default_store()


def store_callbacks(store, errors):
    """hc_init_store's set and get callbacks over store (torch's store API);
    each failure's text is appended to errors."""

    def set_(_user, key, value, n):
        try:
            store.set(key.decode(), ctypes.string_at(value, n))
            return 0
        except Exception as e:  # noqa: BLE001 (reported through errors)
            errors.append(f"set {key.decode()!r}: {e}")
            return 1

    def get_(_user, key, timeout_ms, buf, cap, n_out):
        try:
            k = key.decode()
            if hasattr(store, "wait"):
                store.wait([k], datetime.timedelta(milliseconds=timeout_ms))
            v = store.get(k)
            v = v.encode() if isinstance(v, str) else bytes(v)
            n_out[0] = len(v)
            ctypes.memmove(buf, v, min(len(v), cap))
            return 0
        except Exception as e:  # noqa: BLE001 (reported through errors)
            errors.append(f"get {key.decode()!r}: {e}")
            return 1

    return _lib.STORE_SET(set_), _lib.STORE_GET(get_)


def _init_store(store, prefix, host, handle):
    """hc_init_store through store with prefix; host defaults to MASTER_ADDR."""
    if host is None:
        host = os.environ.get("MASTER_ADDR") or socket.gethostname()
    errors = []
    set_fn, get_fn = store_callbacks(store, errors)
    rc = lib().hc_init_store(set_fn, get_fn, None, prefix.encode(), host.encode(), ctypes.byref(handle))
    if rc:
        err = _lib.error(rc)
        if errors:
            err = type(err)(f"{err} (the store: {'; '.join(errors)})", err.code)
        raise err


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
