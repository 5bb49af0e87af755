// hiercoll reduce kernels: dst[i] = sum over k < nblocks of block_k[i], where
// block_k = src + k*stride, except block number `self` (if 0 <= self <
// nblocks), which is read from self_src instead: a rank's own block comes
// straight from its input, never copied.
//
// Self-contained for NVRTC (no #include). bf16 and fp16 are widened to fp32,
// accumulated in fp32 from 0 in block order and rounded once to nearest even,
// exactly as the Go reference (kernels.ReduceBlocks) does, so both backends
// produce the same bits. int32 wraps.
//
// Launch: a persistent 1-D grid (bounded by the reduction SM budget); each
// thread walks 16-byte vectors with a grid stride, then the scalar tail. The
// vector path is taken when dst, src and the block stride are 16-byte aligned
// (the caller guarantees nothing about N, so odd widths take the scalar path).

typedef unsigned short u16;
typedef unsigned int u32;

struct alignas(16) vec4 { u32 x, y, z, w; };

__device__ __forceinline__ float u32_as_f32(u32 u) { float f; asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u)); return f; }
__device__ __forceinline__ u32 f32_as_u32(float f) { u32 u; asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f)); return u; }

struct BF16 {
  typedef u16 E; typedef float A;
  static __device__ __forceinline__ float widen(u16 h) { return u32_as_f32(((u32)h) << 16); }
  static __device__ __forceinline__ u16 narrow(float f) { u16 r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f)); return r; }
};
struct F16 {
  typedef u16 E; typedef float A;
  static __device__ __forceinline__ float widen(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
  static __device__ __forceinline__ u16 narrow(float f) { u16 r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f)); return r; }
};
struct F32 {
  typedef float E; typedef float A;
  static __device__ __forceinline__ float widen(float h) { return h; }
  static __device__ __forceinline__ float narrow(float f) { return f; }
};
struct I32 {
  typedef u32 E; typedef u32 A;
  static __device__ __forceinline__ u32 widen(u32 h) { return h; }
  static __device__ __forceinline__ u32 narrow(u32 f) { return f; }
};

// pack_halves rounds eight fp32 accumulators into a vector of eight 16-bit
// elements of type T (T::narrow), the first in the low half of each word.
template <class T>
__device__ __forceinline__ vec4 pack_halves(const float* a) {
  u32 w[4];
#pragma unroll
  for (int j = 0; j < 4; j++) w[j] = (u32)T::narrow(a[2 * j]) | ((u32)T::narrow(a[2 * j + 1]) << 16);
  vec4 v; v.x = w[0]; v.y = w[1]; v.z = w[2]; v.w = w[3];
  return v;
}

// Lanes of a 16-byte vector as accumulators.
template <class T> struct Lanes;
template <> struct Lanes<BF16> {
  enum { N = 8 };
  static __device__ __forceinline__ void add(float* a, const vec4& v) {
    const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
      a[2 * j] += u32_as_f32(w[j] << 16);
      a[2 * j + 1] += u32_as_f32(w[j] & 0xffff0000u);
    }
  }
  static __device__ __forceinline__ vec4 pack(const float* a) { return pack_halves<BF16>(a); }
};
template <> struct Lanes<F16> {
  enum { N = 8 };
  static __device__ __forceinline__ void add(float* a, const vec4& v) {
    const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
      a[2 * j] += F16::widen((u16)(w[j] & 0xffffu));
      a[2 * j + 1] += F16::widen((u16)(w[j] >> 16));
    }
  }
  static __device__ __forceinline__ vec4 pack(const float* a) { return pack_halves<F16>(a); }
};
template <> struct Lanes<F32> {
  enum { N = 4 };
  static __device__ __forceinline__ void add(float* a, const vec4& v) {
    a[0] += u32_as_f32(v.x); a[1] += u32_as_f32(v.y); a[2] += u32_as_f32(v.z); a[3] += u32_as_f32(v.w);
  }
  static __device__ __forceinline__ vec4 pack(const float* a) {
    vec4 v; v.x = f32_as_u32(a[0]); v.y = f32_as_u32(a[1]); v.z = f32_as_u32(a[2]); v.w = f32_as_u32(a[3]);
    return v;
  }
};
template <> struct Lanes<I32> {
  enum { N = 4 };
  static __device__ __forceinline__ void add(u32* a, const vec4& v) { a[0] += v.x; a[1] += v.y; a[2] += v.z; a[3] += v.w; }
  static __device__ __forceinline__ vec4 pack(const u32* a) { vec4 v; v.x = a[0]; v.y = a[1]; v.z = a[2]; v.w = a[3]; return v; }
};

