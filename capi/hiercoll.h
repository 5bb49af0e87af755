/*
 * hiercoll.h — the C ABI of hiercoll (libhiercoll.so).
 *
 * Build:  scripts/build-capi.sh   (go build -buildmode=c-shared -o build/libhiercoll.so ./capi)
 * Link:   cc -I capi app.c -L build -lhiercoll -lpthread
 *
 * hiercoll's ReduceScatter2D is a sum reduce-scatter of an [M, N] row-major
 * tensor per rank into [M/world, N] per rank, over nnodes x local_world_size
 * GPUs, reducing inside each node first and then sending 1/local_world_size
 * of the data between nodes. The library is written in Go; this header is the
 * whole of its C surface.
 *
 * Conventions
 *   - Every function returns HC_OK (0) or one of the HC_ERR_* codes, except
 *     hc_abi_version and hc_last_error. An error of several kinds at once (a
 *     timeout joined with a peer failure, say) gets the lowest code.
 *   - Objects are 64-bit integer handles (never pointers). A handle of the
 *     wrong kind, or one already destroyed, gives HC_ERR_INVALID. Handles are
 *     never reused within a process.
 *   - Device memory is passed as a 64-bit device address (CUdeviceptr; on the
 *     simulated backend an address from hc_sim_alloc). Streams are 64-bit
 *     CUstream values (0 is the legacy default stream); on the simulated
 *     backend they come from hc_stream_create (0 is a per-rank default stream).
 *   - Output pointer arguments must not be NULL unless a function says so.
 *   - Thread safety: every function may be called from any thread. A rank
 *     handle of a simulated world is meant to be driven by its own thread
 *     (collective calls of the ranks of one world must run concurrently).
 *     Calls on one context are serialised inside the library.
 *   - Collective functions (marked so) must be called by every rank of the
 *     world with the same arguments; they block until all ranks arrive or
 *     a timeout (60 s by default) passes, then fail with HC_ERR_TIMEOUT.
 *
 * Error messages
 *   hc_last_error returns the message of the last failed call made by the
 *   calling OS thread. The library records it per OS thread (Linux thread
 *   id): a Go function exported through cgo runs on the C thread that called
 *   it, so the id it reads is the caller's. Successful calls leave the
 *   message in place (errno-style: read it right after a failure). The
 *   messages of at most 4096 threads are kept; beyond that the oldest are
 *   dropped, and a new thread that reuses a dead thread's id may see that
 *   thread's last message until it fails itself.
 *
 * CUDA and other libraries
 *   On GPUs the library works in each device's primary context, the context
 *   the CUDA runtime (and so PyTorch and NCCL) uses: device pointers and
 *   streams pass freely between them, and it works where the context already
 *   exists. It never synchronises the device; reduce-scatter calls only
 *   enqueue work on the caller's stream.
 */
#ifndef HIERCOLL_H
#define HIERCOLL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The ABI this header describes; hc_abi_version() returns the library's.
 * Version 3 added HC_GRAPHS, hc_rs2d_clear_signals, hc_init_store and
 * hc_rs2d_matmul_reduce_scatter; version 4 HC_E4M3, hc_gemm,
 * hc_gemm_workspace_bytes and hc_rs2d_scaled_matmul_reduce_scatter; version 5
 * HC_PULL and hc_rs2d_input; version 6 HC_SCALE_TENSOR, HC_SCALE_ROW,
 * HC_SCALE_BLOCK, hc_gemm_ex and hc_rs2d_scaled_matmul_reduce_scatter_ex
 * (row-wise and block-wise fp8 scales); version 7 hc_rs2d_register and
 * hc_rs2d_deregister; version 8 made the pull engine what a context without
 * HC_OVERLAP_WITH_GEMM takes by default on nodes of 2 to 8 GPUs (its
 * hc_rs2d_input and hc_rs2d_register then work without HC_PULL); version 9
 * gave a context made with HC_OVERLAP_WITH_GEMM a second context of the
 * default engine for small products, which hc_rs2d_matmul_reduce_scatter
 * runs as the GEMM then the reduce-scatter, and whose symmetric input
 * hc_rs2d_input then gives; no earlier signature changed.
 */
