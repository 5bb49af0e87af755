// Package nvshmem binds NVSHMEM's host library (libnvshmem_host.so.3), loaded
// at run time, for hiercoll's rail stage: a symmetric heap allocated
// collectively by every PE, direct peer views of it (nvshmem_ptr), and puts,
// signals and barriers enqueued on CUDA streams. Only host-side entry points
// are used, so no NVSHMEM device library, CUDA headers or nvcc are needed to
// build; on a machine without NVSHMEM, Load fails with an error that wraps
// errs.ErrNotSupported and names every place it looked.
//
// # Use
//
// NVSHMEM is one per process, so the Lib is too. Every PE (rank) runs:
//
//	lib, err := nvshmem.Load()
//	uid, err := lib.UniqueID()              // on rank 0 only
//	// ... send uid (128 bytes) to every rank over the caller's own bootstrap ...
//	err = lib.Init(rank, nranks, uid, ordinal) // collective
//	defer lib.Finalize()
//	buf, err := lib.Malloc(size)            // collective: same size on every PE
//	defer lib.Free(buf)                     // collective
//	sig, err := lib.Malloc(8 * nranks)      // uint64 signal words, also symmetric
//	err = lib.PutSignalOnStream(dst, src, n, sig.Add(int64(8*rank)), 1, nvshmem.SignalSet, peer, stream)
//	err = lib.SignalWaitUntilOnStream(sig.Add(int64(8*peer)), nvshmem.CmpEQ, 1, stream)
//
// Init builds nvshmemx_init_attr_t itself (nvshmemx_init_attr is a static
// inline function of the headers, not a library symbol): the unique-id
// arguments are set with nvshmemx_set_attr_uniqueid_args, and the library is
// started with nvshmemx_hostlib_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, attr).
// The unique id and the attribute live in C memory until Finalize.
//
// # Devices and threads
//
// Init retains the primary CUDA context of device ordinal (the one PyTorch
// and hiercoll's CUDA backend use) and every call that touches the device
// makes it current, calls NVSHMEM and restores the thread's previous context
// inside one cgo call; callers need not lock OS threads. NVSHMEM stops the
// process on many misuses (a call before init, a bad PE), so this package
// checks PEs, alignments and that addresses lie in the symmetric heap before
// calling it.
//
// # Environment
//
//   - NVSHMEM_SYMMETRIC_SIZE: the symmetric heap per PE (default 1 GiB); size
//     it to what Malloc will be asked for, e.g. "4G".
//   - NVSHMEM_REMOTE_TRANSPORT=none when all PEs are on one host (no network
//     transport is probed); leave it unset (ibrc) or name one across hosts.
//   - NVSHMEM_DISABLE_NVLS=1: NVLink multicast must stay off on hiercoll's
//     target machines. Load, UniqueID and Init set it to 1 when it is unset,
//     never unset it, and refuse to run when it is set to a value NVSHMEM
//     reads as false.
//   - NVSHMEM_BOOTSTRAP_UID_PLUGIN: when unset, Load points it at the
//     nvshmem_bootstrap_uid.so.3 beside the host library it opened.
//   - NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME / _SOCK_FAMILY: the network interface
//     the unique-id bootstrap listens on, when the default one is wrong.
//   - NVSHMEM_DEBUG=WARN or INFO: NVSHMEM's own account of a failed Init.
//
// # Where the library is looked for
//
// In order: $HIERCOLL_NVSHMEM_LIB; libnvshmem_host.so.3 on the loader's
// search path; the PyTorch wheel's copy,
// <site-packages>/nvidia/nvshmem/lib/libnvshmem_host.so.3, for the
// site-packages directories found by globbing the usual prefixes
// (SitePackages lists them). libcuda.so.1 must be loadable too.
package nvshmem
