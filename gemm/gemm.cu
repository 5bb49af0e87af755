// hiercoll's GEMM for Hopper (sm_90a): C = A·B, A [M, K] row-major, B either
// [N, K] row-major (a torch Linear weight: "nk", K-major) or [K, N]
// row-major ("kn", N-major), C [M, N] row-major; bf16 or fp16 in and out,
// or fp8 e4m3 in (B [N, K] only: wgmma reads 8-bit operands K-major) with
// bf16 or fp16 out and fp32 scales of one of three scalings (SCALING):
//   per-tensor  scale_a, scale_b one fp32 each (0: 1): C = sa·sb·(A·B),
//               applied once in the epilogue;
//   row-wise    scale_a [M], scale_b [N] (per row of A, per row of B, i.e.
//               per column of C): C[m, n] = sa[m]·sb[n]·(A·B)[m, n], in the
//               epilogue (no mainloop change);
//   block-wise  scale_a per 1 x 128 block of A, laid [ceil(K/128), M]
//               (element (kb, m) at kb·M + m: torch's M-major [M, K/128]),
//               scale_b per 128 x 128 block of B [N, K], laid
//               [ceil(N/128), ceil(K/128)] row-major; promoted into the
//               accumulators per 128-deep k tile (gm_mainloop_block),
//               the k tile's scales brought into shared memory beside
//               its stage (gm_block_scales).
// fp32 accumulation, C rounded once.
//
// Persistent and warp-specialised: one CTA per SM walks the output tiles
// (128 x 256) in the order the host gives (row tiles in the reduce-scatter's
// consumption order, grouped for L2 reuse). Warpgroup 0 is the producer: one
// thread loads A and B tiles (128 bytes deep in K) with TMA into a ring of 4 shared
// memory stages, each completing on a "full" mbarrier; warpgroups 1 and 2
// are the consumers: each multiplies its 64 rows of the tile with
// wgmma.m64n256k16 (k32 for fp8; fp32 accumulators in registers), releasing each stage
// on its "empty" mbarrier once its wgmmas are done, then rounds its rows to
// the dtype and stages them in shared memory for a storer thread that
// stores them with TMA, the two consumers' halves in turn through one
// 32 KiB buffer (one that holds the whole tile would leave room for 3
// stages only); with row-wise scales a warp of the producer warpgroup
// copies each tile's scales into shared memory while its mainloop runs,
// with block-wise ones each k tile's, landing with its stage.
// setmaxnreg moves registers from the producer to the consumers.
//
// Signals: after both consumers stored a tile, one thread adds 1 to the
// counter of every segment (a row range of C) the tile's rows meet, with
// acquire-release semantics at GPU scope; the tile that completes a
// segment resets its counter (the next launch on the stream starts after
// this one ends) and stores the call's value to the segment's signal word
// with system-scope release; the reduce-scatter's copies wait on it.
//
// The last wave (stream-K): when the tiles do not divide among the CTAs,
// the walk's last tiles % CTAs tiles are not given out whole: their k
// tiles are cut into one contiguous range per CTA, so every CTA ends at the
// same time. A range is shorter than a tile; the CTA whose range holds a
// tile's last k tile finishes it: it adds the fp32 partial sums the other
// CTAs left in the workspace (each flags its own when written) and stores
// and signals the tile as any other. Every CTA computes its partial piece
// before its finishing one, so no CTA waits for one that has not begun.
//
// Tails need nothing special: TMA fills what lies outside A and B with
// zeros, and the stores are bounds-checked. TMA needs 16-byte aligned bases
// and row strides (the host checks).
//
// Self-contained for NVRTC (no #include); compiled for sm_90a.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// CUtensorMap as the driver lays it out: 128 opaque bytes, 64-byte aligned.
struct __align__(64) hc_tensor_map { u64 opaque[16]; };

#define GM_BM 128
#define GM_BN 256
#define GM_BK_BYTES 128  // a k tile's row: 64 16-bit or 128 8-bit elements, the 128-byte swizzle's span
#define GM_STAGES 4
#define GM_A_STAGE (GM_BM * GM_BK_BYTES)  // 16 KiB
#define GM_B_STAGE (GM_BN * GM_BK_BYTES)  // 32 KiB
#define GM_C_STAGE (GM_BM / 2 * GM_BN * 2)  // 32 KiB: one consumer's half of the output tile
#define GM_THREADS 384
// Dynamic shared memory: the stages, the staging buffer, 1 KiB to align
// them for the 128-byte swizzle, the barriers (full and empty per stage,
// staged and freed per consumer, the row scales' ready and taken, the sum's
// landed, one spare so that what follows stays 16-byte aligned), a tile's
// row-wise scales (GM_BM of A's, then GM_BN of B's in gm_col_slot's order,
// read 16 bytes at a time) or, block-wise, in the same place GM_SLOTS k
// tiles' scales of A (GM_BM each) and after them, in GM_BSLOTS bytes, their
// two of B each, and the storer's queue of sums waiting for a peer's rows
// (GM_SUMQ: its head, a barrier's parity, its tail, the storer's count of
// tiles and GM_QUEUE tiles).
#define GM_BARS (2 * GM_STAGES + 8)
#define GM_QUEUE 32
#define GM_SUMQ ((GM_QUEUE + 4) * 4)
#define GM_SLOTS 3
#define GM_BSLOTS 32
static_assert(GM_SLOTS * GM_BM <= GM_BM + GM_BN && GM_SLOTS * 2 * 4 <= GM_BSLOTS, "the block scales' slots fit");
static_assert(GM_SLOTS < GM_STAGES, "a slot is rewritten only after its k tile's stage was released");
#define GM_SMEM (GM_STAGES * (GM_A_STAGE + GM_B_STAGE) + GM_C_STAGE + 1024 + GM_BARS * 8 + (GM_BM + GM_BN) * 4 + GM_BSLOTS + GM_SUMQ)

// A segment: rows [r0, r1) of C; need tiles complete it; its signal word.
struct hc_gemm_segment {
  int r0, r1;
  u32 need, pad;
  u64 signal;
};

__device__ __forceinline__ u32 gm_smem_addr(const void* p) {
  u64 a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return (u32)a;
}