#define HC_ABI_VERSION 9

/* Return codes. */
#define HC_OK 0
#define HC_ERR_INVALID 1       /* bad argument, shape, dtype, handle or state */
#define HC_ERR_NOT_SUPPORTED 2 /* not available here (no GPU, no driver, ...) */
#define HC_ERR_TIMEOUT 3       /* a rank did not arrive, or a bounded wait ran out */
#define HC_ERR_PEER 4          /* another rank failed or left */
#define HC_ERR_CLOSED 5        /* the object was closed */
#define HC_ERR_OTHER 6         /* anything else (a CUDA error, ...) */

/* Element types (hc_rs2d_create; HC_E4M3 only as a GEMM input). */
#define HC_BF16 1
#define HC_F16 2
#define HC_F32 3
#define HC_I32 4
#define HC_E4M3 5 /* fp8 e4m3 (float8_e4m3fn): an input of hc_gemm and the scaled GEMM + reduce-scatter (ABI version 4) */

/* Flags of hc_rs2d_create's overlap argument (ABI version 2). */
#define HC_OVERLAP_WITH_GEMM 1 /* each scatter copy waits for its destination's GEMM signal */
#define HC_SPLIT_FIRST_BLOCK 2 /* with it: the first block in consumption order goes in two halves */
#define HC_GRAPHS 4            /* calls may be captured in CUDA graphs and replayed (ABI version 3) */
#define HC_PULL 8              /* the pull engine: each rank reads its rows from the peers' symmetric inputs (ABI version 5) */

/* Backends (hc_world_device). */
#define HC_BACKEND_SIM 1  /* simulated GPU on the CPU */
#define HC_BACKEND_CUDA 2 /* a CUDA GPU */

/* The library's ABI version (HC_ABI_VERSION of the header it was built with). */
int hc_abi_version(void);

/*
 * Copies the calling thread's last error message into buf (at most len-1
 * bytes, always NUL-terminated when len > 0) and returns the message's full
 * length in bytes (without the NUL), like snprintf; buf may be NULL when len
 * is 0. Returns 0 (and writes "") when this thread has no recorded error.
 */
int hc_last_error(char* buf, int len);

/* ---- Worlds: the rank a handle stands for ---------------------------- */

/*
 * Joins the multi-process job described by the torchrun environment
 * (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
 * and opens this rank's GPU (HIERCOLL_DEVICE, else LOCAL_RANK) in its primary
 * context. The rendezvous listens on HIERCOLL_PORT, else MASTER_PORT+1, so it
 * can run beside torch.distributed. Collective over the job. Once per
 * process: later calls return the same handle without joining again (until
 * hc_world_close).
 */
int hc_init_from_env(int64_t* world);

/*
 * A key-value store every rank of the job shares (torch.distributed's), for
 * hc_init_store. set publishes len bytes of value under key; get waits at
 * most timeout_ms for some rank to set key, then writes its value into buf
 * (at most cap bytes) and its full length into *len. Both return 0, or
 * non-zero on failure (get: also when the wait ran out). user is
 * hc_init_store's. They are called on the thread that called hc_init_store.
 */
typedef int (*hc_store_set_fn)(void* user, const char* key, const void* value, int64_t len);
typedef int (*hc_store_get_fn)(void* user, const char* key, int64_t timeout_ms, void* buf, int64_t cap,
                               int64_t* len);

/*
 * Joins the job as hc_init_from_env does (the rank and world shape from
 * RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE; the GPU from
 * HIERCOLL_DEVICE, else LOCAL_RANK), but rendezvouses through the store:
 * rank 0 listens on host (a name or address the other ranks reach it at)
 * with a port the kernel picks, and sets prefix+"secret" to a fresh random
 * secret and then prefix+"addr" to a nonce naming this rendezvous (16 hex
 * digits), a space and its address, which it marks "<nonce> closed" once
 * the rendezvous has ended; the other ranks get both and connect, waiting
 * out values of another rendezvous (rank 0 refuses a prefix whose address
 * names another job's rendezvous that still answers). No port needs
 * agreeing on. Use a prefix of its own for each rendezvous of a job. host matters on rank 0 only. Collective over the
 * job; once per process, sharing hc_init_from_env's handle. (ABI version 3.)
 */
