// hiercoll ring kernel: one node step of ReduceScatter2D through a ring of
// FIFO slots (NCCL's simple protocol), so that the symmetric memory a rank
// holds is slots × chunk bytes per node peer, whatever M is.
//
// Ring: local rank lr sends to next = lr+1 and receives from prev = lr-1.
// The rows destined to local rank d travel a chain of lws-1 hops, from rank
// d+1 around to d: the first rank sends its own rows (send), every rank on
// the way adds its own rows to what it received and forwards the sum
// (recvReduceSend), and d adds its own and writes the result to out
// (recvReduceCopy). At op s (0 <= s < lws) rank lr works on the chain of
// destination d = lr-s-1: a hop of index s (it receives hop s and sends hop
// s+1).
//
// FIFOs: each rank has, per channel and per hop h = 1..lws-1, `slots` slots
// of one chunk each in its heap, written by prev: the chain that arrives
// there at hop h started at rank lr-h, so these are "slots per node peer".
// Separate FIFOs per hop make one slot enough: a send at op s waits only
// for a slot its next freed at op s+1 of an earlier chunk, so no cycle of
// waits can close around the ring (with one FIFO shared by all hops, a
// single slot deadlocks once lws >= 3).
//
// Credits, one pair of words per (channel, hop), counting messages and only
// ever growing (cyclic comparisons; nothing is reset between calls):
//   tail (in the receiver's pad)  += 1 when the sender posted a chunk;
//   head (in the sender's pad)    += 1 when the receiver freed its slot.
// Message m (0-based over the context's life) of a (channel, hop) sits in
// slot m % slots; its sender waits for head >= m+1-slots, its receiver for
// tail >= m+1.
//
// Call state, in this rank's own memory: the launches run so far, the
// blocks finished of the running one, the abort word (non-zero: every wait
// ends, a peer being gone) and per channel the messages its FIFOs carried.
// A launch takes its number and each channel its first message from it and
// leaves them for the next launch, so nothing the host passes changes from
// call to call and a captured launch replays correctly.
//
// Channels: block b of the grid is channel b, an independent ring over
// elements [b*per, (b+1)*per) of every destination's block, cut into
// `msgs` chunks of `chunk` elements (the last ones may be short or empty:
// every channel posts the same number of messages, so the host knows each
// count). Blocks of a rank wait only on the same block of its neighbours.
//
// Readiness: block 0 raises this rank's ready word to the launch's number
// on every node peer, and each block waits until every peer's word has
// reached it before its first op: a rank that never came is then named by
// every rank that waits, not only by its next. Every rank makes the same
// launches, so their numbers agree.
//
// Partial sums travel in the element type: fp32 accumulation inside each
// hop, rounded to the type at every hop (lws-1 roundings at this level; the
// host's tolerance counts them). int32 wraps.
//
// Self-contained for NVRTC (no #include).

#define RS_LAUNCHES 0
#define RS_FINISHED 1
#define RS_ABORT 2
#define RS_MSGS 3

__device__ __forceinline__ void rg_wait_geq(const u32* p, u32 target, const volatile u32* abort) {
  while ((int)(ld_acquire_sys(p) - target) < 0 && *abort == 0) {
  }
}

// RG_UNROLL is how many 16-byte vectors of each operand a thread loads
// before it sums and stores them: one block is a channel, and with a
// single vector per thread in flight its rate is bound by the loads'
// latency, not by NVLink. 8 read 1–4% faster than 4 on 2 H200s, but with
// the call state the 16-bit kernels then need more than the 128 registers
// a thread of a 512-thread block may hold (they spilled 8 bytes).
#define RG_UNROLL 4

// hop_combine: dst[i] = (recv ? slot[i] : 0) + own[i] for i < n, summed
// from 0 in that order in the accumulator type and rounded once: the
// block's threads share the chunk, 16-byte vectors when vec (RG_UNROLL at
// a time, then one), then the tail.
template <class T>
__device__ __forceinline__ void hop_combine(typename T::E* dst, const typename T::E* slot, const typename T::E* own,
                                            long long n, bool vec) {
  typedef typename T::E E;
  typedef typename T::A A;
  const int V = T::V;
  long long done = 0;
  if (vec) {
    const vec16* s16 = (const vec16*)slot;
    const vec16* o16 = (const vec16*)own;
    vec16* d16 = (vec16*)dst;
    const long long nv = n / V, bd = blockDim.x;
    long long v = threadIdx.x;
    for (; v + (RG_UNROLL - 1) * bd < nv; v += RG_UNROLL * bd) {
      vec16 a[RG_UNROLL], b[RG_UNROLL];
#pragma unroll
      for (int u = 0; u < RG_UNROLL; u++) {
        if (slot) a[u] = ld_cg_vec(s16 + v + u * bd);
        b[u] = o16[v + u * bd];
      }
#pragma unroll
      for (int u = 0; u < RG_UNROLL; u++) {
        A acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = (A)0;
        if (slot) T::add(acc, a[u]);
        T::add(acc, b[u]);
        d16[v + u * bd] = T::pack(acc);
      }
    }
    for (; v < nv; v += bd) {
      A acc[V];
#pragma unroll
      for (int j = 0; j < V; j++) acc[j] = (A)0;
      if (slot) T::add(acc, ld_cg_vec(s16 + v));
      T::add(acc, o16[v]);
      d16[v] = T::pack(acc);
    }
    done = nv * V;
  }
  for (long long x = done + threadIdx.x; x < n; x += blockDim.x) {
    A acc = (A)0;
    if (slot) acc += T::widen(*(volatile const E*)(slot + x));
    acc += T::widen(own[x]);
    dst[x] = T::narrow(acc);
  }
}