__device__ __forceinline__ void gm_bar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void gm_bar_expect(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void gm_bar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void gm_bar_wait(u32 bar, u32 parity) {
  u32 done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// gm_warp_uniform returns lane 0's x to every lane of the warp (all 32
// lanes must take part). A value read so is known to ptxas to be the same
// in every lane: what derives from it can live in uniform registers.
__device__ __forceinline__ int gm_warp_uniform(int x) {
  int r;
  asm volatile("shfl.sync.idx.b32 %0, %1, 0, 0x1f, 0xffffffff;" : "=r"(r) : "r"(x));
  return r;
}

// tma_load copies the box at (c0 inner, c1 outer) of map's tensor into
// shared memory at dst, completing bytes on bar.
__device__ __forceinline__ void gm_tma_load(u32 dst, const hc_tensor_map* map, int c0, int c1, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"((u64)map), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// tma_store copies the box at smem src to (c0 inner, c1 outer) of map's
// tensor, in the calling thread's current bulk async-group.
__device__ __forceinline__ void gm_tma_store(const hc_tensor_map* map, int c0, int c1, u32 src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"((u64)map), "r"(c0),
               "r"(c1), "r"(src)
               : "memory");
}

// A shared-memory matrix descriptor for wgmma: start address, leading and
// stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ u64 gm_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)((lbo >> 4) & 0x3FFF) << 16) | ((u64)((sbo >> 4) & 0x3FFF) << 32) |
         (1ull << 62);
}

// gm_desc_a is the descriptor of consumer cw's 64 rows of A in stage s
// (the stages from sa on, rows of 128 bytes in the 128-byte swizzle's
// 1 KiB atoms of 8 rows).
__device__ __forceinline__ u64 gm_desc_a(u32 sa, int s, int cw) {
  return gm_desc(sa + s * GM_A_STAGE + cw * (64 * 128), 16, 1024);
}

// gm_desc_b is the descriptor of B in stage s: K-major ([N, K], "nk") like
// A's, or N-major ([K, N], KN) in 64-column boxes of 64 k rows, 8 KiB apart.
template <int KN>
__device__ __forceinline__ u64 gm_desc_b(u32 sb, int s) {
  return gm_desc(sb + s * GM_B_STAGE, KN ? 64 * GM_BK_BYTES : 16, 1024);
}

__device__ __forceinline__ void gm_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void gm_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void gm_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// wgmma m64n256kK (SHAPE_TYPES: "k16.f32.bf16.bf16" and the like) with
// fp32 accumulators d[128] (this thread's share of the 64x256 tile), A and
// B from shared memory through descriptors; the accumulators are added to
// unless scale_d is 0. TAIL ends the operands: the 16-bit forms take the
// transposes (", 0, %131": B MN-major when TNSP_B is 1), fp8 none ("").
#define HC_WGMMA_256(SHAPE_TYPES, TAIL, d, da, db, scale_d, TNSP_B) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n256" SHAPE_TYPES " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
      "}, %128, %129, p, 1, 1" TAIL ";\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(da), "l"(db), "r"(scale_d), "n"(TNSP_B) \
      : "memory")

// wgmma m64n64k32 with fp8 e4m3 operands and fp32 accumulators d[32]
// (this thread's share of a 64 x 64 tile); the accumulators are added to
// unless scale_d is 0 (then d = A·B).
#define HC_WGMMA_64_E4M3(d, da, db, scale_d) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
      "}, %32, %33, p, 1, 1;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
      : "l"(da), "l"(db), "r"(scale_d) \
      : "memory")

// Each input dtype's wgmma of one 32-byte k step (KT elements per k tile,
// SCALED: the product is multiplied by the tensors' scales; accumulate 0:
// d = A·B, else d += A·B); each output dtype's rounding of two fp32 values
// to a packed pair (lo first in memory).
struct GmBF16 {
  static const int KT = 64, SCALED = 0;
  template <int TNSP_B>
  static __device__ __forceinline__ void mma(float* d, u64 da, u64 db, int accumulate) {
    HC_WGMMA_256("k16.f32.bf16.bf16", ", 0, %131", d, da, db, accumulate, TNSP_B);
  }
  static __device__ __forceinline__ u32 pack(float lo, float hi) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
};
struct GmF16 {
  static const int KT = 64, SCALED = 0;
  template <int TNSP_B>
  static __device__ __forceinline__ void mma(float* d, u64 da, u64 db, int accumulate) {
    HC_WGMMA_256("k16.f32.f16.f16", ", 0, %131", d, da, db, accumulate, TNSP_B);
  }
  static __device__ __forceinline__ u32 pack(float lo, float hi) {
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
};

struct GmE4M3 {
  static const int KT = 128, SCALED = 1;
  template <int TNSP_B>
  static __device__ __forceinline__ void mma(float* d, u64 da, u64 db, int accumulate) {
    HC_WGMMA_256("k32.f32.e4m3.e4m3", "", d, da, db, accumulate, 0);
  }
  // One 64-column quarter of the tile (block-wise scaling): accumulate 0
  // starts a sum (d = A·B), 1 adds to it.
  static __device__ __forceinline__ void mma64(float* d, u64 da, u64 db, int accumulate) {
    HC_WGMMA_64_E4M3(d, da, db, accumulate);
  }
};

// The scalings of fp8 inputs (the kernels' SCALING; gemm.Scaling in Go).
#define GM_SCALE_TENSOR 0
#define GM_SCALE_ROW 1
#define GM_SCALE_BLOCK 2

// gm_tile maps the t-th tile of the walk to its row tile and column tile:
// row tiles come in order[] (the consumption order), taken group at a time;
// within a group the column tiles go slowest, so that a wave of CTAs
// shares both A's and B's tiles in L2.
__device__ __forceinline__ void gm_tile(int t, const int* order, int row_tiles, int col_tiles, int group, int* rt, int* ct) {
  const int per_group = group * col_tiles;
  const int g = t / per_group, in = t - g * per_group;
  const int rows = min(group, row_tiles - g * group);
  const int r = g * group + in % rows;
  *ct = in / rows;
  *rt = order != 0 ? order[r] : r;
}

// A work item: walk tile t, its k tiles [kb, ke); final: it ends the
// tile, so this CTA stores it.
struct gm_item {
  int t, kb, ke, final;
};

// gm_range is CTA c's stream-K range of k tiles [*a, *e), numbered over
// the last sk tiles of the walk, kt k tiles each.
__device__ __forceinline__ void gm_range(int c, int sk, int kt, long long* a, long long* e) {
  const long long total = (long long)sk * kt;
  *a = (long long)c * total / gridDim.x;
  *e = (long long)(c + 1) * total / gridDim.x;
}

// gm_item_at returns this CTA's i-th work item, or false past the last:
// first its whole tiles (the walk's first tiles - sk, round robin), then
// its stream-K pieces, the partial one first.
__device__ __forceinline__ bool gm_item_at(int i, int tiles, int sk, int kt, gm_item* w) {
  const int b = blockIdx.x, G = gridDim.x, dp = tiles - sk;
  const int whole = b < dp ? (dp - b + G - 1) / G : 0;
  if (i < whole) {
    *w = gm_item{b + i * G, 0, kt, 1};
    return true;
  }
  i -= whole;
  if (sk == 0) return false;
  long long a, e;
  gm_range(b, sk, kt, &a, &e);
  if (a == e) return false;
  const int t0 = (int)(a / kt), k0 = (int)(a % kt);
  const int len0 = e - a < kt - k0 ? (int)(e - a) : kt - k0;
  const gm_item first{dp + t0, k0, k0 + len0, k0 + len0 == kt};
  if (e - a > kt - k0) {  // the range goes on into the next tile: a partial piece
    const gm_item next{dp + t0 + 1, 0, (int)(e - (long long)(t0 + 1) * kt), 0};
    if (i > 1) return false;
    *w = i == 0 ? next : first;
    return true;
  }
  if (i > 0) return false;
  *w = first;
  return true;
}

// gm_partial_of returns, for the CTA finishing walk tile t, whether CTA c
// (below it) holds a piece of the tile: its range is not empty and ends
// after the tile's first k tile. *more says whether CTAs below c may too.
__device__ __forceinline__ bool gm_partial_of(int c, int t, int tiles, int sk, int kt, bool* more) {
  long long a, e;
  gm_range(c, sk, kt, &a, &e);
  const long long start = (long long)(t - (tiles - sk)) * kt;
  *more = c > 0 && a > start;
  return a < e && e > start;
}

// gm_signal adds a tile of row tile rt to every segment it meets and raises
// the segments it completes. Which segments a row tile meets follows the
// records: offsets[row_tiles + 1], then the segments' indices (so a tile
// visits only its own: scanning every record per tile cost the GEMM in
// proportion to their number, RESULTS.md). The add releases this CTA's
// stored tiles at GPU scope and acquires the other CTAs'; the raise
// releases them all at system scope (release is cumulative), so no fence
// is needed before either (each costs the kernel's tail time).
__device__ __forceinline__ void gm_signal(int rt, int row_tiles, const hc_gemm_segment* segs, int nsegs, u32* counters,
                                          u32 value) {
  const int* offsets = (const int*)(segs + nsegs);
  const int* index = offsets + row_tiles + 1;
  for (int i = offsets[rt]; i < offsets[rt + 1]; i++) {
    const int s = index[i];
    const hc_gemm_segment g = segs[s];
    u32 old;
    asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(counters + s) : "memory");
    if (old + 1 == g.need) {
      counters[s] = 0;
      asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(g.signal), "r"(value) : "memory");
    }
  }
}