int hc_init_store(hc_store_set_fn set, hc_store_get_fn get, void* user, const char* prefix, const char* host,
                  int64_t* world);

/*
 * Creates an in-process world of nodes x gpus_per_node simulated GPUs (the
 * CPU backend) and writes one rank handle per rank, in rank order
 * (node-major), to worlds_out[0 .. nodes*gpus_per_node-1]. Drive each rank
 * from its own thread. At most 256 ranks.
 */
int hc_init_sim(int nodes, int gpus_per_node, int64_t* worlds_out);

/* Rank, world size, local rank and local world size; NULL outputs are skipped. */
int hc_world_info(int64_t world, int* rank, int* size, int* local_rank, int* local_size);

/* The rank's device: HC_BACKEND_* and the device ordinal; NULL outputs are skipped. */
int hc_world_device(int64_t world, int* backend, int* ordinal);

/*
 * Releases a rank: the streams and memory made through this header for it,
 * its device and its connection to the other ranks. Fails with
 * HC_ERR_INVALID while contexts of the rank are alive (destroy them first).
 * Not collective, but call it after the rank's last collective.
 */
int hc_world_close(int64_t world);

/* ---- ReduceScatter2D ---------------------------------------------------- */

/*
 * Creates a ReduceScatter2D context (collective). max_m: the largest M of a
 * call (divisible by the world size); n: the columns of every call; dtype:
 * HC_BF16, HC_F16, HC_F32 or HC_I32; overlap: 0, or HC_OVERLAP_WITH_GEMM,
 * which makes each scatter copy wait on the GPU for its destination's GEMM
 * signal (see hc_rs2d_raise_signal), optionally | HC_SPLIT_FIRST_BLOCK: the
 * first block in consumption order then goes in two parts, its first
 * hc_rs2d_early_rows rows after the early signal (hc_rs2d_raise_early), the
 * rest after its GEMM signal (a context made with HC_OVERLAP_WITH_GEMM also
 * holds a second context of the default engine, for the small products of
 * hc_rs2d_matmul_reduce_scatter: its symmetric input of max_m x n elements
 * and pads more; ABI version 9); or HC_PULL (without HC_OVERLAP_WITH_GEMM): the
 * pull engine, whose symmetric input hc_rs2d_input gives, which a context
 * without HC_OVERLAP_WITH_GEMM takes by default too on nodes of 2 to 8 GPUs
 * (ABI version 8; elsewhere the default is the SM engine); other bits fail
 * with HC_ERR_INVALID; reduction_sms: the SM budget of the intra-node reduce
 * (0: the default: 16 beside a GEMM, 32 for the SM engine's reduce blocks
 * and for the pull engine's whole step). With HC_GRAPHS (ABI version 3) calls may be captured in CUDA graphs
 * (cuStreamBeginCapture, torch.cuda.graph) and replayed, mixed freely with
 * calls made directly: every call's signal words carry the same value
 * (hc_rs2d_signal_value is then always 1) and are reset on the GPU. A GEMM
 * producer then raises a call's signals only after the previous call in
 * stream order. Without it, a call on a stream being captured fails with
 * HC_ERR_INVALID. The NVSHMEM transport cannot replay.
 */
int hc_rs2d_create(int64_t world, int64_t max_m, int64_t n, int dtype, int overlap,
                   int reduction_sms, int64_t* ctx);

/* Destroys a context after a barrier with the other ranks (collective). */
int hc_rs2d_destroy(int64_t ctx);

/*
 * Enqueues on stream: out = (sum over ranks of in)[this rank's M/world rows].
 * in_ptr is [m, n] and out_ptr [m/world, n], row-major, contiguous, of the
 * context's dtype, on the rank's device; every rank calls it with the same m
 * (0 < m <= max_m, m divisible by the world size), each pointer a multiple of
 * the element size. Bad arguments fail with
 * HC_ERR_INVALID before anything is enqueued. Nothing is synchronised: a rank
 * that never arrives shows when the stream is synchronised.
 */
