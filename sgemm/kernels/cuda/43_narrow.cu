// Scheme kernel 43 -- a narrow side streamed ("narrow").
//
// Batched products with one side of at most 32 (a batch of small matrices:
// 2657 x 10x41x144, 1387 x 20x410x163) are bound by reading the operands,
// which cuBLAS streams at 1.3-2.4 TB/s where a user calls them NN; the tile
// kernels reached 0.8-1.6 (their best 0.82x cuBLAS there, min 0.58:
// bench/results/narrow-batch-report-cpu-2026-11-28.log).  A tile pads the
// narrow side to its 32-128 rows, loads an unaligned operand (most of these
// sizes are odd) in scalars through registers, and keeps one k-tile in
// flight.  Here a block owns W rows of the wide side by the whole narrow
// side (NW = 8, 16 or 32, the smallest that holds it), copies the operands
// into shared memory with 4-byte cp.async (no alignment needed, no register
// holds data in flight, out-of-range copies zero-filled) STAGES - 1 k-chunks
// ahead, and each warp copy instruction covers 32 consecutive floats of
// whichever index is contiguous in memory.
//
// Tile (BM x BN, canonical column-major C): the wide side is whichever of
// BM, BN is larger.  "X" is the wide operand (op(A) when BM is wide, else
// op(B)^T) and "Y" the narrow one; D(w, q) is C(w, q) or, SWAP, C(q, w).
// X's chunk is stored [kk][w] (pitch W + 1: a warp's 32 consecutive kk of
// one row land in 32 banks), Y's [kk][q] (pitch NW + 4: 16-byte rows for
// float4 broadcasts).  The T threads form KG = T / W k-groups of W (one, two
// or four); thread t owns wide row t % W and all NW narrow columns for the
// kk of its group's part of each chunk (BK / KG of them): per k-step one
// LDS.32 and NW/4 broadcast LDS.128 feed NW FFMAs.  Each group's sum runs in
// k order; the groups' sums are added in group order through shared memory
// (deterministic, and KG shorter chains: no less accurate than one).  The
// sums go through shared memory on the way out so that the stores run along
// C's contiguous index in either orientation; alpha, beta and the epilogue
// (bias, activation) are applied there, once an element.  beta == 0 never
// reads C.
// BK = 16 or 8: an 8-deep chunk halves the stages' shared memory, so more
// blocks fit an SM where the batch is large; k-groups put two or four warps
// on a row's K where the batch is too small to fill the SMs with one block
// an item.
// Measured (H100, one group, BK 16, every FFMA candidate timed on 60 such
// problems, bench/results/narrow-sweep-h100-2026-11-28.json and its report
// narrow-report-cpu-2026-11-28.log): against the fastest other candidate
// 1.07x in geometric mean where the narrow side is 9-16, 0.74x where it is
// 17-32 (32 accumulators a thread and one block per item with a long K are
// slower than rung 9's tiles).  8-deep chunks and k-groups (H200, 70
// problems, narrow-groups-sweep-h200-2026-11-29.json, report in
// narrow-groups-report-cpu-2026-11-29.log): the fastest of them against the
// fastest of every other candidate, 43_narrow's first configs included,
// 1.066x where the narrow side is 9-16 (faster on 28 of 36), 1.000x where it
// is 17-32 (19 of 31).  The planner weighs every config by the rates fitted
// from the H200 sweeps, for single products too, whose blocks come from its
// K split (the slices run as the batch): there 1.11-1.21x the fastest other
// candidate where the narrow side is 9-16, slower where it is wider
// (narrow-single-fit-cpu-2026-11-29.log; docs/notes/dispatch.md).
#include "tile_loaders.cuh"