// gm_store stores this thread's share of a consumer's 64 x 256 rows of the
// tile straight from registers, bounds-checked, two bytes at a time (the
// epilogue where C's rows are not 16-byte aligned).
template <class P>
__device__ __forceinline__ void gm_store(const float* d, u16* C, long long ldc, int M, int N, int row, int col0) {
#pragma unroll
  for (int i = 0; i < 32; i++) {
    const int col = col0 + 8 * i;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int r = row + 8 * h;
      if (r >= M || col >= N) continue;
      const u32 v = P::pack(d[4 * i + 2 * h], d[4 * i + 2 * h + 1]);
      u16* p = C + (long long)r * ldc + col;
      p[0] = (u16)(v & 0xffff);
      if (col + 1 < N) p[1] = (u16)(v >> 16);
    }
  }
}

// gm_store_rows is gm_store with the row-wise scales applied on the way
// (the same products as gm_scale_rows, so the same bits): the kernels that
// store from registers apply them here, one column pair at a time, so that
// the scale loads are not all live at once beside the store's addresses (the
// compiler barrier ends each pair's live range).
template <class P>
__device__ __forceinline__ void gm_store_rows(const float* d, u16* C, long long ldc, int M, int N, int row, int col0,
                                              const float* scale_a, const float* scale_b) {
  const float a0 = row < M ? scale_a[row] : 0.f;
  const float a1 = row + 8 < M ? scale_a[row + 8] : 0.f;
#pragma unroll
  for (int i = 0; i < 32; i++) {
    const int col = col0 + 8 * i;
    if (col < N) {
      const float b0 = scale_b[col];
      const float b1 = col + 1 < N ? scale_b[col + 1] : 0.f;
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int r = row + 8 * h;
        if (r >= M) continue;
        const float a = h ? a1 : a0;
        const u32 v = P::pack(d[4 * i + 2 * h] * (a * b0), d[4 * i + 2 * h + 1] * (a * b1));
        u16* p = C + (long long)r * ldc + col;
        p[0] = (u16)(v & 0xffff);
        if (col + 1 < N) p[1] = (u16)(v >> 16);
      }
    }
    asm volatile("" ::: "memory");
  }
}

// gm_stage writes this thread's share of a consumer's 64 x 256 rows into
// the staging buffer at stage: four 64 x 64 boxes of 8 KiB, each row 128
// bytes with its 16-byte chunks swizzled by the row (chunk ^ row % 8), the
// layout TMA's 128-byte swizzle stores from. A warp's 32 stores of one
// instruction land in 32 different banks.
template <class P>
__device__ __forceinline__ void gm_stage(const float* d, u32 stage, int row, int lane) {
#pragma unroll
  for (int i = 0; i < 32; i++) {
    const u32 box = stage + (i >> 3) * (64 * 128);
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int r = row + 8 * h;
      const u32 addr = box + r * 128 + ((((u32)i & 7) ^ ((u32)r & 7)) << 4) + 4 * (lane & 3);
      const u32 v = P::pack(d[4 * i + 2 * h], d[4 * i + 2 * h + 1]);
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
    }
  }
}

// gm_sum: the rows [r0, r0 + rows) of C (r0 a multiple of GM_BM; rows too,
// or reaching M) whose tiles are not stored to C but summed with the node
// peers' blocks of the same rows and stored to D (tmd: row r of C is row
// r - r0 of D): the reduce-scatter's reduction of the own block, done by
// the storer. The blocks (tms) are blocks × block_rows rows of N elements,
// block k's row r at row k·block_rows + r; block self is the tile itself.
// Block k's rows of segment j (seg_rows rows each) have landed once
// arrivals[k] reaches base + j + 1 (compared cyclically, as the stream
// waits do; the copy engine raises it after each segment's copy). rows 0:
// no sum.
struct gm_sum {
  int r0, rows;
  int blocks, self, block_rows;
  const u32* arrivals;
  u32 base;
  int seg_rows;
  // One unsigned compare: r0 + rows held across the storer's loop would
  // not fit its 40 registers.
  __device__ __forceinline__ bool covers(int rt) const { return (u32)(rt * GM_BM - r0) < (u32)rows; }
};

// gm_ld_acquire loads the word at p with system-scope acquire: what the
// writer wrote before raising it is visible after.
__device__ __forceinline__ u32 gm_ld_acquire(const u32* p) {
  u32 w;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(w) : "l"(p) : "memory");
  return w;
}

// gm_wait_geq spins until the word at p reaches v (cyclically; acquire).
__device__ __forceinline__ void gm_wait_geq(const u32* p, u32 v) {
  while ((int)(gm_ld_acquire(p) - v) < 0) {
  }
}

// gm_tma_add adds the box at smem src into (c0 inner, c1 outer) of map's
// tensor, element by element in its dtype (the reduction is L2's), in the
// calling thread's current bulk async-group.
__device__ __forceinline__ void gm_tma_add(const hc_tensor_map* map, int c0, int c1, u32 src) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   (u64)map),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}