int hc_rs2d_reduce_scatter(int64_t ctx, uint64_t in_ptr, int64_t m, uint64_t out_ptr, uint64_t stream);

/*
 * Writes to *ptr the address of this rank's symmetric input of a context made
 * with HC_PULL: [max_m, n] of the context's dtype on the rank's device, valid
 * until hc_rs2d_destroy. Rows written there and passed as in_ptr (with any m)
 * are read by the peers in place: the call copies nothing first. The call
 * ends only once every peer read them, so the next rows may be written after
 * it in stream order. Any other in_ptr works too, with one device copy into
 * it first (on one node of more than 2 GPUs, calls of blocks from 8 MiB go
 * around a ring that reads each rank's input where it lies: no copy); ranks
 * may mix the two, except where that copy goes in pieces (one node of 2 GPUs,
 * blocks from 128 MiB) or where the copy engine pulls the symmetric input (one node of 2 GPUs,
 * blocks from 256 MiB): there every rank passes the symmetric input or none
 * does (a call that mixes them fails on simulated ranks; on GPUs its kernel
 * traps and the CUDA context is lost). On a context made with
 * HC_OVERLAP_WITH_GEMM (ABI version 9) it is the symmetric input of its
 * small products' context (hc_rs2d_matmul_reduce_scatter): pass it as c
 * there, and a small product is reduce-scattered where the GEMM wrote it.
 * HC_ERR_NOT_SUPPORTED where the engine is not the pull engine (without
 * HC_PULL, nodes of 1 or more than 8 GPUs). (ABI version 5.)
 */
int hc_rs2d_input(int64_t ctx, uint64_t* ptr);

/*
 * Registers this rank's buffer of bytes bytes at ptr (whole rows of n
 * elements of the context's dtype, anywhere in a cudaMalloc'ed allocation: a
 * plain PyTorch tensor) as its input of later calls, with every rank
 * (collective: each rank its own buffer, the same bytes on every rank), for a
 * context of the pull engine (see hc_rs2d_input): a call whose in_ptr is ptr
 * and whose m x n
 * elements fit in bytes is then read by the peers in place, with no copy into
 * the symmetric input. Every rank passes its registered buffer to the same
 * calls (or none does), and keeps it allocated until hc_rs2d_deregister or
 * hc_rs2d_destroy. Calls small enough to go in one shot (each rank pushes
 * its own rows) read it in place registered or not. HC_ERR_NOT_SUPPORTED
 * where the context's engine is not the pull engine, or for memory that
 * has no IPC handle (cuMemCreate, PyTorch's expandable segments): calls with
 * it unregistered still work. On one node of 2 GPUs large calls are read by
 * the copy engine where every rank's buffer lies in an allocation of whole
 * 2 MiB pages (it read one 16 bytes past them 25-35% slower on 2 H200s), by
 * SM loads otherwise. The symmetric input (hc_rs2d_input) needs no
 * registration: registering it does nothing. (ABI version 7.)
 */
int hc_rs2d_register(int64_t ctx, uint64_t ptr, int64_t bytes);

/*
 * Releases the registration of the buffer at ptr (local; every rank should
 * deregister the buffers it registered). Synchronise the streams of the
 * calls that read it first. HC_ERR_INVALID if ptr is not registered.
 * (ABI version 7.)
 */
int hc_rs2d_deregister(int64_t ctx, uint64_t ptr);

/*
 * The value a GEMM producer writes into a signal word to release the next
 * call. A call rejected before any work (HC_ERR_INVALID) passes over it, so
 * that signals already raised for that call release nothing; the producer of
 * the next call raises its signals with the new value.
 */
int hc_rs2d_signal_value(int64_t ctx, uint32_t* value);

/* The device address of the 32-bit GEMM signal word for destination rank dest. */
int hc_rs2d_signal_addr(int64_t ctx, int dest, uint64_t* addr);

/* Enqueues on stream the write that releases the next call's scatter to rank dest. */
int hc_rs2d_raise_signal(int64_t ctx, int dest, uint64_t stream);

