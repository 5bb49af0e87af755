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
// input the launch reads (0: the symmetric input, 1-255: a registered
// input's, kernel.go's inputTag) and a rank whose peer reads another
// traps: ranks that disagree would read inputs nobody wrote. The barrier before it puts
// the block's loads (and, at entry, the stream's earlier writes) before the
// release; the barrier after it puts the acquire before the block's loads.
__device__ __forceinline__ void pull_handshake(const u64* __restrict__ peers, long long flags_off, int lws, int lr,
                                               int set, int max_blocks, u32 launch, const volatile u32* abort,
                                               u32 tag) {
  __syncthreads();
  const int t = threadIdx.x;
  if (t < lws && t != lr) {
    const long long word = ((long long)set * max_blocks + blockIdx.x) * lws;
    __threadfence_system();
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

#define HC_PULL(name, T, E, L)                                                                                  \
  extern "C" __global__ void __launch_bounds__(512, 1)                                                      \
      name(const u64* peers, const u64* inputs, long long off, E* out, long long count, long long flags_off, \
           int lws, int lr, int phases, u32* state, int max_blocks, u32 tag) {                              \
    const u32 launch = ((volatile u32*)state)[PS_LAUNCHES] + 1;                                             \
    const volatile u32* abort = (const volatile u32*)state + PS_ABORT;                                      \
    if (phases & 1) pull_handshake(peers, flags_off, lws, lr, PF_ARRIVE, max_blocks, launch, abort, tag);  \
    pull_sum<T, L, 8 / L>(inputs, off, out, count, lws);                                                    \
    if (phases & 2) pull_handshake(peers, flags_off, lws, lr, PF_DONE, max_blocks, launch, abort, 0);      \
    pull_finish(state, launch);                                                                             \
  }

HC_PULL(hc_pull_bf16_l2, EBF16, u16, 2)
HC_PULL(hc_pull_bf16_l4, EBF16, u16, 4)
HC_PULL(hc_pull_bf16_l8, EBF16, u16, 8)
HC_PULL(hc_pull_fp16_l2, EF16, u16, 2)
HC_PULL(hc_pull_fp16_l4, EF16, u16, 4)
HC_PULL(hc_pull_fp16_l8, EF16, u16, 8)
HC_PULL(hc_pull_fp32_l2, EF32, float, 2)
HC_PULL(hc_pull_fp32_l4, EF32, float, 4)
HC_PULL(hc_pull_fp32_l8, EF32, float, 8)
HC_PULL(hc_pull_int32_l2, EI32, u32, 2)
HC_PULL(hc_pull_int32_l4, EI32, u32, 4)
HC_PULL(hc_pull_int32_l8, EI32, u32, 8)