// gm_add_half is the storer's add of block k's rows to a summed half (its
// first row h0 of the block), whose own rows it stored to D and waited for,
// once the caller saw block k's rows of the tile land: they are loaded into
// the staging buffer (free: both halves of the tile stored) and added to D
// there; with more than two blocks the add completes before anything else
// is added (the adds round: their order fixes the bits, gemm.SumInTurn's).
// landed is the storer's load barrier; its parity lives in shared memory at
// pq, so that the storer's 40 registers do not hold it across the sums.
__device__ __forceinline__ void gm_add_half(const gm_sum& sum, const hc_tensor_map* tmd, const hc_tensor_map* tms,
                                            u32 cstage, u32 landed, u32 pq, int h0, int ct, int k) {
  gm_bar_expect(landed, 4 * (64 * 128));
#pragma unroll
  for (int j = 0; j < 4; j++) {
    gm_tma_load(cstage + j * (64 * 128), tms, ct * GM_BN + 64 * j, k * sum.block_rows + h0, landed);
  }
  u32 phase;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(phase) : "r"(pq) : "memory");
  gm_bar_wait(landed, phase);
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(pq), "r"(phase ^ 1) : "memory");
#pragma unroll
  for (int j = 0; j < 4; j++) gm_tma_add(tmd, ct * GM_BN + 64 * j, h0, cstage + j * (64 * 128));
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  if (sum.blocks > 2) {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  } else {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

// gm_landed reports whether block k's rows up to segment word value want
// have landed, without waiting (acquire, as gm_wait_geq).
__device__ __forceinline__ bool gm_landed(const gm_sum& sum, int k, u32 want) {
  return (int)(gm_ld_acquire(sum.arrivals + k) - want) >= 0;
}

// gm_sums_queued advances the sums of the summed tiles queued in shared
// memory at q (the queue's head, the landed barrier's parity, its tail,
// the next free, the storer's count of tiles, then GM_QUEUE entries
// rt << 16 | ct << 4 | signalled << 3 | blocks added): for each queued
// tile in walk order, the other
// blocks whose rows of the whole tile have landed are added in SumInTurn's
// order (block self-1 first: the first its peer computes), stopping at the
// first that has not; a tile with every block added is signalled, and
// leaves the queue once the tiles before it have. The oldest tile waits
// for its blocks while limit or more are queued (limit 1: every tile
// waits). The tiles' own rows are stored and complete; the staging buffer
// is free. Head, parity and tail live in shared memory so that the
// storer's loop holds none of them in its 40 registers.
__device__ __forceinline__ void gm_sums_queued(u32 q, u32 limit, const gm_sum& sum,
                                               const hc_tensor_map* tmd, const hc_tensor_map* tms, u32 cstage,
                                               u32 landed, int row_tiles, const hc_gemm_segment* segs, int nsegs,
                                               u32* counters, u32 value) {
  u32 x, tail;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x) : "r"(q) : "memory");
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(tail) : "r"(q + 8) : "memory");
  for (; x != tail; x++) {
    const u32 at = q + 16 + 4 * (x % GM_QUEUE);
    u32 e;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(e) : "r"(at) : "memory");
    if (!(e & 8)) {  // not signalled yet
      const int rt = (int)(e >> 16), h0 = rt * GM_BM - sum.r0;
      // Every block's rows of the tile have landed once its word reaches
      // want (one division per tile).
      const u32 want = sum.base + (u32)((min(h0 + GM_BM, sum.rows) - 1) / sum.seg_rows) + 1;
      u32 head;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(head) : "r"(q) : "memory");
      const bool wait = x == head && tail - head >= limit;
      int added = e & 7;
      for (; added < sum.blocks - 1; added++) {
        int k = sum.self - 1 - added;
        if (k < 0) k += sum.blocks;
        if (wait) {
          gm_wait_geq(sum.arrivals + k, want);
        } else if (!gm_landed(sum, k, want)) {
          break;
        }
        // The copy engine's writes, seen through the acquire, for TMA's reads.
        asm volatile("fence.proxy.async.global;" ::: "memory");
        gm_add_half(sum, tmd, tms, cstage, landed, q + 4, h0, (e >> 4) & 0xfff, k);
        if (h0 + 64 < sum.rows) gm_add_half(sum, tmd, tms, cstage, landed, q + 4, h0 + 64, (e >> 4) & 0xfff, k);
      }
      e = (e & ~7u) | (u32)added;
      if (added == sum.blocks - 1) {
        e |= 8;
        if (nsegs != 0) {
          asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
          asm volatile("fence.proxy.async.global;" ::: "memory");
          gm_signal(rt, row_tiles, segs, nsegs, counters, value);
        }
      }
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(at), "r"(e) : "memory");
    }
    u32 head;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(head) : "r"(q) : "memory");
    if (x == head && (e & 8)) asm volatile("st.shared.u32 [%0], %1;" ::"r"(q), "r"(head + 1) : "memory");
  }
}

// gm_storer is the storer thread's loop: per half of a tile this CTA
// finishes (consumer 0's rows, then consumer 1's), wait until that consumer
// staged it (TMA) or stored it (direct), store it with TMA and free the
// staging buffer once read (a summed tile's second half after the queued
// tiles' adds of the blocks whose rows have landed, gm_sums_queued; the
// rest wait for later summed tiles' turns or the loop's end, so the
// consumers never wait for a peer while the queue has room); after the
// second half, wait for the tile's writes and signal (a summed tile after
// its sums: the reduction stream waits for the own block's signals before
// its last waits on the arrival words, which reset them under the
// replayable protocol). Its barriers are found from cstage (gm_gemm's
// layout), not passed: the storer runs on 40 registers.
template <int TMA>
__device__ __forceinline__ void gm_storer(const hc_tensor_map* tmc, const hc_tensor_map* tmd,
                                          const hc_tensor_map* tms, const gm_sum& sum, u32 cstage,
                                          const int* order, int row_tiles, int col_tiles, int group, int tiles,
                                          int sk, int kt, const hc_gemm_segment* segs, int nsegs, u32* counters,
                                          u32 value) {
  const u32 staged = cstage + GM_C_STAGE + 16 * GM_STAGES, freed = staged + 16, landed = freed + 32;
  const u32 q = cstage + GM_C_STAGE + GM_BARS * 8 + (GM_BM + GM_BN) * 4 + GM_BSLOTS;
  // The sums queued: [head, tail), head at q, tail at q + 8; the tiles
  // stored so far (their parity is the staged barriers') at q + 12.
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(q), "r"(0) : "memory");
  gm_item w;
  // The walk's stream-K range and its divisors are found again for each
  // item (its extents laundered through an empty asm): held across the
  // loop they would not fit the storer's 40 registers beside the sums.
  for (int i = 0, k = sk, t = tiles, g = group, l = kt; gm_item_at(i, t, k, l, &w); i++) {
    asm volatile("" : "+r"(k), "+r"(t), "+r"(g), "+r"(l));
    if (!w.final) continue;
    int rt, ct;
    gm_tile(w.t, order, row_tiles, col_tiles, g, &rt, &ct);
    const bool summed = TMA && sum.covers(rt);
    u32 n;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(n) : "r"(q + 12) : "memory");
    for (int cw = 0; cw < 2; cw++) {
      gm_bar_wait(staged + 8 * cw, n & 1);
      if (TMA) {
        const hc_tensor_map* map = summed ? tmd : tmc;
        const int row = rt * GM_BM + 64 * cw - (summed ? sum.r0 : 0);
#pragma unroll
        for (int j = 0; j < 4; j++) {
          gm_tma_store(map, ct * GM_BN + 64 * j, row, cstage + j * (64 * 128));
        }
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      }
      // A summed tile keeps the staging buffer for its sums until consumer
      // 0 needs it again, at its next tile's end; consumer 1 goes on.
      if (!summed || cw == 0) gm_bar_arrive(freed + 8 * cw);
    }
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(q + 12), "r"(n + 1) : "memory");
    if (summed) {
      // The own rows written before the other blocks' are added to them:
      // the blocks of this tile and earlier ones whose rows have landed,
      // each tile signalled once all are added; the rest stay queued while
      // the consumers go on.
      u32 tail;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(tail) : "r"(q + 8) : "memory");
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(q + 16 + 4 * (tail % GM_QUEUE)), "r"((u32)rt << 16 | (u32)ct << 4)
                   : "memory");
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(q + 8), "r"(tail + 1) : "memory");
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
      gm_sums_queued(q, GM_QUEUE, sum, tmd, tms, cstage, landed, row_tiles, segs, nsegs, counters, value);
      gm_bar_arrive(freed + 8);
      continue;
    }
    if (nsegs == 0) continue;
    if (TMA) {
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
      asm volatile("fence.proxy.async.global;" ::: "memory");
    }
    gm_signal(rt, row_tiles, segs, nsegs, counters, value);
  }
  if (TMA) {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    u32 tail;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(tail) : "r"(q + 8) : "memory");
    if (tail != 0) {  // the sums still queued, once their rows land
      gm_sums_queued(q, 1, sum, tmd, tms, cstage, landed, row_tiles, segs, nsegs, counters, value);
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
  }
}

