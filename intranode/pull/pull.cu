// hiercoll pull-reduce kernel: one node step of ReduceScatter2D in one launch
// that reads instead of writing. The rows lie in every rank's symmetric input
// at the same heap offset; each rank loads its own block from every node
// peer's input (its own from local memory), sums in fp32 (int32 exact) in
// local-rank order and stores its output once. Nothing is copied to a peer,
// no scatter buffer is read back: each byte crosses NVLink once.
//
// Each rank reads its peers' inputs through a table of their addresses
// (inputs): their symmetric heaps, or the views of a caller's buffer that
// every rank registered (rs2d.Context.Register).
//
// Handshakes, per thread block b and peer p (the same grid on every rank):
//   - arrive: block b writes the launch number into arrive[b][me] on every
//     peer, then waits until its own arrive[b][p] reached it for every peer:
//     every peer's launch has started, so its input (written by work before
//     the launch in its stream) is complete. The value (launch << 8 | tag,
//     pull_handshake) carries the tag of the input the launch reads, checked
//     against the peer's.
//   - done: once block b's loads are consumed, it writes the launch number
//     into done[b][me] on every peer, then waits for its own done[b][p]: the
//     launch ends only when every peer's blocks finished reading this rank's
//     input, so work after it may overwrite that input.
// A call of several node steps raises arrive in its first launch and done in
// its last only (phases: 1 arrive, 2 done).
//
// The launch number comes from the call state in this rank's memory, read at
// entry and advanced by the launch's last block, so a launch captured in a
// CUDA graph waits for the right values at every replay; the flags only grow
// and waits compare cyclically, so nothing is ever reset. A non-zero abort
// word (set by the host when a peer is gone) ends every wait.
//
// Blocks wait for the same-numbered blocks of their peers, so the grid must
// be co-resident: the host keeps it within one block per SM of its budget,
// which also sizes the flags (max_blocks per set and peer).
//
// Self-contained for NVRTC (no #include); peer.cuh is prepended.

enum { PS_LAUNCHES = 0, PS_FINISHED = 1, PS_ABORT = 2 };
// The flag sets: arrival, reads done.
enum { PF_ARRIVE = 0, PF_DONE = 1 };

// pull_wait_geq waits until the word reaches target (cyclically) or the
// abort word is set, and returns the word's last value.
__device__ __forceinline__ u32 pull_wait_geq(const u32* p, u32 target, const volatile u32* abort) {
  u32 v;
  while ((int)((v = ld_acquire_sys(p)) - target) < 0) {
    if (*abort) break;
  }
  return v;
}

// pull_handshake raises this block's flag (set, launch) on every peer and
// waits for every peer's on this rank (max_blocks flags per set and peer).
// A flag's value is launch << 8 | tag: at the arrival the tag says which
// input the launch reads (kernel.go's inputTag: 0 the symmetric input
// whole, 0x80 / 0x81 copied in it in pieces / staged in it in rounds,
// 0x82 read whole by the copy engine, whose arrival is a launch of this
// kernel with no rows, 1-127 a registered input's) and a rank whose peer
// reads another traps:
// ranks that disagree would read inputs nobody wrote. The barrier
// before it puts the block's loads (and, at entry, the stream's earlier
// writes) before the release, which is cumulative, so no fence of its own
// is needed (one costs time on every call: RESULTS.md); the barrier after it
// puts the acquire before the block's loads.
__device__ __forceinline__ void pull_handshake(const u64* __restrict__ peers, long long flags_off, int lws, int lr,
                                               int set, int max_blocks, u32 launch, const volatile u32* abort,
                                               u32 tag) {
  __syncthreads();
  const int t = threadIdx.x;
  if (t < lws && t != lr) {
    const long long word = ((long long)set * max_blocks + blockIdx.x) * lws;
    st_release_sys((u32*)((char*)peers[t] + flags_off) + word + lr, launch << 8 | tag);
    const u32 v = pull_wait_geq((const u32*)((char*)peers[lr] + flags_off) + word + t, launch << 8, abort);
    if ((v & 0xffu) != tag && !*abort) asm volatile("trap;");
  }
  __syncthreads();
}

