// Session-22 probe (not committed as code): how long after a persistent all-SM kernel A ends does kernel B start,
// when B follows A on the same stream, behind a stream wait on a word A's last block writes, or behind an event.
// nvcc -arch=sm_90a -O3 -o gap .s22-gap.cu -lcuda
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
typedef unsigned long long u64;
__device__ __forceinline__ u64 gtime() { u64 t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
__global__ void kA(u64 spin_ns, u64* aend, unsigned* done, unsigned* flag, unsigned epoch) {
  extern __shared__ char sm[];
  u64 t0 = gtime();
  while (gtime() - t0 < spin_ns) { sm[threadIdx.x] = (char)t0; }
  __syncthreads();
  if (threadIdx.x == 0) {
    aend[blockIdx.x] = gtime();
    __threadfence_system();
    if (atomicAdd(done, 1) == gridDim.x - 1) { *done = 0; asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(epoch) : "memory"); }
  }
}
__global__ void kB(u64* bstart) { if (threadIdx.x == 0) bstart[blockIdx.x] = gtime(); }
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int gb = 2 * sms;
  u64 *aend, *bstart; unsigned *done, *flag;
  cudaMalloc(&aend, sms * 8); cudaMalloc(&bstart, gb * 8); cudaMalloc(&done, 4); cudaMalloc(&flag, 4);
  cudaMemset(done, 0, 4); cudaMemset(flag, 0, 4);
  cudaFuncSetAttribute(kA, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  cudaStream_t s1, s2; cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  int lo, hi; cudaDeviceGetStreamPriorityRange(&lo, &hi); cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, hi);
  cudaEvent_t ev; cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  std::vector<u64> ha(sms), hb(gb);
  unsigned epoch = 0;
  unsigned* old; cudaMalloc(&old, 4); cudaMemset(old, 0, 4);  // a word already raised long ago
  const char* names[] = {"same stream", "stream wait on A's word", "event", "event, A's word (raised)", "event, 4 words raised", "event, 8 words raised", "event, 4 raised + resets"};
  unsigned* scratch; cudaMalloc(&scratch, 4);
  for (int mode = 0; mode < 7; mode++) {
    std::vector<double> first, last;
    for (int it = 0; it < 25; it++) {
      epoch++;
      kA<<<sms, 384, 200 * 1024, s1>>>(200000, aend, done, flag, epoch);
      if (mode == 0) kB<<<gb, 512, 0, s1>>>(bstart);
      else if (mode == 1) { cuStreamWaitValue32((CUstream)s2, (CUdeviceptr)flag, epoch, CU_STREAM_WAIT_VALUE_GEQ); kB<<<gb, 512, 0, s2>>>(bstart); }
      else {
        cudaEventRecord(ev, s1); cudaStreamWaitEvent(s2, ev, 0);
        const int n = mode == 3 ? 1 : mode == 4 ? 4 : mode == 5 ? 8 : 4;
        for (int j = 0; j < n; j++) {
          cuStreamWaitValue32((CUstream)s2, (CUdeviceptr)(j == 0 ? flag : old), j == 0 ? epoch : 0, CU_STREAM_WAIT_VALUE_GEQ);
          if (mode == 6) cuStreamWriteValue32((CUstream)s2, (CUdeviceptr)scratch, 0, 0);
        }
        kB<<<gb, 512, 0, s2>>>(bstart);
      }
      cudaDeviceSynchronize();
      cudaMemcpy(ha.data(), aend, sms * 8, cudaMemcpyDeviceToHost); cudaMemcpy(hb.data(), bstart, gb * 8, cudaMemcpyDeviceToHost);
      u64 ae = *std::max_element(ha.begin(), ha.end());
      u64 b0 = *std::min_element(hb.begin(), hb.end()), b1 = *std::max_element(hb.begin(), hb.end());
      if (it >= 5) { first.push_back(((double)b0 - (double)ae) / 1e3); last.push_back(((double)b1 - (double)ae) / 1e3); }
    }
    std::sort(first.begin(), first.end()); std::sort(last.begin(), last.end());
    printf("%-26s B's first block %6.2f us after A's last block ends [%.2f..%.2f], its last block %6.2f [%.2f..%.2f]\n", names[mode],
           first[first.size() / 2], first.front(), first.back(), last[last.size() / 2], last.front(), last.back());
  }
  printf("done: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