/*
 * With HC_SPLIT_FIRST_BLOCK: how many rows of the first block in consumption
 * order a producer of a call of m rows raises the early signal after (0: the
 * context does not split, e.g. without node peers). (ABI version 2.)
 */
int hc_rs2d_early_rows(int64_t ctx, int64_t m, int64_t* rows);

/*
 * Enqueues on stream the write of the next call's early signal for rank dest
 * (the first block in consumption order): its first hc_rs2d_early_rows rows
 * are complete. hc_rs2d_early_signal_addr gives the word's device address for
 * a producer kernel, which writes hc_rs2d_signal_value into it. (ABI version 2.)
 */
int hc_rs2d_raise_early(int64_t ctx, int dest, uint64_t stream);
int hc_rs2d_early_signal_addr(int64_t ctx, int dest, uint64_t* addr);

/*
 * Passes over the next call's signal value, as a rejected call does, for a
 * caller that raised a call's signals and then did not make the call (for
 * example because its own checks failed). Collective: every rank skips the
 * same calls. Does nothing on a context made without overlap_with_gemm.
 * (ABI version 2.)
 */
int hc_rs2d_skip_call(int64_t ctx);

/*
 * On a context made with HC_GRAPHS, enqueues on stream the reset of this
 * rank's GEMM signal words (early ones too): for a producer that raised a
 * call's signals and then gave the call up, as every call there has the same
 * value (stream must be ordered after the raises). Nothing on other
 * contexts, whose hc_rs2d_skip_call passes over the value instead. (ABI
 * version 3.)
 */
int hc_rs2d_clear_signals(int64_t ctx, uint64_t stream);

/*
 * Writes the order in which the scatter consumes destination ranks (the
 * world size of them) to order[0 .. world-1]; len must be at least the world
 * size. A GEMM producer that finishes row blocks in this order lets
 * communication start earliest.
 */
int hc_rs2d_consumption_order(int64_t ctx, int* order, int len);

/* The layouts of B for hc_rs2d_matmul_reduce_scatter. */
#define HC_B_KN 0 /* [k, n] row-major */
#define HC_B_NK 1 /* [n, k] row-major: a torch Linear weight */

/*
 * GEMM + reduce-scatter with hiercoll's own GEMM (Hopper GPUs; the CPU
 * backend runs its reference twin), on a context made with
 * HC_OVERLAP_WITH_GEMM (without HC_SPLIT_FIRST_BLOCK): c[0 .. m-1] = a · b is
 * computed in one launch, on a stream of the context's that first waits for
 * stream's earlier work, and each part of a destination's rows is signalled
 * as soon as it is stored, so the reduce-scatter of c into out, enqueued on
 * stream, copies it while the rest is computed; stream then waits for the
 * GEMM. On one node the GEMM may add the peers' landed blocks to the rank's
 * own rows itself instead of a reduce pass (two ranks: always, with the
 * reduce pass's bits; more: where it outlasts the copies, rounding to the
 * dtype after each added block, as a ring does per hop). a is [m, k] with rows lda elements apart (0: k); b is [k, n]
 * (HC_B_KN) or [n, k] (HC_B_NK) with rows ldb elements apart (0: dense); c
 * is [m, n] contiguous and out [m / world, n], all of the context's dtype.
 * Every rank calls it with the same m. Fails with HC_ERR_NOT_SUPPORTED,
 * before anything is enqueued, where the own GEMM cannot compute the product
 * (fp32 or int32, rows of a, b or c not 16-byte aligned, a GPU that is not
 * Hopper): the caller then computes c itself and raises the signals.
 * Small products (below 4e10 FLOP per rank, 2·m·n·k, times the ranks less
 * one; fewer than 128 rows per rank; one rank: ABI version 9) go instead as
 * the GEMM on stream, then the reduce-scatter by the context's second
 * context of the default engine, which reads c in place where c is its
 * symmetric input (hc_rs2d_input): the copy engine's latencies would cost
 * them more than the overlap hides. (ABI version 3.)
 */