// gm_f4 is four floats moved as one 16-byte access.
struct __align__(16) gm_f4 {
  float x, y, z, w;
};

// gm_consumers_sync is a barrier of the two consumer warpgroups alone.
__device__ __forceinline__ void gm_consumers_sync() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

// gm_park leaves this thread's share of a partial piece in CTA slot's
// place in the workspace (16-byte pieces laid out so that a warp's stores are
// contiguous) and, once both consumers did, flags it.
__device__ __forceinline__ void gm_park(const float* d, float* partials, u32* flags, int cw, int wt) {
  gm_f4* slot = (gm_f4*)(partials + (u64)blockIdx.x * (GM_BM * GM_BN));
#pragma unroll
  for (int q = 0; q < 32; q++) {
    slot[(cw * 32 + q) * 128 + wt] = gm_f4{d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]};
  }
  __threadfence();
  gm_consumers_sync();
  if (cw == 0 && wt == 0) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flags + blockIdx.x), "r"(1u) : "memory");
  }
}

// gm_gather adds to this thread's share of walk tile t the partial pieces
// the CTAs below left for it, each once its flag is up (the first warp of
// consumer 0 waits and its lane 0 lowers the flags for the next launch,
// then both consumers add). The warp waits on lane 0's load, so that its
// loop is warp-uniform: a loop only one thread of a warp runs on the
// consumers' path makes ptxas keep the mainloops' stage index in per-thread
// registers, each k tile then paying a shuffle and a dozen instructions to
// bring it to the uniform registers the wgmma descriptors live in
// (scripts/kernel-check.sh --sass reports each k-tile loop's).
__device__ __forceinline__ void gm_gather(float* d, const float* partials, u32* flags, int t, int tiles, int sk, int kt,
                                          int cw, int wt) {
  if (gm_warp_uniform(cw == 0 && wt < 32)) {
    bool more = blockIdx.x > 0;
    for (int c = blockIdx.x - 1; more; c--) {
      if (!gm_partial_of(c, t, tiles, sk, kt, &more)) continue;
      while (gm_warp_uniform((int)gm_ld_acquire(flags + c)) == 0) {
      }
      __syncwarp();
      if (wt == 0) flags[c] = 0;
    }
  }
  gm_consumers_sync();
  bool more = blockIdx.x > 0;
  for (int c = blockIdx.x - 1; more; c--) {
    if (!gm_partial_of(c, t, tiles, sk, kt, &more)) continue;
    const gm_f4* slot = (const gm_f4*)(partials + (u64)c * (GM_BM * GM_BN));
#pragma unroll
    for (int q = 0; q < 32; q++) {
      const gm_f4 v = slot[(cw * 32 + q) * 128 + wt];
      d[4 * q] += v.x;
      d[4 * q + 1] += v.y;
      d[4 * q + 2] += v.z;
      d[4 * q + 3] += v.w;
    }
  }
}

// gm_copy4 copies 4 bytes from global src to shared dst with cp.async, or
// zeros when ok is false (nothing read).
__device__ __forceinline__ void gm_copy4(u32 dst, const float* src, bool ok) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
}

// gm_fma is a·b + c rounded once (fma.rn.f32), in PTX as the rest of the
// kernel (no header needed).
__device__ __forceinline__ float gm_fma(float a, float b, float c) {
  float d;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));
  return d;
}

// gm_fence_operands pins n registers of r in place in the instruction
// order: reads of them after it cannot move above it, writes before it
// cannot sink below it (wgmma writes its accumulators asynchronously: the
// compiler, which does not know that, must not read them before the wait).
template <int N>
__device__ __forceinline__ void gm_fence_operands(float* r) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}

// The block-wise scales' slot (gm_block_scales writes it, the consumers
// read it): A's GM_BM scales of its k tile at gm_slot_a(slot), B's two
// (one per 128-column half of the tile) at gm_slot_b(slot), in floats from
// the slots' start.
__device__ __forceinline__ int gm_slot_a(int slot) { return slot * GM_BM; }
__device__ __forceinline__ int gm_slot_b(int slot) { return GM_SLOTS * GM_BM + 2 * slot; }

// gm_promote adds a 64-column quarter's product t[32] into its
// accumulators d[32], scaled: s0 for the thread's row, s1 for row + 8.
// The row's sixteen go first, then row + 8's, so that ptxas issues each
// scale's run back to back with its register in the operand reuse cache.
__device__ __forceinline__ void gm_promote(float* d, const float* t, float s0, float s1) {
#pragma unroll
  for (int j = 0; j < 8; j++) {
    d[4 * j] = gm_fma(t[4 * j], s0, d[4 * j]);
    d[4 * j + 1] = gm_fma(t[4 * j + 1], s0, d[4 * j + 1]);
  }
#pragma unroll
  for (int j = 0; j < 8; j++) {
    d[4 * j + 2] = gm_fma(t[4 * j + 2], s1, d[4 * j + 2]);
    d[4 * j + 3] = gm_fma(t[4 * j + 3], s1, d[4 * j + 3]);
  }
}

