// Package nccl binds the few NCCL calls hiercoll needs — a communicator, the
// reduce-scatter and all-reduce it is measured against, and the send/recv
// pairs the rail (inter-node) stage can run over — by loading libnccl.so.2 at
// run time. Nothing here needs NCCL or CUDA headers to build, and on a
// machine without NCCL, Load fails with an error that wraps
// errs.ErrNotSupported and names every place it looked.
//
// # Use
//
//	lib, err := nccl.Load()            // once per process; cached
//	id, err := lib.UniqueID()          // on rank 0 only
//	// ... send id to every rank over the caller's own bootstrap ...
//	comm, err := lib.InitRank(world, id, rank, ordinal) // collective: blocks until all ranks join
//	defer comm.Destroy()
//	err = comm.ReduceScatter(send, recv, recvCount, dtype.BF16, stream)
//
// Point-to-point exchanges go inside a group, so that NCCL runs the sends and
// receives of one step together:
//
//	err = comm.Group(func() error {
//		if err := comm.Send(buf, n, dtype.F32, peer, stream); err != nil {
//			return err
//		}
//		return comm.Recv(buf2, n, dtype.F32, peer, stream)
//	})
//
// # Devices and threads
//
// NCCL enqueues work through the CUDA runtime, which works on whatever CUDA
// context is current on the calling OS thread; Go moves goroutines between
// threads at will. So a Comm is made for one device ordinal: InitRank retains
// that device's primary context (the one PyTorch and hiercoll's CUDA backend
// use), and every call that may touch the device makes it current, calls NCCL
// and restores the thread's previous context, all inside one cgo call. Callers
// need no runtime.LockOSThread for single calls.
//
// NCCL groups are per OS thread. GroupStart therefore locks the calling
// goroutine to its thread until the matching GroupEnd; Group wraps the pair.
// A Comm serialises its own calls (NCCL forbids concurrent calls on one
// communicator); use one Comm per goroutine for concurrent streams of work.
//
// Streams are CUstream handles (the device package's Stream.Handle()); 0 is the legacy
// default stream. Buffers are device addresses (Ptr, the value of a device.Ptr).
//
// # Safety
//
// NCCL's NVLink SHARP path creates NVLink multicast objects, which must not
// be created on hiercoll's target machines (see DESIGN.md). Load sets
// NCCL_NVLS_ENABLE=0 when it is unset and refuses to load when it is set to
// anything else.
//
// # Where the library is looked for
//
// In order: $HIERCOLL_NCCL_LIB; libnccl.so.2 on the loader's search path
// (this is also the copy already loaded when running inside PyTorch); the
// PyTorch wheel's copy, <site-packages>/nvidia/nccl/lib/libnccl.so.2, for the
// site-packages directories found by globbing the usual prefixes
// (SitePackages lists them). libcuda.so.1 must be loadable too.
package nccl