template <class T>
__device__ __forceinline__ void reduce_blocks(typename T::E* __restrict__ dst, const typename T::E* __restrict__ src,
                                              long long stride, int nblocks, long long count, int self,
                                              const typename T::E* __restrict__ self_src) {
  typedef typename T::E E;
  typedef typename T::A A;
  const int V = Lanes<T>::N;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  if (self < 0 || self >= nblocks) self_src = src;  // no own block: keep the alignment test simple
  const bool aligned = ((((unsigned long long)dst) | ((unsigned long long)src) | ((unsigned long long)self_src) |
                         (unsigned long long)(stride * (long long)sizeof(E))) & 15ull) == 0;
  const long long nvec = aligned ? count / V : 0;
  const long long vstride = stride / V;
  const vec4* s = (const vec4*)src;
  const vec4* own = (const vec4*)self_src;
  vec4* d = (vec4*)dst;
  // Two vectors per thread per iteration: twice the loads in flight.
  long long v = tid;
  for (; v + nthreads < nvec; v += 2 * nthreads) {
    A a0[V], a1[V];
#pragma unroll
    for (int j = 0; j < V; j++) { a0[j] = (A)0; a1[j] = (A)0; }
#pragma unroll 4
    for (int k = 0; k < nblocks; k++) {
      const vec4* b = k == self ? own : s + k * vstride;
      const vec4 x0 = b[v];
      const vec4 x1 = b[v + nthreads];
      Lanes<T>::add(a0, x0);
      Lanes<T>::add(a1, x1);
    }
    d[v] = Lanes<T>::pack(a0);
    d[v + nthreads] = Lanes<T>::pack(a1);
  }
  for (; v < nvec; v += nthreads) {
    A a0[V];
#pragma unroll
    for (int j = 0; j < V; j++) a0[j] = (A)0;
#pragma unroll 4
    for (int k = 0; k < nblocks; k++) Lanes<T>::add(a0, (k == self ? own : s + k * vstride)[v]);
    d[v] = Lanes<T>::pack(a0);
  }
  for (long long i = nvec * V + tid; i < count; i += nthreads) {
    A acc = (A)0;
    for (int k = 0; k < nblocks; k++) acc += T::widen(k == self ? self_src[i] : src[k * stride + i]);
    dst[i] = T::narrow(acc);
  }
}

extern "C" __global__ void hc_reduce_bf16(u16* dst, const u16* src, long long stride, int nblocks, long long count,
                                        int self, const u16* self_src) {
  reduce_blocks<BF16>(dst, src, stride, nblocks, count, self, self_src);
}
extern "C" __global__ void hc_reduce_fp16(u16* dst, const u16* src, long long stride, int nblocks, long long count,
                                        int self, const u16* self_src) {
  reduce_blocks<F16>(dst, src, stride, nblocks, count, self, self_src);
}
extern "C" __global__ void hc_reduce_fp32(float* dst, const float* src, long long stride, int nblocks, long long count,
                                        int self, const float* self_src) {
  reduce_blocks<F32>(dst, src, stride, nblocks, count, self, self_src);
}
extern "C" __global__ void hc_reduce_int32(u32* dst, const u32* src, long long stride, int nblocks, long long count,
                                        int self, const u32* self_src) {
  reduce_blocks<I32>(dst, src, stride, nblocks, count, self, self_src);
}