// ring_ready raises this rank's ready word on every node peer (block 0) and
// waits until every peer's ready word here reached launch.
__device__ __forceinline__ void ring_ready(const u64* __restrict__ peers, long long ready_off, int lws, int lr, u32 launch,
                                           const volatile u32* abort) {
  if (blockIdx.x == 0 && (int)threadIdx.x < lws && (int)threadIdx.x != lr) {
    st_release_sys((u32*)((char*)peers[threadIdx.x] + ready_off) + lr, launch);
  }
  if (threadIdx.x == 0) {
    const u32* ready = (const u32*)((char*)peers[lr] + ready_off);
    for (int p = 0; p < lws; p++) {
      if (p != lr) rg_wait_geq(ready + p, launch, abort);
    }
  }
  __syncthreads();
}

template <class T>
__device__ __forceinline__ void ring_step(const typename T::E* __restrict__ in, typename T::E* __restrict__ out,
                                          const u64* __restrict__ peers, long long stride, long long count,
                                          long long per, long long chunk, u32 msgs, long long fifo_off,
                                          long long slot_bytes, long long tails_off, long long heads_off,
                                          long long ready_off, int lws, int lr, int slots, u32* state) {
  typedef typename T::E E;
  const long long es = (long long)sizeof(E);
  const bool vec = ((((u64)in) | ((u64)out) | (u64)(stride * es) | (u64)(per * es) | (u64)(chunk * es) |
                     (u64)slot_bytes | (u64)fifo_off) & 15ull) == 0;
  const int hops = lws - 1;
  const int ch = blockIdx.x;
  char* my_heap = (char*)peers[lr];
  char* next_heap = (char*)peers[(lr + 1) % lws];
  char* prev_heap = (char*)peers[(lr + hops) % lws];

  const volatile u32* abort = (const volatile u32*)state + RS_ABORT;
  const u32 launch = ((volatile u32*)state)[RS_LAUNCHES] + 1;
  const u32 base = ((volatile u32*)state)[RS_MSGS + ch];
  ring_ready(peers, ready_off, lws, lr, launch, abort);

  const long long c0 = (long long)ch * per;
  const long long c1 = c0 + per < count ? c0 + per : count;
  for (u32 k = 0; k < msgs; k++) {
    const long long lo = c0 + (long long)k * chunk;
    const long long hi = lo + chunk < c1 ? lo + chunk : c1;
    const long long n = hi > lo ? hi - lo : 0;
    const u32 msg = base + k;
    const long long slot = (long long)(msg % (u32)slots);
    for (int s = 0; s < lws; s++) {
      const int d = (lr - s - 1 + 2 * lws) % lws;
      const bool recv = s >= 1, send = s + 1 < lws;
      // Word and slot of hop h (1..hops) of this channel: index (ch*hops + h-1).
      const long long w_in = (long long)ch * hops + s - 1, w_out = (long long)ch * hops + s;
      if (threadIdx.x == 0) {
        if (recv) rg_wait_geq((const u32*)(my_heap + tails_off) + w_in, msg + 1, abort);
        if (send) rg_wait_geq((const u32*)(my_heap + heads_off) + w_out, msg + 1 - (u32)slots, abort);
      }
      __syncthreads();
      const E* src = recv ? (const E*)(my_heap + fifo_off + (w_in * slots + slot) * slot_bytes) : (const E*)0;
      E* dst = send ? (E*)(next_heap + fifo_off + (w_out * slots + slot) * slot_bytes) : out + lo;
      if (n > 0) hop_combine<T>(dst, src, in + (long long)d * stride + lo, n, vec);
      // Every thread's loads and stores of this op come before the posts:
      // the barrier orders them, the system fence makes the stores visible
      // to the next rank before its tail moves.
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence_system();
        if (send) add_relaxed_sys((u32*)(next_heap + tails_off) + w_out, 1);
        if (recv) add_relaxed_sys((u32*)(prev_heap + heads_off) + w_in, 1);
      }
    }
  }
  // The call state for the next launch: this channel's messages, and the
  // launch's number once every block is done.
  if (threadIdx.x == 0) {
    state[RS_MSGS + ch] = base + msgs;
    __threadfence();
    if (atomicAdd(state + RS_FINISHED, 1u) == gridDim.x - 1) {
      state[RS_LAUNCHES] = launch;
      state[RS_FINISHED] = 0;
    }
  }
}

#define HC_RING(name, T, E)                                                                                   \
  extern "C" __global__ void __launch_bounds__(512, 1)                                                      \
      name(const E* in, E* out, const u64* peers, long long stride, long long count, long long per,       \
           long long chunk, long long fifo_off, long long slot_bytes, long long tails_off,                 \
           long long heads_off, long long ready_off, u32 msgs, u32* state, int lws, int lr, int slots,     \
           int rank0 /* names ranks in the host twin's timeouts; unused here */) {                          \
    ring_step<T>(in, out, peers, stride, count, per, chunk, msgs, fifo_off, slot_bytes, tails_off,         \
                 heads_off, ready_off, lws, lr, slots, state);                                              \
  }

HC_RING(hc_ring_bf16, EBF16, u16)
HC_RING(hc_ring_fp16, EF16, u16)
HC_RING(hc_ring_fp32, EF32, float)
HC_RING(hc_ring_int32, EI32, u32)
