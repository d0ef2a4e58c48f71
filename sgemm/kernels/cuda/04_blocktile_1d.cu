// Rung 4 -- 1-D block tiling: each thread computes TM elements of one column
// of C from shared-memory tiles.
//
// Adds over rung 3: a thread keeps TM accumulators for TM rows of one column
// j, so each value of the B tile read from shared memory feeds TM FMAs
// instead of one (shared loads per FMA: 2 -> 1 + 1/TM).  Tiles are no longer
// square (BM x BK of op(A), BK x BN of op(B)), so BK can be cut to keep
// shared memory small while BM, BN grow.
// Thread layout: ti = tid % (BM/TM) runs fastest and the thread's rows are
// i = ti + r*(BM/TM), r < TM (interleaved, not a contiguous strip): at every
// r a warp reads consecutive words of the A tile (no bank conflict) and
// stores consecutive rows of the column-major C (coalesced); the B tile read
// is a broadcast.
// Seed: seed 002 "1D BlockTiling" (BM=BN=64, BK=8, TM=8: the "large"
// config), seed 003 kernel 5 (32x32 tile, 4x1 micro kernel: "small").
// Global loads: the thread index runs along the contiguous dimension of each
// operand (i for A, p for op(A)=A^T, p for B, j for op(B)=B^T).  The +1 pad of
// rung 3 is gone: with BK != BM it no longer separates the banks of the
// transposed stores (TA for A, !TB for B), which conflict here; rung 7
// derives the pad that does.
// Edges (seed 004 section 8.1, observation 7): rows of A and columns of B past
// the m/n edge are redirected to the last valid one -- always legal to read,
// and their products only reach elements of C that are never stored -- so no
// load needs an m/n guard.  Only the last, partial k-tile takes the guarded
// path that zero-fills p >= K (both operands, so 0*Inf never appears); full
// k-tiles load unguarded.  The store is guarded per element.
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json): 11.0 TFLOPS
// at 4096^3 against rung 3's 6.8.  Reproduce: sgemm bench --kernels 3,4
// --sizes 4096.
#include "common.cuh"

namespace rung4 {

// Copy one BK-deep slab of an operand into S[p * LD + x], x < XS.  The stored
// operand X has element (p, x) at
//   KCONT  : (x0 + x) * ld + (k0 + p)   (contiguous along k: A when TA, B when !TB)
//   !KCONT : (k0 + p) * ld + (x0 + x)   (contiguous along m/n)
// x0 + x is clamped to xmax - 1; p >= K - k0 is zero-filled when KGUARD.
template <int XS, int BK, int LD, int T, bool KCONT, bool KGUARD>
__device__ __forceinline__ void load_tile(float* S, const float* X, long long ld,
                                          int x0, int xmax, int k0, int K) {
    constexpr int CONT = KCONT ? BK : XS;   // run of the thread index
#pragma unroll
    for (int s = 0; s < XS * BK / T; ++s) {
        const int e = threadIdx.x + s * T;
        const int c = e % CONT, r = e / CONT;
        const int p = KCONT ? c : r, x = KCONT ? r : c;
        const long long xg = min(x0 + x, xmax - 1);
        const long long off = KCONT ? xg * ld + (k0 + p) : (long long)(k0 + p) * ld + xg;
        S[p * LD + x] = (!KGUARD || k0 + p < K) ? X[off] : 0.0f;
    }
}

}  // namespace rung4

template <int BM, int BN, int BK, int TM, bool TA, bool TB>
__global__ void __launch_bounds__(BM / TM * BN)
sgemm_blocktile_1d(SGEMM_PARAMS) {
    constexpr int T = BM / TM * BN;   // threads
    constexpr int RM = BM / TM;       // threads along i
    static_assert(BM % TM == 0, "TM must divide BM");
    static_assert(BM * BK % T == 0 && BN * BK % T == 0, "tile loads must split evenly");
    __shared__ float As[BK * BM];     // As[p * BM + i] = op(A)(bi + i, k0 + p)
    __shared__ float Bs[BK * BN];     // Bs[p * BN + j] = op(B)(k0 + p, bj + j)
    SGEMM_BATCH_OFFSET();

    const int ti = threadIdx.x % RM, tj = threadIdx.x / RM;
    const int bi = blockIdx.x * BM, bj = blockIdx.y * BN;
    float acc[TM];
#pragma unroll
    for (int r = 0; r < TM; ++r) acc[r] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (k0 + BK <= K) {   // full k-tile: unguarded loads
            rung4::load_tile<BM, BK, BM, T, TA, false>(As, A, lda, bi, M, k0, K);
            rung4::load_tile<BN, BK, BN, T, !TB, false>(Bs, B, ldb, bj, N, k0, K);
        } else {
            rung4::load_tile<BM, BK, BM, T, TA, true>(As, A, lda, bi, M, k0, K);
            rung4::load_tile<BN, BK, BN, T, !TB, true>(Bs, B, ldb, bj, N, k0, K);
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; ++p) {
            const float b = Bs[p * BN + tj];
#pragma unroll
            for (int r = 0; r < TM; ++r) acc[r] = fmaf(As[p * BM + ti + r * RM], b, acc[r]);
        }
        __syncthreads();
    }

    const int j = bj + tj;
    if (j >= N) return;
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        const int i = bi + ti + r * RM;
        if (i < M) sg::store_c(C, (long long)j * ldc + i, acc[r], alpha, beta, SGEMM_EPI, i, j);
    }
}
