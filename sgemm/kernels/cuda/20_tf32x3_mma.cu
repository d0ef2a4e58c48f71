// 20 -- 3xTF32 (and 1xTF32) on tensor cores with mma.sync, cp.async pipeline.
//
// Kernels: sgemm_tf32x3_mma (precision "tf32x3": big*big + big*small +
// small*big per product, FP32-level accuracy) and sgemm_tf32_mma (precision
// "tf32": big*big only, like cuBLAS FAST_TF32).  sm_80 and sm_90a.
//
// Algorithm.  A block computes a BM x BN tile of C with (BM/WM)*(BN/WN) warps,
// each a WM x WN warp tile of mma.sync.m16n8k8 (TF32 in, FP32 accumulate).
// The k loop is a STAGES-deep cp.async pipeline (cp.async.cg 16-byte copies
// with zero-fill for edges when ALIGNED, 4-byte copies otherwise).  Each tile
// is kept in shared memory in the layout its global copy already has, so
// cp.async never transposes:
//   K-contiguous operand (TA=true for A, TB=false for B): [row][BK+4]
//   M/N-contiguous operand:                               [k][rows+8]
// The paddings make every fragment read (8 rows x 4 k per warp) hit 32
// distinct banks in either layout.  Fragments are split into big/small in
// registers right after the shared-memory read (tc::split); each element is
// split once per warp that reads it (BN/WN or BM/WM times per block), which
// costs a few ALU ops per MMA operand and no extra shared memory.
// Per k8 step a warp issues 3 (tf32x3) or 1 (tf32) MMAs per 16x8 sub-tile,
// small products first so they are not absorbed by the big one.  tf32x3 sums
// the three from zero and adds them to the accumulator with FADD (the tensor
// cores' accumulation truncates; see the main loop).
//
// Edges: out-of-range A/B elements are zero-filled by cp.async (src-size 0 or
// a partial vector), so the MMAs need no guards; C stores are guarded.  Any
// layout, any alignment (ALIGNED=false uses 4-byte copies), batch via z.
// Inf/NaN: see tc_common.cuh (flag + FFMA recomputation of the block tile).
// Measured (H200, 4096^3 NN, python scripts/tc_check.py; runs in
// docs/notes/tensorcore.md): tf32x3 128x128 45.9
// TFLOPS (0.89x cuBLAS SGEMM), tf32 108.5.  On Hopper use 21_tf32x3_wgmma.
#include "tc_common.cuh"

