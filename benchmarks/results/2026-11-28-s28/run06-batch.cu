// Session-28 probe (not committed as code): how long after a persistent all-SM kernel A ends does kernel B start on
// another stream that waits for A through an event, then for n words already raised, as n cuStreamWaitValue32 calls
// or as one cuStreamBatchMemOp of n waits; and with n writes after them, separate or batched.
// nvcc -arch=sm_90a -O3 -o batch batch.cu -lcuda
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
typedef unsigned long long u64;
__device__ __forceinline__ u64 gtime() { u64 t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
__global__ void kA(u64 spin_ns, u64* aend) {
  extern __shared__ char sm[];
  u64 t0 = gtime();
  while (gtime() - t0 < spin_ns) { sm[threadIdx.x] = (char)t0; }
  __syncthreads();
  if (threadIdx.x == 0) aend[blockIdx.x] = gtime();
}
__global__ void kB(u64* bstart) { if (threadIdx.x == 0) bstart[blockIdx.x] = gtime(); }
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int gb = 2 * sms;
  u64 *aend, *bstart; unsigned *words;
  cudaMalloc(&aend, sms * 8); cudaMalloc(&bstart, gb * 8); cudaMalloc(&words, 64 * 4); cudaMemset(words, 0, 64 * 4);
  cudaFuncSetAttribute(kA, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  cudaStream_t s1, s2; cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  cudaEvent_t ev; cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  std::vector<u64> ha(sms), hb(gb);
  const int ns[] = {0, 1, 4, 8};
  for (int batched = 0; batched < 2; batched++)
    for (int writes = 0; writes < 2; writes++)
      for (int n : ns) {
        if (n == 0 && (batched || writes)) continue;
        std::vector<double> first;
        for (int it = 0; it < 25; it++) {
          kA<<<sms, 384, 200 * 1024, s1>>>(200000, aend);
          cudaEventRecord(ev, s1); cudaStreamWaitEvent(s2, ev, 0);
          if (batched && n > 0) {
            std::vector<CUstreamBatchMemOpParams> ops(2 * n);
            int m = 0;
            for (int j = 0; j < n; j++) {
              CUstreamBatchMemOpParams p = {};
              p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32; p.waitValue.address = (CUdeviceptr)(words + j);
              p.waitValue.value = 0; p.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ; ops[m++] = p;
            }
            for (int j = 0; writes && j < n; j++) {
              CUstreamBatchMemOpParams p = {};
              p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32; p.writeValue.address = (CUdeviceptr)(words + 32 + j);
              p.writeValue.value = it; p.writeValue.flags = 0; ops[m++] = p;
            }
            CUresult r = cuStreamBatchMemOp((CUstream)s2, m, ops.data(), 0);
            if (r != CUDA_SUCCESS) { printf("batch failed: %d\n", r); return 1; }
          } else {
            for (int j = 0; j < n; j++) cuStreamWaitValue32((CUstream)s2, (CUdeviceptr)(words + j), 0, CU_STREAM_WAIT_VALUE_GEQ);
            for (int j = 0; writes && j < n; j++) cuStreamWriteValue32((CUstream)s2, (CUdeviceptr)(words + 32 + j), it, 0);
          }
          kB<<<gb, 512, 0, s2>>>(bstart);
          cudaDeviceSynchronize();
          cudaMemcpy(ha.data(), aend, sms * 8, cudaMemcpyDeviceToHost); cudaMemcpy(hb.data(), bstart, gb * 8, cudaMemcpyDeviceToHost);
          u64 ae = *std::max_element(ha.begin(), ha.end()), b0 = *std::min_element(hb.begin(), hb.end());
          if (it >= 5) first.push_back(((double)b0 - (double)ae) / 1e3);
        }
        std::sort(first.begin(), first.end());
        printf("%-8s %d waits%s: B starts %6.2f us after A ends [%.2f..%.2f]\n", batched ? "batched" : "separate", n,
               writes ? " + as many writes" : "", first[first.size() / 2], first.front(), first.back());
      }
  printf("done: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
