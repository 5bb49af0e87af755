// hiercoll push-reduce kernel: one node step of ReduceScatter2D in a single
// launch, with SMs doing the scatter (the copy engine's rate halves when a
// GPU sends and receives at once; SM stores keep ~360 GB/s each way).
//
// Blocks [0, push_blocks) push: chunk by chunk, for each node peer in
// rank-swizzle order, they store this rank's rows for that peer straight
// into the peer's scatter buffer (slot = this rank's local rank); once a
// chunk is stored to the last peer, they raise every peer's arrival counter
// for (this rank, chunk) by one with a release atomic. Cycling the peers
// every chunk lets the reduction start earliest.
// Blocks [push_blocks, gridDim.x) reduce: for each chunk they wait until
// every peer's counter for the chunk reached its target, then sum the lws
// blocks (the own block read from the input) into out.
//
// Before the first store to a peer, a push block waits for the peer's ready
// word to reach epoch: the peer has finished the reads of its previous call.
// Block 0 raises this rank's ready word on every peer at entry (this kernel
// starts after the previous call's kernels finished, in stream order).
//
// Counters and ready words live in each rank's signal pad and only grow:
// every push block adds one to every used chunk slot of every peer per
// launch, and block 0 adds push_blocks to the slots the launch does not use,
// so each counter's target is the running total of push blocks over the
// launches, the same for every slot.
// Waits compare cyclically ((int)(value - target) >= 0): no reset is ever
// needed. All blocks must be co-resident only per rank pair in the same
// block order, which holds for grids no larger than the GPU: the host sizes
// grids at two blocks of 512 threads per SM of its budgets, which the
// launch bounds below guarantee fit (at most 64 registers per thread).
//
// The values waited for come from the device, not the host: the launch
// reads its rank's call state (launches run so far, push blocks launched so
// far) at entry, and the last block to finish stores the new totals, so a
// launch captured in a CUDA graph waits for the right values at every
// replay. Every rank makes the same launches with the same grids, so the
// totals agree across ranks. The state's abort word, set by the host when
// a peer is gone, ends every wait (the results are then garbage).
//
// Self-contained for NVRTC (no #include).

// Call state words (this rank's own memory).
enum { ST_LAUNCHES = 0, ST_PUSHED = 1, ST_FINISHED = 2, ST_ABORT = 3 };

__device__ __forceinline__ void wait_geq(const u32* p, u32 target, const volatile u32* abort) {
  while ((int)(ld_acquire_sys(p) - target) < 0) {
    if (*abort) return;
  }
}

// publish_chunk raises every peer's arrival counter for (lr, c) once the
// block's threads stored chunk c to every peer: after the barrier, each of
// lws-1 threads fences at system scope and adds one with a relaxed atomic
// (a fence followed by a strong write is a release pattern; the barrier puts
// every thread's stores before the fence). Kept out of line so that the
// copy loops are compiled as they are without it.
__device__ __noinline__ void publish_chunk(const u64* __restrict__ peers, long long counters_off, int lws, int lr, int c,
                                           int max_chunks) {
  __syncthreads();
  if (threadIdx.x < lws - 1) {
    int q = lr + 1 + threadIdx.x;
    if (q >= lws) q -= lws;
    __threadfence_system();
    add_relaxed_sys((u32*)((char*)peers[q] + counters_off) + lr * max_chunks + c, 1);
  }
}

// Where each chunk of a block starts and ends (elements), chunks of equal
// size rounded to whole vectors (the last takes the rest).
__device__ __forceinline__ void chunk_range(long long count, int chunks, int c, int vec, long long* lo, long long* hi) {
  long long per = (count + chunks - 1) / chunks;
  per = (per + vec - 1) / vec * vec;
  *lo = per * c < count ? per * c : count;
  *hi = *lo + per < count ? *lo + per : count;
}