// gm_mainloop_block is a consumer's mainloop with block-wise scales, over k
// tiles [kb, ke) of its tile, the stages counted by it, row the thread's
// first row in the tile: per k tile
// (128 deep: one block of A's and of B's scales) and per 64-column quarter
// q of the tile (half q/2 of it lies in one 128 x 128 block of B), the
// quarter's product goes into a temporary (4 wgmma m64n64k32, the first
// with scale-d 0: overwriting it) and is promoted into the fp32
// accumulators once done:
//   d[32·q + j] += t[j] · (sa[k, row(j)] · sb[2·ct + q/2, k])
// (one fused multiply-add per accumulator per k tile).
// Two temporaries of 32 fp32 take the quarters in turn, so that a quarter
// is promoted while the next one's wgmmas run: the warpgroup's own tensor
// work hides three of its four promotions (with one temporary per half the
// tensor cores idled through both unless the other consumer's wgmmas
// happened to fall there). The last quarter is waited for with the k tile
// (a wgmma in flight across the loop's back edge makes ptxas serialise
// them all), which releases the stage. 128 accumulators + 64 temporaries
// + addressing fit setmaxnreg's 232 registers (two 128-column temporaries
// would not). A thread's accumulators of quarter q are d[32·q .. 32·q+31]
// with the layout of a m64n64 tile, so the epilogue, the stream-K parking
// and gathering are those of the other scalings. The k tile's scales are
// read from shared memory, where gm_block_scales put them before the
// stage's full barrier completed: four shared loads per k tile per thread
// (A's for its two rows, B's for the two halves) and no global load (each
// global load in the mainloop waited its latency there).
template <class In>
__device__ __forceinline__ void gm_mainloop_block(float* d, int kb, int ke, int& it, u32 sa, u32 sb, u32 bars, int cw,
                                                  int lane, const float* slots, int row) {
  // The temporaries are operands of every wgmma ("+f", the first with
  // scale-d 0, so their value is not used): defined once, so that the
  // compiler keeps them in the same registers throughout.
  float t0[32], t1[32];
#pragma unroll
  for (int j = 0; j < 32; j++) t0[j] = t1[j] = 0.f;
  for (int k = kb; k < ke; k++, it++) {
    const int s = gm_warp_uniform(it % GM_STAGES);
    gm_bar_wait(bars + 8 * s, (it / GM_STAGES) & 1);
    // The k tile's scales, landed with the stage (gm_block_scales).
    const float* sl = slots + gm_slot_a(it % GM_SLOTS);
    const float* bl = slots + gm_slot_b(it % GM_SLOTS);
    const float a0 = sl[row], a1 = sl[row + 8], b0 = bl[0], b1 = bl[1];
    // The quarters' scales: half 0 (quarters 0, 1), half 1 (2, 3), per row.
    const float h00 = a0 * b0, h01 = a1 * b0, h10 = a0 * b1, h11 = a1 * b1;
    // The stage's descriptors; a k step or a quarter further on adds its
    // offset in 16-byte units to the address field (shared addresses stay
    // far below the field's 256 KiB, so nothing carries out of it).
    const u64 da0 = gm_desc_a(sa, s, cw);
    const u64 db0 = gm_desc_b<0>(sb, s);
#pragma unroll
    for (int q = 0; q < 4; q++) {
      float* t = q % 2 == 0 ? t0 : t1;
      gm_fence_operands<32>(t);  // its last promotion's reads stay before these wgmmas
      gm_wgmma_fence();          // t was read by other instructions
#pragma unroll
      for (int ks = 0; ks < GM_BK_BYTES / 32; ks++) {
        // Quarter q: B's rows [64·q, 64·q + 64) of the stage, 8 KiB in (a
        // multiple of the swizzle's 1 KiB period).
        In::mma64(t, da0 + ks * 32 / 16, db0 + (q * (64 * GM_BK_BYTES) + ks * 32) / 16, ks > 0);
      }
      gm_wgmma_commit();
      if (q > 0) {  // the quarter before this one is done once at most this one is pending
        float* u = q % 2 == 0 ? t1 : t0;
        gm_wgmma_wait<1>();
        gm_fence_operands<32>(u);
        gm_promote(d + 32 * (q - 1), u, q - 1 < 2 ? h00 : h10, q - 1 < 2 ? h01 : h11);
      }
    }
    gm_wgmma_wait<0>();
    gm_fence_operands<32>(t1);
    if (lane == 0) gm_bar_arrive(bars + 8 * (GM_STAGES + s));
    gm_promote(d + 96, t1, h10, h11);
  }
}

// gm_block_scales is the block-wise scale loader (one warp of the producer
// warpgroup): per k tile the consumers take, in their order, it copies the
// tile's GM_BM scales of A and its two of B (0 past M and N) into slot
// it % GM_SLOTS with cp.async and has each lane's copies arrive on the k
// tile's full barrier when they land, so the consumers read them from
// shared memory once the stage is full. A slot is written again once the
// consumers have released the k tile GM_SLOTS before (GM_SLOTS <
// GM_STAGES: that release's phase is the last one its empty barrier
// completed, since the consumers cannot take a later k tile of that stage
// before this warp arrives on it).
__device__ __forceinline__ void gm_block_scales(u32 slots, u32 bars, const float* scale_a, const float* scale_b, int M,
                                                int N, const int* order, int row_tiles, int col_tiles, int group,
                                                int tiles, int sk, int kt, int lane) {
  int it = 0;
  gm_item w;
  for (int i = 0; gm_item_at(i, tiles, sk, kt, &w); i++) {
    int rt, ct;
    gm_tile(w.t, order, row_tiles, col_tiles, group, &rt, &ct);
    // This lane's rows of A (lane + 32·j of the tile) and block of B
    // (lanes 0 and 1), walked k tile by k tile.
    const float* pa = scale_a + (long long)w.kb * M + rt * GM_BM + lane;
    const int lim = M - rt * GM_BM - lane;  // row 32·j + lane of the tile exists when 32·j < lim
    const int b = 2 * ct + lane;
    const bool bok = lane < 2 && b * 128 < N;
    const float* pb = bok ? scale_b + (long long)b * kt + w.kb : scale_b;
    for (int k = w.kb; k < w.ke; k++, it++, pa += M, pb += bok) {
      if (it >= GM_SLOTS) {
        const int u = it - GM_SLOTS;
        gm_bar_wait(bars + 8 * (GM_STAGES + u % GM_STAGES), (u / GM_STAGES) & 1);
      }
      const int slot = it % GM_SLOTS;
#pragma unroll
      for (int j = 0; j < GM_BM / 32; j++) {
        gm_copy4(slots + 4 * (gm_slot_a(slot) + 32 * j + lane), 32 * j < lim ? pa + 32 * j : scale_a, 32 * j < lim);
      }
      if (lane < 2) gm_copy4(slots + 4 * (gm_slot_b(slot) + lane), pb, bok);
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bars + 8 * (it % GM_STAGES)) : "memory");
    }
  }
}

// gm_col_slot is where the scale loader puts column j's scale among the
// tile's GM_BN: a thread's four columns 16·k + 2·q + {0, 1, 8, 9} (q its
// lane % 4) side by side, one 16-byte load, and the four q of one k in a
// row, so that a quarter warp's loads fall in different banks.
__device__ __forceinline__ int gm_col_slot(int j) {
  return (j >> 4) * 16 + ((j >> 1) & 3) * 4 + ((j >> 3) & 1) * 2 + (j & 1);
}

// gm_row_scales is the scale loader's loop (one warp of the producer
// warpgroup, row-wise scales with the TMA store): per tile this CTA
// finishes, in the storer's order, it waits until the consumers have read
// the last tile's scales, copies the tile's row scales of A and column
// scales of B into shared memory at s (0 past M and N: those rows and
// columns are never stored; B's in gm_col_slot's order) and lets the
// consumers read them. Loaded while the consumers run the tile's mainloop,
// the scales cost their epilogue shared memory reads instead of 66 global
// loads' latency per thread.
__device__ __forceinline__ void gm_row_scales(float* s, u32 ready, u32 taken, const float* scale_a,
                                              const float* scale_b, int M, int N, const int* order, int row_tiles,
                                              int col_tiles, int group, int tiles, int sk, int kt, int lane) {
  int n = 0;
  gm_item w;
  for (int i = 0; gm_item_at(i, tiles, sk, kt, &w); i++) {
    if (!w.final) continue;
    int rt, ct;
    gm_tile(w.t, order, row_tiles, col_tiles, group, &rt, &ct);
    if (n > 0) gm_bar_wait(taken, (n - 1) & 1);
    for (int j = lane; j < GM_BM; j += 32) s[j] = rt * GM_BM + j < M ? scale_a[rt * GM_BM + j] : 0.f;
    for (int j = lane; j < GM_BN; j += 32) {
      s[GM_BM + gm_col_slot(j)] = ct * GM_BN + j < N ? scale_b[ct * GM_BN + j] : 0.f;
    }
    gm_bar_arrive(ready);  // each lane's arrival releases its stores
    n++;
  }
}