namespace s43 {
// The 4-byte copies of one operand's k-chunk: R rows (of the wide side or the
// narrow one) by BK, element (r, kk) at P[r * sr + kk * sk] with the
// contiguous index's stride 1, into s[kk * PITCH + r].  With T threads, a
// thread's copies share one coordinate and step the other, so its address is
// one pointer bumped by a constant stride (addresses precomputed per copy
// held ~200 registers).  RCONT (r contiguous): lanes along r, a thread row(s)
// t (+ T ...) for every kk; else lanes along k, a thread one kk of rows
// t / BK + i T / BK.  Out-of-range copies read nothing and zero-fill (their
// address is the block's element (0, 0), which exists).
template <int R, int BK, int T, int PITCH, bool RCONT>
struct Chunk {
    static_assert(RCONT ? (R % T == 0 || (T % R == 0 && BK % (T / R) == 0)) : T % BK == 0,
                  "the copies split evenly over the threads");
    static constexpr int RSTEP = RCONT ? (T < R ? T : R) : T / BK;   // rows between copies
    static constexpr int RUNS = RCONT ? (T < R ? R / T : 1) : 1;     // row groups a thread
    static constexpr int COPIES = R * BK / T;
    const float* safe;  // the block's element (0, 0)
    const float* p;     // the thread's first element
    long long ld;       // stride of the non-contiguous index
    int r0, kk0, rows;  // the thread's first (row, kk); rows: valid rows of the block

    __device__ __forceinline__ Chunk(const float* base, long long ld_, int rows_, int t)
        : safe(base), ld(ld_), rows(rows_) {
        r0 = RCONT ? t % R : t / BK;
        kk0 = RCONT ? t / R : t % BK;
        p = base + (RCONT ? r0 + (long long)kk0 * ld : (long long)r0 * ld + kk0);
    }
    __device__ __forceinline__ void issue(float* s, int k0, int K) const {
        if (RCONT) {        // copies: RUNS rows x (BK / (T / R)) k-steps
            constexpr int KSTEP = T < R ? 1 : T / R, KN = BK / KSTEP;
#pragma unroll
            for (int u = 0; u < RUNS; ++u) {
                const int r = r0 + u * RSTEP;
                const float* q = p + u * RSTEP + (long long)k0 * ld;
#pragma unroll 4
                for (int i = 0; i < KN; ++i, q += KSTEP * ld) {
                    const int kk = kk0 + i * KSTEP;
                    const bool ok = r < rows && k0 + kk < K;
                    sg::cp_async4_zfill(sg::smem_addr(s + kk * PITCH + r), ok ? q : safe, ok ? 4 : 0);
                }
            }
        } else {
            const bool kok = k0 + kk0 < K;
            const float* q = p + k0;
#pragma unroll 4
            for (int i = 0; i < COPIES; ++i, q += RSTEP * ld) {
                const int r = r0 + i * RSTEP;
                const bool ok = kok && r < rows;
                sg::cp_async4_zfill(sg::smem_addr(s + kk0 * PITCH + r), ok ? q : safe, ok ? 4 : 0);
            }
        }
    }
};
}  // namespace s43

