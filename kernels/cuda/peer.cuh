// Shared by the kernels that move rows between GPUs' memory (push-reduce,
// ring): prepended to their sources by the Go side (kernels/peer.go), as
// NVRTC compiles each module alone, without includes.
//
// Element types: E is the element, A the accumulator (fp32 for the float
// types, exact u32 for int32), V the elements in a 16-byte vector; widen and
// narrow convert one element, add accumulates a vector into A[V], pack
// rounds A[V] back into a vector.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct alignas(16) vec16 { u32 x, y, z, w; };

// pack_halves rounds eight fp32 accumulators into a vector of eight 16-bit
// elements of type T (T::narrow), the first in the low half of each word.
template <class T>
__device__ __forceinline__ vec16 pack_halves(const float* a) {
  u32 w[4];
#pragma unroll
  for (int j = 0; j < 4; j++) w[j] = (u32)T::narrow(a[2 * j]) | ((u32)T::narrow(a[2 * j + 1]) << 16);
  vec16 v; v.x = w[0]; v.y = w[1]; v.z = w[2]; v.w = w[3]; return v;
}

__device__ __forceinline__ float u32_as_f32(u32 u) { float f; asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u)); return f; }
__device__ __forceinline__ u32 f32_as_u32(float f) { u32 u; asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f)); return u; }

__device__ __forceinline__ u32 ld_acquire_sys(const u32* p) {
  u32 v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(u32* p, u32 v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void add_relaxed_sys(u32* p, u32 v) {
  asm volatile("red.relaxed.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Loads of data other GPUs wrote: through L2, never a stale L1 line (a
// buffer another GPU writes again is read again).
__device__ __forceinline__ vec16 ld_cg_vec(const vec16* p) {
  vec16 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
struct EBF16 {
  typedef u16 E; typedef float A; enum { V = 8 };
  static __device__ __forceinline__ float widen(u16 h) { return u32_as_f32(((u32)h) << 16); }
  static __device__ __forceinline__ u16 narrow(float f) { u16 r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f)); return r; }
  static __device__ __forceinline__ void add(float* a, const vec16& v) {
    const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; j++) { a[2 * j] += u32_as_f32(w[j] << 16); a[2 * j + 1] += u32_as_f32(w[j] & 0xffff0000u); }
  }
  static __device__ __forceinline__ vec16 pack(const float* a) { return pack_halves<EBF16>(a); }
};
struct EF16 {
  typedef u16 E; typedef float A; enum { V = 8 };
  static __device__ __forceinline__ float widen(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
  static __device__ __forceinline__ u16 narrow(float f) { u16 r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f)); return r; }
  static __device__ __forceinline__ void add(float* a, const vec16& v) {
    const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; j++) { a[2 * j] += widen((u16)(w[j] & 0xffffu)); a[2 * j + 1] += widen((u16)(w[j] >> 16)); }
  }
  static __device__ __forceinline__ vec16 pack(const float* a) { return pack_halves<EF16>(a); }
};
struct EF32 {
  typedef float E; typedef float A; enum { V = 4 };
  static __device__ __forceinline__ float widen(float h) { return h; }
  static __device__ __forceinline__ float narrow(float f) { return f; }
  static __device__ __forceinline__ void add(float* a, const vec16& v) {
    a[0] += u32_as_f32(v.x); a[1] += u32_as_f32(v.y); a[2] += u32_as_f32(v.z); a[3] += u32_as_f32(v.w);
  }
  static __device__ __forceinline__ vec16 pack(const float* a) {
    vec16 v; v.x = f32_as_u32(a[0]); v.y = f32_as_u32(a[1]); v.z = f32_as_u32(a[2]); v.w = f32_as_u32(a[3]); return v;
  }
};
struct EI32 {
  typedef u32 E; typedef u32 A; enum { V = 4 };
  static __device__ __forceinline__ u32 widen(u32 h) { return h; }
  static __device__ __forceinline__ u32 narrow(u32 f) { return f; }
  static __device__ __forceinline__ void add(u32* a, const vec16& v) { a[0] += v.x; a[1] += v.y; a[2] += v.z; a[3] += v.w; }
  static __device__ __forceinline__ vec16 pack(const u32* a) { vec16 v; v.x = a[0]; v.y = a[1]; v.z = a[2]; v.w = a[3]; return v; }
};
