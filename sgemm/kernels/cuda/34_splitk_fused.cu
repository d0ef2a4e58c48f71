// Scheme kernel 34 -- split-K in one launch ("splitk_fused").
//
// Scheme 32 runs the tile kernel over K-slices into a workspace and then a
// second kernel (32_splitk_reduce.cu) sums the slices.  Under CUDA graphs
// that second launch costs ~1.5-2 us, as much as a whole 384^3 GEMM gains
// from splitting.  Here the grid is (m tiles, n tiles, batch * S): block
// (x, y, z) computes slice s = z % S of output tile (x, y) and then
//   1. writes its partial tile to its own workspace slot (tile, s);
//   2. fences and increments the tile's counter (one atomic per block);
//   3. the block that sees the count reach S - 1 is the last: it sums ALL
//      S slots in the fixed order 0, 1, ..., S-1 (its own included, read back:
//      the stored value is the register value, so the result does not depend
//      on which block came last -- bit-identical run to run), applies
//      alpha/beta (beta == 0 never reads C), writes C and resets the counter
//      to 0, so the next launch on the stream finds it zeroed without a memset.
// The counters are zeroed once, when the plan allocates the workspace.  Two
// launches may not use one workspace concurrently (the plan owns it; the plan
// cache keys workspace plans by stream).
//
// Partial tiles are stored thread-major: float4 group g of thread t at
// slot[g * NT + t], so a warp's stores and the reducer's loads are 512
// contiguous bytes; the reducer maps each float4 back to the thread tile it
// came from (the same arithmetic as the epilogue of 30_tile.cu).
//
// The main loop and the S == 1 epilogue are 30_tile.cu's (s30::Tile, the same
// template parameters and cp.async copies, included from that file), so a tile config means
// the same thing for the two-launch and the fused scheme and the tuner's tile
// space serves both.  With S == 1 (W and counters unused, may be null) the
// kernel is an ordinary SGEMM: the direct-launch contract of every spec.
// Where thread-block clusters exist (sm_90) the planner prefers 36/38, which
// sum through distributed shared memory instead of a global handshake: on the
// H100 public suite (bench/results/suite-h100-2026-11-25.json) it picks neither
// this nor the two-launch form for small squares. On sm_80 this is the
// one-launch split-K.
#include "30_tile.cu"

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, (THREADS <= 256 ? 512 / THREADS : 1))
sgemm_splitk_fused(SGEMM_PARAMS, float* __restrict__ W, unsigned* __restrict__ counters,
                   int kc, int S) {
    using T = s30::Tile<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED>;
    constexpr int NT = T::NT, G = TM * TN / 4;         // float4 groups per thread
    extern __shared__ __align__(16) float smem[];
    __shared__ unsigned is_last;

    sg::pdl_wait();
    // z = entry * S + slice: the batch entry moves A, B, C; the slice moves A
    // and B along k by kc (a multiple of BK and of 4, so ALIGNED still holds).
    const int slice = blockIdx.z % S;
    const long long entry = blockIdx.z / S;
    const int kbeg = slice * kc;
    const int KL = min(kc, K - kbeg);                  // >= 1: the host launches ceil(K/kc) slices
    A += entry * strideA + (TA ? (long long)kbeg : (long long)kbeg * lda);
    B += entry * strideB + (TB ? (long long)kbeg * ldb : (long long)kbeg);
    C += entry * strideC;

    // 30_tile.cu's main loop over this slice's k-range; k-group 0 holds the sum.
    const T tile;
    const int tid = tile.tid, kg = tile.kg;
    float acc[TM][TN];
    tile.accumulate(A, lda, B, ldb, M, N, KL, smem, acc);

    if (S == 1) {       // not split: 30_tile.cu's own store
        tile.before_store();
        if (kg > 0) return;
        tile.store(acc, C, ldc, M, N, alpha, beta, SGEMM_EPI, smem);
        return;
    }

    // 1. this slice's partial tile -> its slot (padding rows/columns included:
    //    every slot is written whole, so the reducer needs no guards).
    const long long tix = (entry * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    float4* slots = reinterpret_cast<float4*>(W + tix * (long long)S * (BM * BN));
    if (kg == 0) {
        float4* mine = slots + (long long)slice * (G * NT);
        tile.park(acc, [&](int e, float4 v) { __stcg(mine + e, v); });
    }
    // 2. publish: each thread's stores are ordered before the block's count.
    __threadfence();
    __syncthreads();
    if (tid == 0) is_last = sg::count_in(counters + tix) == (unsigned)(S - 1);
    __syncthreads();
    if (!is_last) return;
    __threadfence();    // the slots read below come after the count observed above

    // 3. the last block: every thread sums whole float4s of the tile over the
    //    slices in order 0..S-1 (sg::sum_slots).
    for (int e = tid; e < G * NT; e += THREADS) {
        const float4 s = sg::sum_slots(slots, G * NT, S, e);
        int m, n;                        // back to the thread tile this float4 came from
        tile.coord(e, m, n);
        if (n < N && m < M)
            sg::store4<ALIGNED>(C + (long long)n * ldc, m, M, s, alpha, beta, SGEMM_EPI, n);
    }
    if (tid == 0) counters[tix] = 0u;    // ready for the next launch (stream-ordered)
}