template <class T>
__device__ __forceinline__ void push_reduce(const typename T::E* __restrict__ in, typename T::E* __restrict__ out,
                                            const u64* __restrict__ peers, long long scatter_off, long long counters_off,
                                            long long ready_off, int lws, int lr, long long count, int chunks,
                                            int push_blocks, u32 epoch, u32 target, int max_chunks,
                                            const volatile u32* abort) {
  typedef typename T::E E;
  typedef typename T::A A;
  const int V = T::V;
  const long long es = (long long)sizeof(E);
  // The vector path needs every block base and chunk boundary on 16 bytes.
  const bool vec = ((((u64)in) | ((u64)out) | (u64)(count * es) | (u64)scatter_off) & 15ull) == 0;
  const int unit = vec ? V : 1;
  char* my_heap = (char*)peers[lr];

  if (blockIdx.x < push_blocks) {
    if (blockIdx.x == 0 && threadIdx.x < lws && threadIdx.x != lr) {
      // ready[lr] = epoch on every peer: this rank's previous reads are done.
      st_release_sys((u32*)((char*)peers[threadIdx.x] + ready_off) + lr, epoch);
    }
    if (threadIdx.x == 0) {
      for (int p = 0; p < lws; p++) {
        if (p != lr) wait_geq((const u32*)(my_heap + ready_off) + p, epoch, abort);
      }
    }
    __syncthreads();
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long nthreads = (long long)push_blocks * blockDim.x;
    for (int c = 0; c < chunks; c++) {
      for (int i = 1; i < lws; i++) {
        const int p = (lr + i) % lws;
        long long lo, hi;
        chunk_range(count, chunks, c, unit, &lo, &hi);
        const E* src = in + (long long)p * count;
        E* dst = (E*)((char*)peers[p] + scatter_off) + (long long)lr * count;
        if (vec) {
          const vec16* s = (const vec16*)(src + lo);
          vec16* d = (vec16*)(dst + lo);
          const long long n = (hi - lo) / V;
          long long v = tid;
          for (; v + 3 * nthreads < n; v += 4 * nthreads) {
            const vec16 a = s[v], b = s[v + nthreads], e = s[v + 2 * nthreads], f = s[v + 3 * nthreads];
            d[v] = a; d[v + nthreads] = b; d[v + 2 * nthreads] = e; d[v + 3 * nthreads] = f;
          }
          for (; v < n; v += nthreads) d[v] = s[v];
        } else {
          for (long long x = lo + tid; x < hi; x += nthreads) dst[x] = src[x];
        }
        // Chunk c is published to every peer at once, after its store to
        // the last peer of the sweep (the reduction of a chunk needs every
        // peer's anyway): one system fence per block and chunk on the
        // critical path, not one per thread, nor one per peer.
        if (i == lws - 1) publish_chunk(peers, counters_off, lws, lr, c, max_chunks);
      }
    }
    // Advance the counters of the chunk slots this call does not use too,
    // so every slot's target stays the same running total of push blocks:
    // block 0 adds all push_blocks at once. These slots carry no data:
    // relaxed atomics, one per thread, in flight together.
    const int unused = (max_chunks - chunks) * (lws - 1);
    for (int k = threadIdx.x; blockIdx.x == 0 && k < unused; k += blockDim.x) {
      const int c = chunks + k / (lws - 1);
      const int p = (lr + 1 + k % (lws - 1)) % lws;
      add_relaxed_sys((u32*)((char*)peers[p] + counters_off) + lr * max_chunks + c, (u32)push_blocks);
    }
    return;
  }

  // Reduce blocks.
  const int rb = blockIdx.x - push_blocks;
  const int reduce_blocks = gridDim.x - push_blocks;
  const long long tid = (long long)rb * blockDim.x + threadIdx.x;
  const long long nthreads = (long long)reduce_blocks * blockDim.x;
  const E* region = (const E*)(my_heap + scatter_off);
  const u32* counters = (const u32*)(my_heap + counters_off);
  for (int c = 0; c < chunks; c++) {
    long long lo, hi;
    chunk_range(count, chunks, c, unit, &lo, &hi);
    if (threadIdx.x == 0) {
      for (int s = 0; s < lws; s++) {
        if (s != lr) wait_geq(counters + s * max_chunks + c, target, abort);
      }
    }
    __syncthreads();
    if (vec) {
      const long long n = (hi - lo) / V;
      for (long long v = tid; v < n; v += nthreads) {
        A acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = (A)0;
        for (int s = 0; s < lws; s++) {
          if (s == lr) {
            T::add(acc, ((const vec16*)(in + (long long)lr * count + lo))[v]);
          } else {
            T::add(acc, ld_cg_vec((const vec16*)(region + (long long)s * count + lo) + v));
          }
        }
        ((vec16*)(out + lo))[v] = T::pack(acc);
      }
    } else {
      for (long long x = lo + tid; x < hi; x += nthreads) {
        A acc = (A)0;
        for (int s = 0; s < lws; s++) {
          const E* b = s == lr ? in + (long long)lr * count : region + (long long)s * count;
          acc += T::widen(s == lr ? b[x] : *(volatile const E*)(b + x));
        }
        out[x] = T::narrow(acc);
      }
    }
  }
}

// finish_launch counts the block out; the last block of the launch stores
// the launch's totals into the call state for the next launch (stream
// order makes them visible to it) and clears the count.
__device__ __forceinline__ void finish_launch(u32* state, u32 launches, u32 pushed) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(state + ST_FINISHED, 1u) == gridDim.x - 1) {
      state[ST_LAUNCHES] = launches;
      state[ST_PUSHED] = pushed;
      state[ST_FINISHED] = 0;
    }
  }
}

#define HC_PUSH_REDUCE(name, T, E)                                                                            \
  extern "C" __global__ void __launch_bounds__(512, 2)                                                    \
      name(const E* in, E* out, const u64* peers, long long scatter_off, long long counters_off,        \
           long long ready_off, int lws, int lr, long long count, int chunks, int push_blocks,            \
           u32* state, int max_chunks) {                                                                  \
    const u32 epoch = ((volatile u32*)state)[ST_LAUNCHES] + 1;                                            \
    const u32 target = ((volatile u32*)state)[ST_PUSHED] + (u32)push_blocks;                             \
    push_reduce<T>(in, out, peers, scatter_off, counters_off, ready_off, lws, lr, count, chunks,          \
                   push_blocks, epoch, target, max_chunks, (const volatile u32*)state + ST_ABORT);        \
    finish_launch(state, epoch, target);                                                                  \
  }

HC_PUSH_REDUCE(hc_push_reduce_bf16, EBF16, u16)
HC_PUSH_REDUCE(hc_push_reduce_fp16, EF16, u16)
HC_PUSH_REDUCE(hc_push_reduce_fp32, EF32, float)
HC_PUSH_REDUCE(hc_push_reduce_int32, EI32, u32)