namespace tc20 {

__device__ __forceinline__ tc::u32 smem_u32(const void* p) {
    return static_cast<tc::u32>(__cvta_generic_to_shared(p));
}

// 16-byte async copy, zero-filling the bytes past src_bytes (0..16).
__device__ __forceinline__ void cp_async16(tc::u32 dst, const float* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(tc::u32 dst, const float* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const tc::u32 (&a)[4],
                                         const tc::u32 (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Shared-memory footprint of one operand tile of `rows` x BK, the larger of
// the two layouts so that one size serves every transpose (in floats).
__host__ __device__ constexpr int tile_floats(int rows, int bk) {
    return rows * (bk + 4) > bk * (rows + 8) ? rows * (bk + 4) : bk * (rows + 8);
}

// Copy the rows x BK tile of an operand into shared memory.  KCONT: the
// operand is contiguous along k (element (r, p) at X[r*ld + p]); otherwise
// contiguous along rows (X[p*ld + r]).  r0/k0 are the tile origin, R/KK the
// valid extents.
// One 16-byte chunk of 4 contiguous floats, of which `bytes` are in range.
// A partial chunk (the k or row edge) is copied 4 bytes at a time: a 16-byte
// cp.async with a short src-size is zero-filled correctly, but its source
// span still covers the out-of-range floats, which can lie past the end of
// the allocation (compute-sanitizer memcheck flagged exactly that on
// 127x65x129 with a 132-float row pitch).
__device__ __forceinline__ void copy_chunk(tc::u32 dst, const float* src, int bytes) {
    if (bytes == 16 || bytes == 0) {
        cp_async16(dst, src, bytes);
    } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
            cp_async4(dst + 4u * q, 4 * q < bytes ? src + q : src, 4 * q < bytes ? 4 : 0);
    }
}

template <int ROWS, int BK, int THREADS, bool KCONT, bool ALIGNED>
__device__ __forceinline__ void load_tile(float* s, const float* __restrict__ X, long long ld,
                                          int r0, int k0, int R, int KK, int tid) {
    const tc::u32 sbase = smem_u32(s);
    if (KCONT) {
        constexpr int LDS = BK + 4;            // [row][k]
        if (ALIGNED) {
            constexpr int CH = ROWS * BK / 4;  // 16-byte chunks
#pragma unroll
            for (int e0 = 0; e0 < CH; e0 += THREADS) {
                const int e = e0 + tid;
                if (CH % THREADS == 0 || e < CH) {
                    const int r = e / (BK / 4), c = (e % (BK / 4)) * 4;
                    const int gr = r0 + r, gk = k0 + c;
                    int bytes = (gr < R) ? 4 * (KK - gk) : 0;
                    bytes = bytes < 0 ? 0 : (bytes > 16 ? 16 : bytes);
                    const float* src = bytes > 0 ? X + (long long)gr * ld + gk : X;
                    copy_chunk(sbase + 4u * (r * LDS + c), src, bytes);
                }
            }
        } else {
            constexpr int EL = ROWS * BK;
#pragma unroll 4
            for (int e0 = 0; e0 < EL; e0 += THREADS) {
                const int e = e0 + tid;
                if (EL % THREADS == 0 || e < EL) {
                    const int r = e / BK, c = e % BK;
                    const int gr = r0 + r, gk = k0 + c;
                    const bool in = gr < R && gk < KK;
                    cp_async4(sbase + 4u * (r * LDS + c),
                              in ? X + (long long)gr * ld + gk : X, in ? 4 : 0);
                }
            }
        }
    } else {
        constexpr int LDS = ROWS + 8;          // [k][row]
        if (ALIGNED) {
            constexpr int CH = ROWS * BK / 4;
#pragma unroll
            for (int e0 = 0; e0 < CH; e0 += THREADS) {
                const int e = e0 + tid;
                if (CH % THREADS == 0 || e < CH) {
                    const int p = e / (ROWS / 4), r = (e % (ROWS / 4)) * 4;
                    const int gr = r0 + r, gk = k0 + p;
                    int bytes = (gk < KK) ? 4 * (R - gr) : 0;
                    bytes = bytes < 0 ? 0 : (bytes > 16 ? 16 : bytes);
                    const float* src = bytes > 0 ? X + (long long)gk * ld + gr : X;
                    copy_chunk(sbase + 4u * (p * LDS + r), src, bytes);
                }
            }
        } else {
            constexpr int EL = ROWS * BK;
#pragma unroll 4
            for (int e0 = 0; e0 < EL; e0 += THREADS) {
                const int e = e0 + tid;
                if (EL % THREADS == 0 || e < EL) {
                    const int p = e / ROWS, r = e % ROWS;
                    const int gr = r0 + r, gk = k0 + p;
                    const bool in = gr < R && gk < KK;
                    cp_async4(sbase + 4u * (p * LDS + r),
                              in ? X + (long long)gk * ld + gr : X, in ? 4 : 0);
                }
            }
        }
    }
}

// Element (r, p) of a staged tile (row r of the tile, depth p).
template <int ROWS, int BK, bool KCONT>
__device__ __forceinline__ float at(const float* s, int r, int p) {
    return KCONT ? s[r * (BK + 4) + p] : s[p * (ROWS + 8) + r];
}

template <bool X3, int BM, int BN, int BK, int WM, int WN, int STAGES,
          bool TA, bool TB, bool ALIGNED>
__device__ __forceinline__ void body(SGEMM_PARAMS) {
    constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    constexpr int MI = WM / 16, NI = WN / 8;   // mma tiles per warp
    constexpr int A_FL = tile_floats(BM, BK), B_FL = tile_floats(BN, BK);
    constexpr bool AK = TA, BKC = !TB;         // operand contiguous along k?
    static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the block tile");
    static_assert(WM % 16 == 0 && WN % 8 == 0, "warp tile must be a multiple of 16 x 8");
    static_assert(BK % 8 == 0, "BK must be a multiple of the MMA depth 8");
    static_assert(BM % 4 == 0 && BN % 4 == 0 && BK % 4 == 0, "16-byte chunks");

    extern __shared__ __align__(16) float smem[];
    SGEMM_BATCH_OFFSET();

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm = (warp % WARPS_M) * WM, wn = (warp / WARPS_M) * WN;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int KT = (K + BK - 1) / BK;

    auto a_stage = [&](int s) { return smem + s * (A_FL + B_FL); };
    auto b_stage = [&](int s) { return smem + s * (A_FL + B_FL) + A_FL; };
    auto load = [&](int kt) {
        if (kt < KT) {
            const int s = kt % STAGES;
            // A tile: rows = m.  B tile: rows = n.
            load_tile<BM, BK, THREADS, AK, ALIGNED>(a_stage(s), A, lda, m0, kt * BK, M, K, tid);
            load_tile<BN, BK, THREADS, BKC, ALIGNED>(b_stage(s), B, ldb, n0, kt * BK, N, K, tid);
        }
        cp_async_commit();
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
    bool bad = false;

    // ---- prologue: STAGES-1 tiles in flight --------------------------------
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) load(s);

    // ---- main loop ---------------------------------------------------------
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();            // tile kt visible; stage of kt-1 free
        load(kt + STAGES - 1);
        const float* As = a_stage(kt % STAGES);
        const float* Bs = b_stage(kt % STAGES);
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            tc::u32 ab[MI][4], as[MI][4], bb[NI][2], bs[NI][2];
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int r = wm + i * 16 + g;
                const float v[4] = {at<BM, BK, AK>(As, r, kk + t), at<BM, BK, AK>(As, r + 8, kk + t),
                                    at<BM, BK, AK>(As, r, kk + t + 4),
                                    at<BM, BK, AK>(As, r + 8, kk + t + 4)};
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    float hi, lo;
                    tc::split<X3>(v[q], hi, lo, bad);
                    ab[i][q] = __float_as_uint(hi);
                    as[i][q] = __float_as_uint(lo);
                }
            }
#pragma unroll
            for (int j = 0; j < NI; ++j) {
                const int c = wn + j * 8 + g;
                const float v[2] = {at<BN, BK, BKC>(Bs, c, kk + t), at<BN, BK, BKC>(Bs, c, kk + t + 4)};
#pragma unroll
                for (int q = 0; q < 2; ++q) {
                    float hi, lo;
                    tc::split<X3>(v[q], hi, lo, bad);
                    bb[j][q] = __float_as_uint(hi);
                    bs[j][q] = __float_as_uint(lo);
                }
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) {
                    if (X3) {
                        // The tensor cores truncate when they accumulate; over
                        // the whole k loop that bias grows like K (1.2e-4
                        // relative at K = 16384).  Sum the three products of
                        // this k8 step from zero and add them with an FP32
                        // (round-to-nearest) FADD instead.
                        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                        mma_tf32(part, as[i], bb[j]);
                        mma_tf32(part, ab[i], bs[j]);
                        mma_tf32(part, ab[i], bb[j]);
#pragma unroll
                        for (int q = 0; q < 4; ++q) acc[i][j][q] += part[q];
                    } else {
                        mma_tf32(acc[i][j], ab[i], bb[j]);
                    }
                }
        }
    }
    cp_async_wait<0>();

    // ---- epilogue ----------------------------------------------------------
    if (X3 && __syncthreads_or(bad)) {
        tc::ffma_tile<TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, SGEMM_EPI, m0, n0,
                              BM, BN, tid, THREADS);
        return;
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int r = m0 + wm + i * 16 + g + (q >= 2 ? 8 : 0);
                const int c = n0 + wn + j * 8 + 2 * t + (q & 1);
                if (r < M && c < N)
                    sg::store_c(C, (long long)c * ldc + r, acc[i][j][q], alpha, beta);
            }
    if (!epi) return;      // the epilogue in a rolled second pass (common.cuh, epi_pass4)
#pragma unroll 1
    for (int i = 0; i < MI; ++i)
#pragma unroll 1
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int r = m0 + wm + i * 16 + g + (q >= 2 ? 8 : 0);
                const int c = n0 + wn + j * 8 + 2 * t + (q & 1);
                if (r < M && c < N) sg::epi_at(C + (long long)c * ldc + r, SGEMM_EPI, r, c);
            }
}

}  // namespace tc20

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_tf32x3_mma(SGEMM_PARAMS) {
    tc20::body<true, BM, BN, BK, WM, WN, STAGES, TA, TB, ALIGNED>(
        SGEMM_ARGS);
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_tf32_mma(SGEMM_PARAMS) {
    tc20::body<false, BM, BN, BK, WM, WN, STAGES, TA, TB, ALIGNED>(
        SGEMM_ARGS);
}