int hc_rs2d_matmul_reduce_scatter(int64_t ctx, uint64_t a, int64_t lda, uint64_t b, int64_t ldb, int b_layout,
                                  int64_t m, int64_t k, uint64_t c, uint64_t out, uint64_t stream);

/*
 * hc_rs2d_matmul_reduce_scatter with fp8 operands (ABI version 4):
 * c[0 .. m-1] = scale_a * scale_b * (a · b), a [m, k] and b [n, k] (HC_B_NK:
 * a Linear weight; the tensor cores read fp8 operands K-major only) in
 * HC_E4M3, rows lda and ldb elements apart (0: k, which must then be a
 * multiple of 16), scale_a and scale_b each the device address of one
 * fp32 (0: 1), as torch._scaled_mm's per-tensor scales; c, out and the sum
 * in the context's dtype (HC_BF16 or HC_F16). Otherwise as above.
 */
int hc_rs2d_scaled_matmul_reduce_scatter(int64_t ctx, uint64_t a, int64_t lda, uint64_t b, int64_t ldb,
                                         uint64_t scale_a, uint64_t scale_b, int64_t m, int64_t k, uint64_t c,
                                         uint64_t out, uint64_t stream);

/*
 * The scalings of fp8 operands (ABI version 6): how hc_gemm_ex's and
 * hc_rs2d_scaled_matmul_reduce_scatter_ex's scale_a and scale_b (device
 * addresses of fp32, a [m, k], b [n, k]) apply; the product of each pair
 * of elements is weighted by their scales, summed in fp32 and rounded once.
 *   HC_SCALE_TENSOR  one fp32 each (0: 1): c = scale_a * scale_b * (a . b^T).
 *   HC_SCALE_ROW     scale_a [m] (per row of a), scale_b [n] (per row of b,
 *                    i.e. per column of c): c[i, j] = scale_a[i] * scale_b[j] *
 *                    (a . b^T)[i, j] (torch's row-wise scale_a [m, 1],
 *                    scale_b [1, n]).
 *   HC_SCALE_BLOCK   scale_a per 1 x 128 block of a, scale_b per 128 x 128
 *                    block of b; kb = ceil(k / 128), nb = ceil(n / 128):
 *                    scale_a laid out [kb, m] (block (i, q) at q * m + i:
 *                    the memory of torch's M-major [m, kb] scale_a, the
 *                    transpose of a contiguous [kb, m]), scale_b [nb, kb]
 *                    row-major (torch's scale_b, the transpose of a
 *                    contiguous [nb, kb]); each 128-deep k block's fp32
 *                    sum is multiplied by its two scales and added to the
 *                    fp32 accumulator.
 * Row-wise and block-wise need both arrays, 4-byte aligned, inside device
 * allocations of at least the sizes above (checked: HC_ERR_INVALID).
 */
#define HC_SCALE_TENSOR 0
#define HC_SCALE_ROW 1
#define HC_SCALE_BLOCK 2

/*
 * hc_rs2d_scaled_matmul_reduce_scatter with the scaling of scale_a and
 * scale_b given (HC_SCALE_*; ABI version 6): each rank's c[0 .. m-1] is its
 * scaled product of a [m, k] and b [n, k] (HC_E4M3), then reduce-scattered
 * into out as above. Every rank calls it with the same m and scaling.
 */
int hc_rs2d_scaled_matmul_reduce_scatter_ex(int64_t ctx, uint64_t a, int64_t lda, uint64_t b, int64_t ldb,
                                            int scaling, uint64_t scale_a, uint64_t scale_b, int64_t m, int64_t k,
                                            uint64_t c, uint64_t out, uint64_t stream);

/* ---- GEMM --------------------------------------------------------------- */

