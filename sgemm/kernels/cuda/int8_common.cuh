// What the INT8 engine's kernels share (40_int8x.cu, 41_int8_mma.cu,
// 42_int8_wgmma.cu): the modular reduction every residue and every product
// plane goes through, and the GEMMs' grouped block raster.  One copy, so the
// arithmetic tests/int8x/test_residues.py emulates is the arithmetic all
// three run.
#pragma once

namespace i8c {

// t mod p in [0, p) for |t| < 2^24, in float and 32-bit integer arithmetic
// (a % by a run-time p is a long software division).  t is exact in float;
// q = floor(t * fl(1/p)) is floor(t / p) within 1 (the product's relative
// error is below 2^-23 and |t / p| < 2^24 / p, so its absolute error is
// below 2 / p <= 1), and one correction each way puts t - q p in [0, p).
__device__ __forceinline__ int mod_f(int t, int p, float inv) {
    const int q = (int)floorf(__fmul_rn((float)t, inv));
    int r = t - q * p;
    if (r < 0) r += p;
    if (r >= p) r -= p;
    return r;
}

// x mod p in [0, p) for |x| <= 2^31 (the scaled integers, and any INT32
// accumulator): x = hi 2^16 + lo with lo in [0, 2^16) and |hi| <= 2^15, so
// t = hi (2^16 mod p) + lo is congruent to x and |t| < 2^24.  c16 = 2^16 mod
// p, inv = fl(1/p).  tests/int8x/test_residues.py checks both in float32
// against exact integers.
__device__ __forceinline__ int mod_small(long long x, int p, int c16, float inv) {
    const int hi = (int)(x >> 16), lo = (int)(x & 0xffff);
    return mod_f(hi * c16 + lo, p, inv);
}
__device__ __forceinline__ int mod_small(int x, int p, int c16, float inv) {
    return mod_f((x >> 16) * c16 + (x & 0xffff), p, inv);
}

// The output tile of block blockIdx.x in the grouped raster: blocks walk down
// a group of `group` BM-row tiles, then across it, so a wave shares a few A
// and B panels in L2.  The grid is exact: (m0, n0) is always inside C.
template <int BM, int BN>
__device__ __forceinline__ void grouped_tile(int M, int N, int group, int& m0, int& n0) {
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = group * tiles_n;
    const int g0 = (int)blockIdx.x / per_group * group;
    const int gsize = min(tiles_m - g0, group);
    const int in_group = (int)blockIdx.x % per_group;
    m0 = (g0 + in_group % gsize) * BM;
    n0 = in_group / gsize * BN;
}

}  // namespace i8c