// gm_scale_rows multiplies this thread's share of a consumer's 64 x 256
// rows (tile rows r and r + 8, tile columns 2·q + 8·i and 2·q + 8·i + 1) by
// the row-wise scales the scale loader left at s: d *= sa[r]·sb[c] (the
// scales' product first, as the per-tensor path multiplies by sa·sb).
__device__ __forceinline__ void gm_scale_rows(float* d, const float* s, int r, int q) {
  const float a0 = s[r], a1 = s[r + 8];
  const float* sb = s + GM_BM + 4 * q;
#pragma unroll
  for (int k = 0; k < 16; k++) {
    const gm_f4 b = *(const gm_f4*)(sb + 16 * k);  // columns 16·k + 2·q + {0, 1, 8, 9}
    d[8 * k] *= a0 * b.x;
    d[8 * k + 1] *= a0 * b.y;
    d[8 * k + 2] *= a1 * b.x;
    d[8 * k + 3] *= a1 * b.y;
    d[8 * k + 4] *= a0 * b.z;
    d[8 * k + 5] *= a0 * b.w;
    d[8 * k + 6] *= a1 * b.z;
    d[8 * k + 7] *= a1 * b.w;
  }
}

// gm_gemm is the kernel: In the input dtype (its wgmma), Out the output's
// (its rounding), KN B's layout, TMA how C is stored, SCALING how fp8
// inputs' scales apply (GM_SCALE_*; GM_SCALE_TENSOR for 16-bit inputs).
template <class In, class Out, int KN, int TMA, int SCALING>
__device__ __forceinline__ void gm_gemm(const hc_tensor_map* tma, const hc_tensor_map* tmb, const hc_tensor_map* tmc,
                                        u16* C, int M, int N, int K, long long ldc, const int* order, int row_tiles,
                                        int group, const hc_gemm_segment* segs, int nsegs, u32* counters, u32 value,
                                        int sk, u32* flags, float* partials, const float* scale_a,
                                        const float* scale_b, const hc_tensor_map* tmd, const hc_tensor_map* tms,
                                        const gm_sum& sum) {
  extern __shared__ unsigned char gm_smem_raw[];
  const u32 raw = gm_smem_addr(gm_smem_raw);
  const u32 base = (raw + 1023) & ~1023u;
  const u32 sa = base, sb = base + GM_STAGES * GM_A_STAGE;
  const u32 cstage = sb + GM_STAGES * GM_B_STAGE;
  // full[GM_STAGES], empty[GM_STAGES], staged[2], freed[2], sready, staken, landed
  const u32 bars = cstage + GM_C_STAGE;
  const u32 staged = bars + 16 * GM_STAGES, freed = staged + 16, sready = freed + 16, staken = sready + 8;
  const u32 landed = staken + 8;
  float* const srow = (float*)(gm_smem_raw + (bars + GM_BARS * 8 - raw));  // the row-wise scales
  const int col_tiles = (N + GM_BN - 1) / GM_BN;
  const int tiles = row_tiles * col_tiles;
  const int k_tiles = (K + In::KT - 1) / In::KT;
  // The warpgroup, read as warp-uniform, as the consumers' stage index is:
  // the wgmma descriptors, derived from both, are then built in uniform
  // registers, not in every lane and moved there (R2UR) before each wgmma
  // (16 of them a k tile in the block-wise mainloop).
  const int wg = gm_warp_uniform(threadIdx.x / 128);

  if (threadIdx.x == 0) {
    for (int s = 0; s < GM_STAGES; s++) {
      // The producer's expected bytes; with block-wise scales also each lane
      // of the scale loader, once its copies have landed.
      gm_bar_init(bars + 8 * s, SCALING == GM_SCALE_BLOCK ? 33 : 1);
      gm_bar_init(bars + 8 * (GM_STAGES + s), 8);  // one arrival per consumer warp
    }
    for (int c = 0; c < 2; c++) {
      gm_bar_init(staged + 8 * c, 128);  // every thread of consumer c
      gm_bar_init(freed + 8 * c, 1);     // the storer, when it has read consumer c's half
    }
    gm_bar_init(sready, 32);  // the scale loader's lanes
    gm_bar_init(staken, 8);   // one arrival per consumer warp
    gm_bar_init(landed, 1);   // the storer's expect_tx
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x == 32) {
      gm_storer<TMA>(tmc, tmd, tms, sum, cstage, order, row_tiles, col_tiles, group, tiles, sk, k_tiles, segs, nsegs,
                     counters, value);
      return;  // what the others need is then not held across the storer's 40 registers
    }
    if (SCALING == GM_SCALE_ROW && TMA && threadIdx.x / 32 == 2) {
      gm_row_scales(srow, sready, staken, scale_a, scale_b, M, N, order, row_tiles, col_tiles, group, tiles, sk,
                    k_tiles, threadIdx.x % 32);
      return;
    }
    if (SCALING == GM_SCALE_BLOCK && threadIdx.x / 32 == 2) {
      gm_block_scales(gm_smem_addr(srow), bars, scale_a, scale_b, M, N, order, row_tiles, col_tiles, group, tiles, sk,
                      k_tiles, threadIdx.x % 32);
      return;
    }
    if (threadIdx.x != 0) return;
    // The loader.
    int it = 0;
    gm_item w;
    for (int i = 0; gm_item_at(i, tiles, sk, k_tiles, &w); i++) {
      int rt, ct;
      gm_tile(w.t, order, row_tiles, col_tiles, group, &rt, &ct);
      for (int k = w.kb; k < w.ke; k++, it++) {
        const int s = it % GM_STAGES;
        const u32 phase = (it / GM_STAGES) & 1;
        const u32 full = bars + 8 * s, empty = bars + 8 * (GM_STAGES + s);
        gm_bar_wait(empty, phase ^ 1);
        gm_bar_expect(full, GM_A_STAGE + GM_B_STAGE);
        gm_tma_load(sa + s * GM_A_STAGE, tma, k * In::KT, rt * GM_BM, full);
        if (KN) {
#pragma unroll
          for (int j = 0; j < GM_BN / 64; j++) {
            gm_tma_load(sb + s * GM_B_STAGE + j * (64 * GM_BK_BYTES), tmb, ct * GM_BN + 64 * j, k * In::KT, full);
          }
        } else {
          gm_tma_load(sb + s * GM_B_STAGE, tmb, k * In::KT, ct * GM_BN, full);
        }
      }
    }
    return;
  }

  // Consumers: warpgroup cw computes rows [64·cw, 64·cw + 64) of each tile.
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int cw = wg - 1;
  const int wt = threadIdx.x % 128, warp = wt / 32, lane = wt % 32;
  float scale = 1.f;
  if (In::SCALED && SCALING == GM_SCALE_TENSOR) {
    scale = (scale_a != 0 ? *scale_a : 1.f) * (scale_b != 0 ? *scale_b : 1.f);
  }
  // The accumulators, defined once: each item's first wgmma overwrites
  // them (scale-d 0), so no tile spends 64 instructions zeroing them before
  // its first wgmma (the block-wise mainloop adds into them: zeroed there).
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; i++) d[i] = 0.f;
  int it = 0, n = 0;
  gm_item w;
  for (int item = 0; gm_item_at(item, tiles, sk, k_tiles, &w); item++) {
    int rt, ct;
    gm_tile(w.t, order, row_tiles, col_tiles, group, &rt, &ct);
    if constexpr (SCALING == GM_SCALE_BLOCK) {  // only GmE4M3 has mma64
#pragma unroll
      for (int i = 0; i < 128; i++) d[i] = 0.f;
      gm_mainloop_block<In>(d, w.kb, w.ke, it, sa, sb, bars, cw, lane, srow, cw * 64 + warp * 16 + lane / 4);
    } else {
      int prev = -1, acc = 0;  // 0 until the item's first k step is issued
      for (int k = w.kb; k < w.ke; k++, it++) {
        const int s = gm_warp_uniform(it % GM_STAGES);
        gm_bar_wait(bars + 8 * s, (it / GM_STAGES) & 1);
        gm_wgmma_fence();
        // The stage's descriptors; a k step further on adds its offset in
        // 16-byte units to the address field (as in gm_mainloop_block).
        const u64 da0 = gm_desc_a(sa, s, cw);
        const u64 db0 = gm_desc_b<KN>(sb, s);
#pragma unroll
        for (int ks = 0; ks < GM_BK_BYTES / 32; ks++) {
          In::template mma<KN>(d, da0 + ks * 32 / 16, db0 + (KN ? ks * (16 * 128) : ks * 32) / 16, ks > 0 ? 1 : acc);
        }
        acc = 1;
        gm_wgmma_commit();
        gm_wgmma_wait<1>();
        if (prev >= 0 && lane == 0) gm_bar_arrive(bars + 8 * (GM_STAGES + prev));
        prev = s;
      }
      gm_wgmma_wait<0>();
      if (prev >= 0 && lane == 0) gm_bar_arrive(bars + 8 * (GM_STAGES + prev));
    }
    if (!w.final) {
      gm_park(d, partials, flags, cw, wt);
      continue;
    }
    if (w.kb > 0) gm_gather(d, partials, flags, w.t, tiles, sk, k_tiles, cw, wt);
    if (In::SCALED && SCALING == GM_SCALE_TENSOR) {
#pragma unroll
      for (int i = 0; i < 128; i++) d[i] *= scale;
    }
    if constexpr (SCALING == GM_SCALE_ROW && TMA) {
      gm_bar_wait(sready, n & 1);
      gm_scale_rows(d, srow, cw * 64 + warp * 16 + lane / 4, lane % 4);
      __syncwarp();
      if (lane == 0) gm_bar_arrive(staken);
    }

    // The halves go through the staging buffer in turn, consumer 0's
    // first: consumer 1 waits until the storer has read consumer 0's half
    // of this tile, consumer 0 until it has read consumer 1's of the last.
    // Each barrier is then waited on at most one phase behind its own.
    if (cw == 1) gm_bar_wait(freed, n & 1);
    if (cw == 0 && n > 0) gm_bar_wait(freed + 8, (n - 1) & 1);
    if (TMA) {
      gm_stage<Out>(d, cstage, warp * 16 + lane / 4, lane);
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    } else if constexpr (SCALING == GM_SCALE_ROW) {
      gm_store_rows<Out>(d, C, ldc, M, N, rt * GM_BM + cw * 64 + warp * 16 + lane / 4, ct * GM_BN + 2 * (lane % 4),
                         scale_a, scale_b);
    } else {
      gm_store<Out>(d, C, ldc, M, N, rt * GM_BM + cw * 64 + warp * 16 + lane / 4, ct * GM_BN + 2 * (lane % 4));
    }
    gm_bar_arrive(staged + 8 * cw);
    n++;
  }
}