// pull_sum sums the lws blocks at off from every peer's input base (inputs:
// the heaps, or a registered input's views) into out: L is
// the largest lws the kernel serves (loops unroll over it), U the vectors in
// flight per thread and peer (8 / L: the same bytes in flight per thread
// whatever the peers' number, so a small SM budget keeps NVLink busy with
// one peer as with seven).
template <class T, int L, int U>
__device__ __forceinline__ void pull_sum(const u64* __restrict__ inputs, long long off, typename T::E* __restrict__ out,
                                         long long count, int lws) {
  typedef typename T::E E;
  typedef typename T::A A;
  const int V = T::V;
  const long long es = (long long)sizeof(E);
  u64 bases = 0;
  for (int q = 0; q < lws; q++) bases |= inputs[q];
  const bool vec = ((bases | (u64)off | (u64)out | (u64)(count * es)) & 15ull) == 0;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  if (vec) {
    const vec16* src[L];
#pragma unroll
    for (int q = 0; q < L; q++) src[q] = q < lws ? (const vec16*)((const char*)inputs[q] + off) : (const vec16*)0;
    vec16* dst = (vec16*)out;
    const long long n = count * es / 16;
    long long v = tid;
    for (; v + (U - 1) * nthreads < n; v += U * nthreads) {
      vec16 x[U][L];
#pragma unroll
      for (int u = 0; u < U; u++) {
#pragma unroll
        for (int q = 0; q < L; q++) {
          if (q < lws) x[u][q] = ld_cg_vec(src[q] + v + u * nthreads);
        }
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        A acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = (A)0;
#pragma unroll
        for (int q = 0; q < L; q++) {
          if (q < lws) T::add(acc, x[u][q]);
        }
        dst[v + u * nthreads] = T::pack(acc);
      }
    }
    for (; v < n; v += nthreads) {
      A acc[V];
#pragma unroll
      for (int j = 0; j < V; j++) acc[j] = (A)0;
#pragma unroll
      for (int q = 0; q < L; q++) {
        if (q < lws) T::add(acc, ld_cg_vec(src[q] + v));
      }
      dst[v] = T::pack(acc);
    }
    return;
  }
  for (long long x = tid; x < count; x += nthreads) {
    A acc = (A)0;
    for (int q = 0; q < lws; q++) acc += T::widen(*((volatile const E*)((const char*)inputs[q] + off) + x));
    out[x] = T::narrow(acc);
  }
}

// pull_sum_bulk is pull_sum for large blocks: one thread streams PB_TILE
// bytes of every peer's block per stage into shared memory with bulk copies
// (TMA, completing on the stage's mbarrier), PB_STAGES / L stages ahead,
// and the block sums each stage from there. Tiles go to the blocks in turn.
// Bases, offset and sizes must be multiples of 16 bytes, and the GPU a
// Hopper or later (else pull_sum).
enum { PB_TILE = 8192, PB_SHARED = 131072, PB_STAGES = PB_SHARED / PB_TILE };

__device__ __forceinline__ void pb_wait(u32 bar, u32 parity) {
  u32 ok = 0;
  while (!ok) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  }
}

// pb_issue starts the bulk copies of this block's j-th tile into stage
// j % stages (at smem, L tiles per stage), completing on its mbarrier.
__device__ __forceinline__ void pb_issue(const u64* __restrict__ inputs, long long off, long long bytes, int lws, int L,
                                         int stages, u32 smem, u32 bars, long long j) {
  const int s = (int)(j % stages);
  const long long o = ((long long)blockIdx.x + j * gridDim.x) * PB_TILE;
  const u32 n = (u32)(bytes - o < PB_TILE ? bytes - o : PB_TILE);
  const u32 bar = bars + 8 * s;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(n * lws) : "memory");
  for (int q = 0; q < lws; q++) {
    const u32 dst = smem + (u32)((s * L + q) * PB_TILE);
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"((const char*)inputs[q] + off + o), "r"(n), "r"(bar)
                 : "memory");
  }
}

template <class T, int L>
__device__ __forceinline__ void pull_sum_bulk(const u64* __restrict__ inputs, long long off, typename T::E* __restrict__ out,
                                              long long count, int lws) {
  typedef typename T::A A;
  const int V = T::V;
  const int stages = PB_STAGES / L;
  extern __shared__ __align__(128) unsigned char pb_smem[];
#if __CUDA_ARCH__ < 900
  pull_sum<T, L, 8 / L>(inputs, off, out, count, lws);
#else
  const long long bytes = count * (long long)sizeof(typename T::E);
  u64 bases = 0;
  for (int q = 0; q < lws; q++) bases |= inputs[q];
  if (((bases | (u64)off | (u64)out | (u64)bytes) & 15ull) != 0) {
    pull_sum<T, L, 8 / L>(inputs, off, out, count, lws);
    return;
  }
  u64 generic;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(generic) : "l"(pb_smem));
  const u32 smem = (u32)generic, bars = smem + PB_SHARED;
  const long long tiles = (bytes + PB_TILE - 1) / PB_TILE;
  const long long mine = (long long)blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; s++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bars + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    // The handshake's acquire (generic proxy) before the copies' reads (async proxy).
    asm volatile("fence.proxy.async.global;" ::: "memory");
    for (long long j = 0; j < mine && j < stages; j++) pb_issue(inputs, off, bytes, lws, L, stages, smem, bars, j);
  }
  __syncthreads();
  for (long long j = 0; j < mine; j++) {
    const int s = (int)(j % stages);
    pb_wait(bars + 8 * s, (u32)((j / stages) & 1));
    const long long o = ((long long)blockIdx.x + j * gridDim.x) * PB_TILE;
    const int nv = (int)((bytes - o < PB_TILE ? bytes - o : PB_TILE) / 16);
    vec16* dst = (vec16*)((char*)out + o);
    for (int v = threadIdx.x; v < nv; v += blockDim.x) {
      A acc[V];
#pragma unroll
      for (int e = 0; e < V; e++) acc[e] = (A)0;
#pragma unroll
      for (int q = 0; q < L; q++) {
        if (q < lws) T::add(acc, ((const vec16*)(pb_smem + (s * L + q) * PB_TILE))[v]);
      }
      dst[v] = T::pack(acc);
    }
    __syncthreads();  // every thread's reads of stage s are done
    if (threadIdx.x == 0 && j + stages < mine) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // those reads before the next copies' writes
      pb_issue(inputs, off, bytes, lws, L, stages, smem, bars, j + stages);
    }
  }
