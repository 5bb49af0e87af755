// hiercoll reduce kernels: dst[i] = sum over k < nblocks of block_k[i], where
// block_k = src + k*stride, except block number `self` (if 0 <= self <
// nblocks), which is read from self_src instead: a rank's own block comes
// straight from its input, never copied.
//
// Compiled after the peer prelude (peer.cuh: the element types, their widen,
// narrow, vector add and pack). bf16 and fp16 are widened to fp32,
// accumulated in fp32 from 0 in block order and rounded once to nearest even,
// exactly as the Go reference (kernels.ReduceBlocks) does, so both backends
// produce the same bits. int32 wraps.
//
// Launch: a persistent 1-D grid (bounded by the reduction SM budget); each
// thread walks 16-byte vectors with a grid stride, then the scalar tail. The
// vector path is taken when dst, src and the block stride are 16-byte aligned
// (the caller guarantees nothing about N, so odd widths take the scalar path).

template <class T>
__device__ __forceinline__ void reduce_blocks(typename T::E* __restrict__ dst, const typename T::E* __restrict__ src,
                                              long long stride, int nblocks, long long count, int self,
                                              const typename T::E* __restrict__ self_src) {
  typedef typename T::E E;
  typedef typename T::A A;
  const int V = T::V;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  if (self < 0 || self >= nblocks) self_src = src;  // no own block: keep the alignment test simple
  const bool aligned = ((((unsigned long long)dst) | ((unsigned long long)src) | ((unsigned long long)self_src) |
                         (unsigned long long)(stride * (long long)sizeof(E))) & 15ull) == 0;
  const long long nvec = aligned ? count / V : 0;
  const long long vstride = stride / V;
  const vec16* s = (const vec16*)src;
  const vec16* own = (const vec16*)self_src;
  vec16* d = (vec16*)dst;
  // Two vectors per thread per iteration: twice the loads in flight.
  long long v = tid;
  for (; v + nthreads < nvec; v += 2 * nthreads) {
    A a0[V], a1[V];
#pragma unroll
    for (int j = 0; j < V; j++) { a0[j] = (A)0; a1[j] = (A)0; }
#pragma unroll 4
    for (int k = 0; k < nblocks; k++) {
      const vec16* b = k == self ? own : s + k * vstride;
      const vec16 x0 = b[v];
      const vec16 x1 = b[v + nthreads];
      T::add(a0, x0);
      T::add(a1, x1);
    }
    d[v] = T::pack(a0);
    d[v + nthreads] = T::pack(a1);
  }
  for (; v < nvec; v += nthreads) {
    A a0[V];
#pragma unroll
    for (int j = 0; j < V; j++) a0[j] = (A)0;
#pragma unroll 4
    for (int k = 0; k < nblocks; k++) T::add(a0, (k == self ? own : s + k * vstride)[v]);
    d[v] = T::pack(a0);
  }
  for (long long i = nvec * V + tid; i < count; i += nthreads) {
    A acc = (A)0;
    for (int k = 0; k < nblocks; k++) acc += T::widen(k == self ? self_src[i] : src[k * stride + i]);
    dst[i] = T::narrow(acc);
  }
}

extern "C" __global__ void hc_reduce_bf16(u16* dst, const u16* src, long long stride, int nblocks, long long count,
                                        int self, const u16* self_src) {
  reduce_blocks<EBF16>(dst, src, stride, nblocks, count, self, self_src);
}
extern "C" __global__ void hc_reduce_fp16(u16* dst, const u16* src, long long stride, int nblocks, long long count,
                                        int self, const u16* self_src) {
  reduce_blocks<EF16>(dst, src, stride, nblocks, count, self, self_src);
}
extern "C" __global__ void hc_reduce_fp32(float* dst, const float* src, long long stride, int nblocks, long long count,
                                        int self, const float* self_src) {
  reduce_blocks<EF32>(dst, src, stride, nblocks, count, self, self_src);
}
extern "C" __global__ void hc_reduce_int32(u32* dst, const u32* src, long long stride, int nblocks, long long count,
                                        int self, const u32* self_src) {
  reduce_blocks<EI32>(dst, src, stride, nblocks, count, self, self_src);
}