template <int BM, int BN, int BK, int T, bool TA, bool TB>
__global__ void __launch_bounds__(T) sgemm_narrow(SGEMM_PARAMS) {
    constexpr bool SWAP = BM < BN;                      // narrow M: the block runs along n
    constexpr int W = SWAP ? BN : BM, NW = SWAP ? BM : BN, STAGES = 4;
    constexpr int KG = T / W, KP = BK / KG;             // k-groups; each one's kk of a chunk
    constexpr int XP = W + 1, YP = NW + 4, DP = NW + 1;
    constexpr int XS = BK * XP, YS = BK * YP, STAGE = XS + YS;
    constexpr bool XW = SWAP ? TB : !TA;                // X contiguous along the wide index
    constexpr bool YQ = SWAP ? !TA : TB;                // Y contiguous along the narrow index
    static_assert(W % 64 == 0 && NW % 4 == 0 && NW <= 32 && BK % 4 == 0, "tile shape");
    static_assert(T % W == 0 && BK % KG == 0, "k-groups of whole rows and whole chunk parts");
    static_assert(W * DP <= STAGES * STAGE, "the output tile fits the stages");
    extern __shared__ __align__(16) float smem[];
    SGEMM_BATCH_OFFSET();
    const int t = threadIdx.x, row = t % W, g = t / W;   // g: the thread's k-group
    const int bm0 = blockIdx.x * BM, bn0 = blockIdx.y * BN;
    const int w0 = SWAP ? bn0 : bm0, q0 = SWAP ? bm0 : bn0;
    const int wl = (SWAP ? N : M) - w0, ql = (SWAP ? M : N) - q0;    // extents left
    // X(w, kk) and Y(kk, q) as (row, kk) walks of the stored arrays
    const float* xb = SWAP ? B + (TB ? w0 : w0 * ldb) : A + (TA ? w0 * lda : w0);
    const float* yb = SWAP ? A + (TA ? q0 * lda : q0) : B + (TB ? q0 : q0 * ldb);
    const s43::Chunk<W, BK, T, XP, XW> xc(xb, SWAP ? ldb : lda, wl, t);
    const s43::Chunk<NW, BK, T, YP, YQ> yc(yb, SWAP ? lda : ldb, ql, t);
    auto issue = [&](int s, int k0) {
        xc.issue(smem + s * STAGE, k0, K);
        yc.issue(smem + s * STAGE + XS, k0, K);
    };

    float acc[NW];
#pragma unroll
    for (int q = 0; q < NW; ++q) acc[q] = 0.0f;

    const int chunks = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < chunks) issue(s, s * BK);
        sg::cp_async_commit();
    }
    for (int c = 0; c < chunks; ++c) {
        sg::cp_async_wait<STAGES - 2>();
        __syncthreads();        // chunk c landed; everyone is past chunk c - 1's stage
        const int f = c + STAGES - 1;
        if (f < chunks) issue(f % STAGES, f * BK);
        sg::cp_async_commit();
        const float* xs = smem + (c % STAGES) * STAGE + g * KP * XP;    // the group's part
        const float* ys = smem + (c % STAGES) * STAGE + XS + g * KP * YP;
#pragma unroll
        for (int kk = 0; kk < KP; ++kk) {
            const float x = xs[kk * XP + row];
#pragma unroll
            for (int q = 0; q < NW; q += 4) {
                const float4 y = *reinterpret_cast<const float4*>(ys + kk * YP + q);
                acc[q] = fmaf(x, y.x, acc[q]);
                acc[q + 1] = fmaf(x, y.y, acc[q + 1]);
                acc[q + 2] = fmaf(x, y.z, acc[q + 2]);
                acc[q + 3] = fmaf(x, y.w, acc[q + 3]);
            }
        }
    }

    // out through shared memory: D[w][q], the k-groups' sums added in group
    // order (deterministic), then stores along C's rows
    sg::cp_async_wait<0>();
    __syncthreads();
    float* ds = smem;
    if (g == 0) {
#pragma unroll
        for (int q = 0; q < NW; ++q) ds[row * DP + q] = acc[q];
    }
#pragma unroll 1
    for (int h = 1; h < KG; ++h) {
        __syncthreads();
        if (g == h) {
#pragma unroll
            for (int q = 0; q < NW; ++q) ds[row * DP + q] += acc[q];
        }
    }
    __syncthreads();
    const sg::Epi ep = SGEMM_EPI;
#pragma unroll 2
    for (int e = t; e < W * NW; e += T) {
        const int w = SWAP ? e / NW : e % W, q = SWAP ? e % NW : e / W;
        if (w >= wl || q >= ql) continue;
        const int i = SWAP ? q0 + q : w0 + w, j = SWAP ? w0 + w : q0 + q;
        const long long off = (long long)j * ldc + i;
        if (epi) sg::store_c(C, off, ds[w * DP + q], alpha, beta, ep, i, j);
        else sg::store_c(C, off, ds[w * DP + q], alpha, beta);
    }
}