#endif
}

// pull_finish counts the block out; the launch's last block stores its
// launch number into the call state for the next launch.
__device__ __forceinline__ void pull_finish(u32* state, u32 launch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(state + PS_FINISHED, 1u) == gridDim.x - 1) {
      state[PS_LAUNCHES] = launch;
      state[PS_FINISHED] = 0;
    }
  }
}

// One shot (small blocks): instead of pulling, each rank stores its rows
// for every node peer into that peer's landing slot (parity, own local
// rank), raises the peer's flag for the block (launch number, a release
// that covers the block's stores), waits for every peer's flag here, and
// sums the landed blocks with its own in local-rank order. One crossing of
// NVLink and one flag per call instead of two handshakes and a read round
// trip; the input is read only locally, so nothing guards it after the
// launch. The slots alternate by launch parity: launch k writes parity
// k % 2 on a peer only after this rank's launch k - 1 synchronised with
// that peer's launch k - 1 (its flags, or a pull launch's handshakes), so
// the peer finished launch k - 2, the last that read that parity.
//
// The rows are cut into 16-byte chunks handed out by the same grid-stride
// on every rank, so block b's flag covers the same chunks everywhere; a
// chunk is moved as one vector where whole and aligned, else element by
// element (into a slot, always as a vector).
template <class T>
__device__ __forceinline__ vec16 os_load(const typename T::E* p, long long v, long long count) {
  typedef typename T::E E;
  const long long x0 = v * T::V;
  if (x0 + T::V <= count && ((u64)(p + x0) & 15ull) == 0) return *(const vec16*)(p + x0);
  union {
    vec16 v;
    E e[T::V];
  } u;
  u.v.x = u.v.y = u.v.z = u.v.w = 0;
  for (int j = 0; j < T::V && x0 + j < count; j++) u.e[j] = p[x0 + j];
  return u.v;
}

template <class T>
__device__ __forceinline__ void os_store(typename T::E* p, long long v, long long count, vec16 x) {
  typedef typename T::E E;
  const long long x0 = v * T::V;
  if (x0 + T::V <= count && ((u64)(p + x0) & 15ull) == 0) {
    *(vec16*)(p + x0) = x;
    return;
  }
  union {
    vec16 v;
    E e[T::V];
  } u;
  u.v = x;
  for (int j = 0; j < T::V && x0 + j < count; j++) p[x0 + j] = u.e[j];
}

// oneshot moves and sums count elements of every local rank's block: in +
// q·stride is this rank's rows for local rank q; slot is the bytes of one
// landing slot; flags hold max_blocks × lws words.
template <class T, int L>
__device__ __forceinline__ void oneshot(const u64* __restrict__ peers, const typename T::E* __restrict__ in, long long stride,
                                        typename T::E* __restrict__ out, long long count, long long landing_off,
                                        long long slot, long long flags_off, int lws, int lr, u32 launch,
                                        const volatile u32* abort) {
  typedef typename T::A A;
  const int V = T::V;
  const long long chunks = (count + V - 1) / V;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  const long long parity = launch & 1u;
  for (int i = 1; i < lws; i++) {
    const int q = lr + i < lws ? lr + i : lr + i - lws;
    vec16* dst = (vec16*)((char*)peers[q] + landing_off + (parity * lws + lr) * slot);
    const typename T::E* src = in + q * stride;
    for (long long v = tid; v < chunks; v += nthreads) dst[v] = os_load<T>(src, v, count);
  }
  __syncthreads();
  const int t = threadIdx.x;
  const long long word = (long long)blockIdx.x * lws;
  if (t < lws && t != lr) {
    st_release_sys((u32*)((char*)peers[t] + flags_off) + word + lr, launch);
    pull_wait_geq((const u32*)((char*)peers[lr] + flags_off) + word + t, launch, abort);
  }
  __syncthreads();
  const char* land = (const char*)peers[lr] + landing_off + parity * lws * slot;
  const typename T::E* own = in + lr * stride;
  for (long long v = tid; v < chunks; v += nthreads) {
    A acc[V];
#pragma unroll
    for (int j = 0; j < V; j++) acc[j] = (A)0;
#pragma unroll
    for (int q = 0; q < L; q++) {
      if (q < lws) T::add(acc, q == lr ? os_load<T>(own, v, count) : ld_cg_vec((const vec16*)(land + q * slot) + v));
    }
    os_store<T>(out, v, count, T::pack(acc));
  }
}

