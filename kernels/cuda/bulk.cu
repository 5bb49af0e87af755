// hc_bulk_copy: dst = src for bytes bytes (a multiple of 16, both 16-byte
// aligned) by the tensor memory accelerator's bulk copies, not the SM's
// loads and stores: each thread block moves pieces blockIdx.x,
// blockIdx.x + gridDim.x, ... of BULK_PIECE bytes through BULK_STAGES
// buffers of shared memory, one thread issuing every copy: a piece's load
// (global to shared, completing on its stage's mbarrier), then its store
// (shared to global, a bulk async-group), the stage refilled once that
// store has read it. With one block per SM it measures what an SM moves
// when the TMA does the moving (hiercoll floors).

#define BULK_PIECE (32 * 1024)
#define BULK_STAGES 6

__device__ __forceinline__ u32 bulk_smem(const void* p) {
  u64 a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return (u32)a;
}

extern "C" __global__ void __launch_bounds__(32, 1) hc_bulk_copy(char* dst, const char* src, long long bytes) {
  extern __shared__ __align__(128) unsigned char bulk_raw[];
  if (threadIdx.x != 0) return;
  const u32 buf = (bulk_smem(bulk_raw) + 127) & ~127u;
  const u32 bars = buf + BULK_STAGES * BULK_PIECE;
  const long long pieces = (bytes + BULK_PIECE - 1) / BULK_PIECE;
  for (int s = 0; s < BULK_STAGES; s++) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bars + 8 * s) : "memory");
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  // load issues piece p's copy into stage s.
  auto load = [&](long long p, int s) {
    const long long left = bytes - p * BULK_PIECE;
    const u32 n = (u32)(left < BULK_PIECE ? left : BULK_PIECE);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bars + 8 * s), "r"(n) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     buf + s * BULK_PIECE),
                 "l"(src + p * BULK_PIECE), "r"(n), "r"(bars + 8 * s)
                 : "memory");
  };
  long long i = 0;
  for (; i < BULK_STAGES && blockIdx.x + i * gridDim.x < pieces; i++) load(blockIdx.x + i * gridDim.x, (int)i);
  for (i = 0; blockIdx.x + i * gridDim.x < pieces; i++) {
    const int s = (int)(i % BULK_STAGES);
    const long long p = blockIdx.x + i * gridDim.x;
    const u32 parity = (u32)((i / BULK_STAGES) & 1);
    u32 done = 0;
    while (!done) {
      asm volatile(
          "{\n.reg .pred q;\nmbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2;\nselp.u32 %0, 1, 0, q;\n}\n"
          : "=r"(done)
          : "r"(bars + 8 * s), "r"(parity)
          : "memory");
    }
    const long long left = bytes - p * BULK_PIECE;
    const u32 n = (u32)(left < BULK_PIECE ? left : BULK_PIECE);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + p * BULK_PIECE),
                 "r"(buf + s * BULK_PIECE), "r"(n)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    const long long next = blockIdx.x + (i + BULK_STAGES) * gridDim.x;
    if (next < pieces) {
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // stage s read by its store
      load(next, s);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