#define HC_GEMM(name, In, Out, KN, TMA, SCALING)                                                                    \
  extern "C" __global__ void __launch_bounds__(GM_THREADS, 1)                                                       \
      name(const __grid_constant__ hc_tensor_map tma, const __grid_constant__ hc_tensor_map tmb,                    \
           const __grid_constant__ hc_tensor_map tmc, u16* C, int M, int N, int K, long long ldc, const int* order, \
           int row_tiles, int group, const hc_gemm_segment* segs, int nsegs, u32* counters, u32 value, int sk,      \
           u32* flags, float* partials, const float* scale_a, const float* scale_b,                                 \
           const __grid_constant__ hc_tensor_map tmd, const __grid_constant__ hc_tensor_map tms, int sum_r0,        \
           int sum_rows, int sum_blocks, int sum_self, int sum_block_rows, const u32* sum_arrivals, u32 sum_base,   \
           int sum_seg_rows) {                                                                                      \
    const gm_sum sum{sum_r0, TMA ? sum_rows : 0, sum_blocks, sum_self, sum_block_rows, sum_arrivals, sum_base,      \
                     sum_seg_rows};                                                                                 \
    gm_gemm<In, Out, KN, TMA, SCALING>(&tma, &tmb, &tmc, C, M, N, K, ldc, order, row_tiles, group, segs, nsegs,     \
                                       counters, value, sk, flags, partials, scale_a, scale_b, &tmd, &tms, sum);    \
  }

HC_GEMM(hc_gemm_bf16_nk, GmBF16, GmBF16, 0, 1, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_bf16_kn, GmBF16, GmBF16, 1, 1, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_fp16_nk, GmF16, GmF16, 0, 1, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_fp16_kn, GmF16, GmF16, 1, 1, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_bf16_nk_odd, GmBF16, GmBF16, 0, 0, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_bf16_kn_odd, GmBF16, GmBF16, 1, 0, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_fp16_nk_odd, GmF16, GmF16, 0, 0, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_fp16_kn_odd, GmF16, GmF16, 1, 0, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_e4m3_bf16_nk, GmE4M3, GmBF16, 0, 1, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_e4m3_fp16_nk, GmE4M3, GmF16, 0, 1, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_e4m3_bf16_nk_odd, GmE4M3, GmBF16, 0, 0, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_e4m3_fp16_nk_odd, GmE4M3, GmF16, 0, 0, GM_SCALE_TENSOR)
HC_GEMM(hc_gemm_e4m3_bf16_nk_row, GmE4M3, GmBF16, 0, 1, GM_SCALE_ROW)
HC_GEMM(hc_gemm_e4m3_fp16_nk_row, GmE4M3, GmF16, 0, 1, GM_SCALE_ROW)
HC_GEMM(hc_gemm_e4m3_bf16_nk_row_odd, GmE4M3, GmBF16, 0, 0, GM_SCALE_ROW)
HC_GEMM(hc_gemm_e4m3_fp16_nk_row_odd, GmE4M3, GmF16, 0, 0, GM_SCALE_ROW)
HC_GEMM(hc_gemm_e4m3_bf16_nk_block, GmE4M3, GmBF16, 0, 1, GM_SCALE_BLOCK)
HC_GEMM(hc_gemm_e4m3_fp16_nk_block, GmE4M3, GmF16, 0, 1, GM_SCALE_BLOCK)
HC_GEMM(hc_gemm_e4m3_bf16_nk_block_odd, GmE4M3, GmBF16, 0, 0, GM_SCALE_BLOCK)
HC_GEMM(hc_gemm_e4m3_fp16_nk_block_odd, GmE4M3, GmF16, 0, 0, GM_SCALE_BLOCK)