#define HC_ONESHOT(name, T, E, L)                                                                                    \
  extern "C" __global__ void __launch_bounds__(512, 1)                                                           \
      name(const u64* peers, const E* in, long long stride, E* out, long long count, long long landing_off,      \
           long long slot, long long flags_off, int lws, int lr, u32* state) {                                   \
    const u32 launch = ((volatile u32*)state)[PS_LAUNCHES] + 1;                                                  \
    oneshot<T, L>(peers, in, stride, out, count, landing_off, slot, flags_off, lws, lr, launch,                   \
                  (const volatile u32*)state + PS_ABORT);                                                         \
    pull_finish(state, launch);                                                                                  \
  }

// pull_sum_vec is pull_sum with its in-flight vectors fixed by L.
template <class T, int L>
__device__ __forceinline__ void pull_sum_vec(const u64* __restrict__ inputs, long long off, typename T::E* __restrict__ out,
                                             long long count, int lws) {
  pull_sum<T, L, 8 / L>(inputs, off, out, count, lws);
}

// A launch whose own rows lie elsewhere than its table says (own non-zero:
// the rounds and copied-in calls read them from the caller's input, which
// is neither staged nor copied in for them) sums
// over a copy of the table in shared memory whose own entry points there;
// the arrival's barrier, or one of its own, puts the copy before the sum.
#define HC_PULL(name, T, E, L, SUM)                                                                                  \
  extern "C" __global__ void __launch_bounds__(512, 1)                                                      \
      name(const u64* peers, const u64* inputs, long long off, E* out, long long count, long long flags_off, \
           int lws, int lr, int phases, u32* state, int max_blocks, u32 tag, const E* own) {                \
    const u32 launch = ((volatile u32*)state)[PS_LAUNCHES] + 1;                                             \
    const volatile u32* abort = (const volatile u32*)state + PS_ABORT;                                      \
    __shared__ u64 table[L];                                                                                \
    if (own) {                                                                                              \
      if (threadIdx.x < lws) table[threadIdx.x] = threadIdx.x == lr ? (u64)own - (u64)off : inputs[threadIdx.x]; \
      inputs = table;                                                                                       \
    }                                                                                                       \
    if (phases & 1) pull_handshake(peers, flags_off, lws, lr, PF_ARRIVE, max_blocks, launch, abort, tag);  \
    else __syncthreads();                                                                                   \
    SUM<T, L>(inputs, off, out, count, lws);                                                                \
    if (phases & 2) pull_handshake(peers, flags_off, lws, lr, PF_DONE, max_blocks, launch, abort, 0);      \
    pull_finish(state, launch);                                                                             \
  }

// Every kernel the Go side names (kernel.go, oneshot.go): per element type
// and widest node served, the pulled kernel with vector loads, with bulk
// copies, and the one-shot kernel.
#define HC_KERNELS(dt, T, E, L)                                 \
  HC_PULL(hc_pull_##dt##_l##L, T, E, L, pull_sum_vec)           \
  HC_PULL(hc_pull_bulk_##dt##_l##L, T, E, L, pull_sum_bulk)     \
  HC_ONESHOT(hc_oneshot_##dt##_l##L, T, E, L)

HC_KERNELS(bf16, EBF16, u16, 2)
HC_KERNELS(bf16, EBF16, u16, 4)
HC_KERNELS(bf16, EBF16, u16, 8)
HC_KERNELS(fp16, EF16, u16, 2)
HC_KERNELS(fp16, EF16, u16, 4)
HC_KERNELS(fp16, EF16, u16, 8)
HC_KERNELS(fp32, EF32, float, 2)
HC_KERNELS(fp32, EF32, float, 4)
HC_KERNELS(fp32, EF32, float, 8)
HC_KERNELS(int32, EI32, u32, 2)
HC_KERNELS(int32, EI32, u32, 4)
HC_KERNELS(int32, EI32, u32, 8)
