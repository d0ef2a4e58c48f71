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
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json):
// large 256x128x16 (16x8/thread) SWZ 8: 46.9 TFLOPS at 4096^3 and 47.3 at
// 8192^3 against the same tile unswizzled (rung 10) at 46.4 / 46.8: +1%.
// Reproduce: sgemm bench --kernels 10,11 --sizes 4096,8192. Other SWZ and
// tiles: docs/notes/ffma-fast.md.
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
        SGEMM_ARGS, tm, tn);
}
