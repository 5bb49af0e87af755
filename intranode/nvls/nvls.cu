// hiercoll NVLS reduce kernels: out[i] = sum over the node's GPUs of their
// bound buffers' element i at the multicast address mc, read with one
// multimem.ld_reduce per 16 bytes: the NVSwitch loads the 16 bytes from
// every GPU bound to the multicast object, adds them and returns the sum.
//
// Self-contained for NVRTC (no #include); sm_90 (PTX ISA 8.1, and 8.2 for
// .acc::f32). bf16 and fp16 are summed with .acc::f32: the switch
// accumulates in fp32 and the result is rounded once to the 16-bit type;
// fp32 accumulates in fp32; int32 (.u32 add) wraps and is exact. The switch
// does not say in which order it adds the GPUs' values, so float sums may
// differ in the last place from the CPU twin's (kernels.nvlsHost), which
// adds in local-rank order.
//
// The caller guarantees: mc is 16-byte aligned and the object holds whole
// 16-byte vectors past the last element (the node step's blocks lie at a
// 16-byte aligned stride), so every load is a full vector; out may have any
// alignment: a vector is stored whole only when out is 16-byte aligned and
// the vector lies entirely within count, else element by element.
//
// Launch: a 1-D grid; each thread walks 16-byte vectors with a grid stride.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct alignas(16) nvec4 { u32 x, y, z, w; };

__device__ __forceinline__ u32 nv_f32_as_u32(float f) { u32 u; asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f)); return u; }

__device__ __forceinline__ nvec4 ld_reduce_bf16(const void* p) {
  nvec4 v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ nvec4 ld_reduce_f16(const void* p) {
  nvec4 v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ nvec4 ld_reduce_f32(const void* p) {
  float a, b, c, d;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(p) : "memory");
  nvec4 v;
  v.x = nv_f32_as_u32(a); v.y = nv_f32_as_u32(b); v.z = nv_f32_as_u32(c); v.w = nv_f32_as_u32(d);
  return v;
}

// Integer multimem operations have no vector form: four 32-bit ones.
__device__ __forceinline__ u32 ld_reduce_u32(const u32* p) {
  u32 r;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.u32 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ nvec4 ld_reduce_i32(const void* p) {
  const u32* q = (const u32*)p;
  nvec4 v;
  v.x = ld_reduce_u32(q); v.y = ld_reduce_u32(q + 1); v.z = ld_reduce_u32(q + 2); v.w = ld_reduce_u32(q + 3);
  return v;
}

// nvls_reduce stores count elements of esize bytes; LD is the load-reduce
// of one 16-byte vector.
template <nvec4 (*LD)(const void*), int ESIZE>
__device__ __forceinline__ void nvls_reduce(unsigned char* out, const unsigned char* mc, long long count) {
  const long long bytes = count * ESIZE;
  const long long nvec = (bytes + 15) / 16;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  const bool aligned = (((u64)out) & 15ull) == 0;
  for (long long v = tid; v < nvec; v += nthreads) {
    const nvec4 sum = LD(mc + 16 * v);
    const long long at = 16 * v;
    if (aligned && at + 16 <= bytes) {
      *(nvec4*)(out + at) = sum;
      continue;
    }
    const u32 w[4] = {sum.x, sum.y, sum.z, sum.w};
    for (int e = 0; e < 16 && at + e < bytes; e += ESIZE) {
      const u32 word = w[e / 4];
      if (ESIZE == 2) {
        *(u16*)(out + at + e) = (u16)((e & 2) ? word >> 16 : word & 0xffffu);
      } else {
        *(u32*)(out + at + e) = word;
      }
    }
  }
}

extern "C" __global__ void hc_nvls_reduce_bf16(unsigned char* out, const unsigned char* mc, long long count) {
  nvls_reduce<ld_reduce_bf16, 2>(out, mc, count);
}
extern "C" __global__ void hc_nvls_reduce_fp16(unsigned char* out, const unsigned char* mc, long long count) {
  nvls_reduce<ld_reduce_f16, 2>(out, mc, count);
}
extern "C" __global__ void hc_nvls_reduce_fp32(unsigned char* out, const unsigned char* mc, long long count) {
  nvls_reduce<ld_reduce_f32, 4>(out, mc, count);
}
extern "C" __global__ void hc_nvls_reduce_int32(unsigned char* out, const unsigned char* mc, long long count) {
  nvls_reduce<ld_reduce_i32, 4>(out, mc, count);
}