/*
 * Enqueues on stream c = a · b (HC_E4M3 inputs: times scale_a * scale_b) by
 * hiercoll's own GEMM on the rank's device (Hopper GPUs; the simulated
 * backend runs its reference twin) (ABI version 4). a is [m, k] row-major
 * with rows lda elements apart (0: k); b is [k, n] (HC_B_KN) or [n, k]
 * (HC_B_NK) with rows ldb apart (0: dense); c is [m, n] with rows ldc apart
 * (0: n). a_dtype (a's and b's): HC_BF16, HC_F16 or HC_E4M3 (then b must be
 * HC_B_NK); c_dtype: HC_BF16 or HC_F16, a_dtype's unless it is HC_E4M3.
 * scale_a, scale_b: device addresses of one fp32 each, or 0 (1); only for
 * HC_E4M3. fp32 accumulation, c rounded once. workspace: 0, or
 * hc_gemm_workspace_bytes of device memory, zeroed before its first use,
 * which lets the last wave of tiles be shared out by k (faster where the
 * tiles do not divide among the SMs); the GEMM leaves it as it found it,
 * and launches that use one workspace must run one at a time (one stream,
 * or ordered). Fails with HC_ERR_NOT_SUPPORTED, before anything is
 * enqueued, where the own GEMM cannot compute the product (rows not 16-byte
 * aligned, HC_E4M3 with HC_B_KN, a GPU that is not Hopper).
 */
int hc_gemm(int64_t world, int a_dtype, uint64_t a, int64_t lda, uint64_t b, int64_t ldb, int b_layout,
            uint64_t scale_a, uint64_t scale_b, int c_dtype, uint64_t c, int64_t ldc, int64_t m, int64_t n,
            int64_t k, uint64_t workspace, uint64_t stream);

/* The size in bytes of an hc_gemm workspace on the rank's device (ABI version 4). */
int hc_gemm_workspace_bytes(int64_t world, int64_t* bytes);

/*
 * hc_gemm with the scaling of scale_a and scale_b given (HC_SCALE_*, see
 * above; ABI version 6): HC_SCALE_ROW and HC_SCALE_BLOCK take HC_E4M3
 * operands (b HC_B_NK) and both scale arrays; HC_SCALE_TENSOR is hc_gemm.
 */
int hc_gemm_ex(int64_t world, int a_dtype, uint64_t a, int64_t lda, uint64_t b, int64_t ldb, int b_layout,
               int scaling, uint64_t scale_a, uint64_t scale_b, int c_dtype, uint64_t c, int64_t ldc, int64_t m,
               int64_t n, int64_t k, uint64_t workspace, uint64_t stream);

/* ---- Streams ----------------------------------------------------------- */

/*
 * Creates a stream on the rank's device and writes its handle (CUDA: the
 * CUstream itself, non-blocking). Released by hc_stream_destroy or
 * hc_world_close.
 */
int hc_stream_create(int64_t world, uint64_t* stream);

/*
 * Waits until all work enqueued on stream has run, for at most timeout_ms
 * milliseconds (<= 0: 60 s), and returns the stream's error if it failed
 * (HC_ERR_TIMEOUT names what it waited for). On CUDA any CUstream of the
 * rank's device may be given (synchronising a PyTorch stream is usually
 * PyTorch's job).
 */
int hc_stream_synchronize(int64_t world, uint64_t stream, int64_t timeout_ms);

/* Destroys a stream from hc_stream_create (a foreign CUstream is left alive). */
int hc_stream_destroy(int64_t world, uint64_t stream);

/* ---- Device memory (for tests on the simulated backend; works on CUDA too) */

/* Allocates size bytes of device memory on the rank's device (256-byte aligned, not zeroed).
 * On the simulated backend, all simulated GPUs of the process hold at most HIERCOLL_SIM_MEMORY
 * bytes together (bytes with an optional K/M/G/T suffix; default half the machine's memory):
 * a size above that is HC_ERR_INVALID, one above what is left of it HC_ERR_OTHER ("out of memory"). */
int hc_sim_alloc(int64_t world, int64_t size, uint64_t* ptr);

/* Frees memory from hc_sim_alloc. */
int hc_sim_free(int64_t world, uint64_t ptr);

/* Synchronous copies between host memory and device memory of the rank. */
int hc_sim_copy_to_device(int64_t world, uint64_t dst, const void* src, int64_t size);
int hc_sim_copy_to_host(int64_t world, void* dst, uint64_t src, int64_t size);

#ifdef __cplusplus
}
#endif

#endif /* HIERCOLL_H */
