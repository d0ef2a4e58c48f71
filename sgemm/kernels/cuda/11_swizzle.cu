// Rung 11 -- rung 10 + thread-block swizzle for L2 reuse.
//
// Adds over rung 10: the grid is one-dimensional (x = tiles_m * tiles_n, z =
// batch) and each block remaps its linear id to a C tile so that consecutive
// ids -- which the hardware runs at the same time -- cover a compact patch of
// C instead of whole tile-columns.  Ids are taken in groups of SWZ tile-rows
// (m); inside a group the id runs down m first, then across n:
//     g = id / (SWZ * tiles_n),  rows [g*SWZ, g*SWZ + h), h = min(SWZ, rest)
//     tm = g*SWZ + (id % (SWZ*tiles_n)) % h,   tn = (id % (SWZ*tiles_n)) / h
// A wave of 132 resident 256x128 blocks then touches about 8 A panels and 17
// B panels instead of 16 and 8.3 (4096^3) -- no fewer at this size -- and at
// 8192^3 8 + 17 instead of 32 + 4.1.  SGEMM at these sizes is FFMA-bound, so
// the gain was expected to be small.
// Seed: seed 002 kernel 8 ("thread-group swizzling"); Triton's grouped order.
// Edges: as rung 10; the remap is a bijection on the tile grid.
// Measured (H200, 2026-11-21, canonical NN, median of 25, cuBLAS 50.1/51.4/51.2
// at 2048/4096/8192^3; bench/results/ffma-tuning-h200-2026-11-21.json):
//   large  256x128x16 (16x8/thread) SWZ 8: 45.7 / 46.8 / 47.2 TFLOPS
//          (91 / 91 / 92% of cuBLAS) -- faster than the same tile without the
//          swizzle (45.3 / 46.3 / 46.7) by 0.8-1.2%; 4096^3 NT 49.0, TN 43.4,
//          TT 45.7.
//   medium 128x128x16 SWZ 8, 3 stages: 44.6 / 46.1 / 47.0 (the unswizzled
//          3-stage tile measured 45.0 / 46.0 / 45.5 in an earlier call).
//   256x128x8 (64x64 warps): SWZ 8 45.0, SWZ 16 45.1 vs 45.0 unswizzled (4096^3).
#include "10_async_pipeline.cu"

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          int SWZ, bool TA, bool TB, bool ALIGNED, int KPATH = -1>
__global__ void __launch_bounds__(THREADS, (TM * TN <= 64 && THREADS <= 256) ? 2 : 1)
sgemm_swizzle(SGEMM_PARAMS) {
    SGEMM_BATCH_OFFSET();
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int id = blockIdx.x;
    const int per_group = SWZ * tiles_n;
    const int g = id / per_group, in = id - g * per_group;
    const int first = g * SWZ;
    const int h = min(SWZ, tiles_m - first);
    const int tm = first + in % h, tn = in / h;
    sg::async_tile<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED, KPATH>(
        M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, tm, tn);
}
