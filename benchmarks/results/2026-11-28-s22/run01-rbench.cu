// Session-22 probe (not committed): the reduce kernel's rate at 32 MiB blocks, beyond L2, against variants
// and the copy engine's local copy. nvcc -arch=sm_90a -O3 -o rb .s22-rbench.cu
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "../kernels/cuda/peer.cuh"
#include "../kernels/cuda/reduce.cu"

// NB blocks known at compile time, U vectors per thread per pass: every load issued before the adds.
template <int NB, int U, bool CS>
__global__ void __launch_bounds__(512) red_t(u16* __restrict__ dst, const u16* __restrict__ src, long long stride, long long count) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x, nt = (long long)gridDim.x * blockDim.x;
  const long long nvec = count / 8, vs = stride / 8;
  const vec16* s = (const vec16*)src; vec16* d = (vec16*)dst;
  long long v = tid;
  for (; v + (U - 1) * nt < nvec; v += U * nt) {
    vec16 x[NB][U];
#pragma unroll
    for (int k = 0; k < NB; k++)
#pragma unroll
      for (int u = 0; u < U; u++) x[k][u] = s[k * vs + v + u * nt];
#pragma unroll
    for (int u = 0; u < U; u++) {
      float a[8];
#pragma unroll
      for (int j = 0; j < 8; j++) a[j] = 0.f;
#pragma unroll
      for (int k = 0; k < NB; k++) EBF16::add(a, x[k][u]);
      vec16 o = EBF16::pack(a);
      if (CS) asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(d + v + u * nt), "r"(o.x), "r"(o.y), "r"(o.z), "r"(o.w) : "memory");
      else d[v + u * nt] = o;
    }
  }
  for (; v < nvec; v += nt) { float a[8] = {0}; for (int k = 0; k < NB; k++) EBF16::add(a, s[k * vs + v]); d[v] = EBF16::pack(a); }
}

int main() {
  const long long blk = 32ll << 20, count = blk / 2;
  const int NBMAX = 4;
  u16 *src, *dst; cudaMalloc(&src, NBMAX * blk); cudaMalloc(&dst, blk);
  cudaMemset(src, 0x3c, NBMAX * blk); cudaMemset(dst, 0, blk);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto timeit = [&](const char* name, int nb, auto fn) {
    std::vector<float> t;
    for (int r = 0; r < 7; r++) {
      fn(); cudaEventRecord(e0); for (int i = 0; i < 20; i++) fn(); cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms * 1000 / 20);
    }
    std::sort(t.begin(), t.end());
    double bytes = nb < 0 ? 2.0 * blk : (nb + 1.0) * blk;
    printf("%-44s %8.2f us [%.2f..%.2f]  %6.0f GB/s\n", name, t[3], t[0], t[6], bytes / t[3] / 1e3);
  };
  cudaError_t err = cudaGetLastError(); if (err) { printf("err %s\n", cudaGetErrorString(err)); return 1; }
  timeit("CE local copy 32 MiB (R+W)", -1, [&] { cudaMemcpyAsync(dst, src, blk, cudaMemcpyDeviceToDevice); });
  for (int nb : {2, 4}) {
    char n[64];
    for (int bps : {2, 4}) {
      snprintf(n, 64, "cur nb=%d grid %dx%d", nb, sms, bps);
      timeit(n, nb, [&] { hc_reduce_bf16<<<sms * bps, 512>>>(dst, src, count, nb, count, -1, src); });
    }
#define T(NB, U, CS, BPS) if (nb == NB) { snprintf(n, 64, "t nb=%d U=%d cs=%d grid %dx%d", NB, U, CS, sms, BPS); \
      timeit(n, nb, [&] { red_t<NB, U, CS><<<sms * BPS, 512>>>(dst, src, count, count); }); }
    T(2, 2, 0, 2) T(2, 4, 0, 2) T(2, 4, 1, 2) T(2, 2, 0, 4) T(2, 8, 0, 1)
    T(4, 2, 0, 2) T(4, 4, 0, 2) T(4, 4, 1, 2) T(4, 2, 0, 4) T(4, 1, 0, 2)
  }
  err = cudaDeviceSynchronize(); printf("done: %s\n", cudaGetErrorString(err));
  return 0;
}
