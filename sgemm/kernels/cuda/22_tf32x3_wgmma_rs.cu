// 22 -- 3xTF32 with Hopper wgmma, A from registers (RS form).  sm_90a only.
//
// Kernel: sgemm_tf32x3_wgmma_rs<BM, BN, STAGES, PIPE, THREADS, SWZ, TA, TB, ALIGNED>,
// BK = 32, THREADS = 128 * (2 + BM/64).
//
// What it changes against 21_tf32x3_wgmma.cu: the shared-memory data path was
// saturated there (ncu: L1/shared at ~89 % of peak, the producers' 16-byte
// stores taking 9.7 wavefronts instead of 4; docs/notes/tensorcore.md).
// Per 128 x 128 x 32 block k-tile the SS wgmmas read 144 KB
// (each consumer reads A big twice, A small once, B big twice, B small once)
// and the producers write 64 KB.  Here A never goes through a wgmma
// descriptor:
//   warpgroup 0 -- A producer.  Copies the raw BM x 32 tile of op(A) with
//     cp.async (no registers, no split, no compare) and signals full[stage]
//     with cp.async.mbarrier.arrive.noinc when its copies land.
//   warpgroup 1 -- B producer.  As in 21: loads the BN x 32 tile of op(B)
//     into registers (double-buffered), splits every element once, stores big
//     and small as K-major 128B-swizzled tiles, flags Inf/NaN/huge.
//   warpgroups 2.. -- consumers, 64 rows of C each.  Per k-tile a consumer
//     reads its 64 x 32 slice of raw A from shared memory in the wgmma A
//     fragment layout (4 registers per k8 step), splits it in registers
//     (tc::split, so it also flags Inf/NaN/huge rows of A itself), and issues
//     small_A*big_B, big_A*small_B, big_A*big_B as
//     wgmma.mma_async.m64nNk8.f32.tf32.tf32 with A in registers and B from a
//     shared-memory descriptor -- the same products in the same order as 21,
//     so the accumulation (and the accuracy) is the same.
// Shared-memory bytes per block k-tile (128 x 128): wgmma reads 96 KB (B
// only), consumers' A loads 16 KB, A copies 16 KB, B stores 32 KB: 160 KB
// instead of 208 KB; a stage is 48 KB instead of 64 KB, so 4 stages fit.
//
// A fragment (PTX ISA, "Register fragments", wgmma .m64nNk8 .tf32 A): warp w
// of the warpgroup holds rows 16w..16w+15 of the 64 x 8 slice; lane (g, t)
// (g = lane/4, t = lane%4) holds a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4),
// a3 = (g+8, t+4).  That is the m16n8k8 .tf32 A fragment, so:
//   TA = true (A contiguous along k): the raw tile is K-major with the same
//     128B swizzle as the B tiles (row = m, 16-byte chunk c at c ^ (m & 7)),
//     and one ldmatrix.x4 (b16 pairs = one 32-bit element) per k8 step loads
//     a0..a3: matrix i = rows (i&1)*8.., chunk 2j + (i>>1).  Each 8-row
//     matrix covers the 8 chunk positions of its rows: conflict-free.
//   TA = false (A contiguous along m): the raw tile is M-major (32 rows of k,
//     BM floats each) so cp.async copies global rows as they are; 16-byte
//     chunk c of k-row k sits at c ^ 2(k & 3).  A fragment element is one
//     ld.shared.b32; a warp's 32 lanes hit rows k = t (+ const) and 8
//     consecutive m, and the XOR puts the four k rows on four different
//     chunk pairs: 32 banks, conflict-free (without the XOR 4-way).
//
// Registers handed to an RS wgmma must not change until it completes: the
// split fragments live in arrays that are rewritten only after the k-tile's
// wgmma.wait_group 0 (promotion needs that wait anyway, so this form has no
// PROMO parameter: it is 1, as in both registered configs of 21).
//
// Measured (H200, cuBLAS FP32 in the same process;
// bench/results/tf32x3-rs-final-h200-2026-11-22.json, reproduce: python
// scripts/tc_check.py), large (PIPE 2): 3 s back-to-back loops, NN, 103.8
// TFLOPS at 4096^3 (2.04x cuBLAS SGEMM) and 105.1 at 8192^3 (2.05x), where 21
// sustains about 94 (docs/notes/tensorcore.md); short timing loops reach
// 2.05-2.33x, NN and TN. Every tf32x3 loop runs at the board's 700 W cap (SM
// clock ~1710-1760 MHz against cuBLAS FP32's 1980), so the gain is work per
// joule, not clock. Accuracy: every number of 21's table reproduced to three
// digits (PIPE 3 and 1 measured; all PIPEs issue the same products in the
// same order); Inf/NaN pattern as cuBLAS FP32.
//
// Register budget (setmaxnreg): 512 threads start with 128 registers each.
// The A producer keeps no tile in registers (24: its copies step one pointer),
// the B producer is 21's (104), and each consumer holds acc + part (BN
// registers), 32 fragment registers (big and small of 4 k8 steps) and, with
// PIPE >= 3, 16 of the next tile: 192.  24 + 104 + 2 * 192 = 4 * 128.
// BM = 64 (384 threads, 168 each at launch): 24 + 104 + 232 <= 3 * 168.
#include "21_tf32x3_wgmma.cu"

namespace tc22 {

using tc::u32;
using tc::u64;
using tc21::BK;
using tc21::ROW_BYTES;
using tc21::smem_u32;

// ---- wgmma with A from registers ------------------------------------------------
// D(64 x N) += A(64 x 8, four .b32 registers per thread) * B(8 x N, smem desc).
template <int SCALE_D>
__device__ __forceinline__ void wgmma_rs_m64n64k8(float (&d)[32], const float (&a)[4], u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(db), "n"(SCALE_D));
}

template <int SCALE_D>
__device__ __forceinline__ void wgmma_rs_m64n128k8(float (&d)[64], const float (&a)[4], u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(db), "n"(SCALE_D));
}

template <int N, int SCALE_D = 1>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const float (&a)[4], u64 db) {
    if constexpr (N == 64) wgmma_rs_m64n64k8<SCALE_D>(d, a, db);
    else wgmma_rs_m64n128k8<SCALE_D>(d, a, db);
}

// Pin fragment registers across a wgmma wait: an asm that "modifies" them
// after the wait keeps the compiler from reusing their registers for anything
// else while the asynchronous wgmmas may still read them.
__device__ __forceinline__ void fence_frag(float (&f)[4][4]) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) asm volatile("" : "+f"(f[j][q]) :: "memory");
}

// ---- A producer: raw tile by cp.async ---------------------------------------------
// src_bytes < 16 zero-fills the rest of the 16 bytes (edges); src_bytes = 0
// reads nothing (the pointer is then the operand's base, always valid).
__device__ __forceinline__ void cp_async16(u32 dst, const float* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(u32 dst, const float* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// The barrier's phase completes only when this thread's earlier cp.asyncs
// have landed (.noinc: counted in the barrier's init count, no extra arrive).
__device__ __forceinline__ void cp_async_arrive(u32 bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(bar) : "memory");
}

// One BM x 32 tile of op(A) (rows m0.., k k0..) into `dst` (layouts: header).
// KCONT (TA = true): op(A)(m, k) = A[m*lda + k]; else A[k*lda + m].  Each
// thread copies one fixed 16-byte column chunk of BM/16 rows of the tile, so
// its source pointer only steps by a row per copy.
template <int BM, bool KCONT, bool ALIGNED>
__device__ __forceinline__ void copy_a(u32 dst, const float* __restrict__ A, long long lda,
                                       int m0, int k0, int M, int K, int tid) {
    // chunks per tile row: 8 (4 k each) K-major, BM/4 (4 m each) M-major; a
    // warp copies whole rows: 4 rows of 128 bytes, or one k-row of 512 bytes.
    constexpr int CPR = KCONT ? 8 : BM / 4, STEP = 128 / CPR;
    const int c = tid % CPR, r0 = tid / CPR;
    // KCONT: tile row = m, column = k; else tile row = k, column = m
    const int col = (KCONT ? k0 : m0) + 4 * c, row_end = KCONT ? M : K;
    const int col_left = (KCONT ? K : M) - col;           // valid floats from col on
    const float* p = A + (long long)((KCONT ? m0 : k0) + r0) * lda + col;
#pragma unroll
    for (int i = 0; i < BM / 16; ++i, p += STEP * lda) {
        const int r = r0 + STEP * i;                        // tile row
        const u32 d = dst + r * (KCONT ? ROW_BYTES : BM * 4) +
                      ((c ^ (KCONT ? (r & 7) : 2 * (r & 3))) << 4);
        const bool row_ok = (KCONT ? m0 : k0) + r < row_end;
        if (ALIGNED) {
            const int n = row_ok ? 4 * max(0, min(4, col_left)) : 0;
            cp_async16(d, n ? p : A, n);
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const bool ok = row_ok && e < col_left;
                cp_async4(d + 4 * e, ok ? p + e : A, ok ? 4 : 0);
            }
        }
    }
}

// ---- consumer: A fragments from the raw tile ------------------------------------
// x[j][q]: register q (a0..a3) of k8 step j for this lane; rows row0.. of the
// tile (row0 = 64 * consumer + 16 * warp).
template <int BM, bool KCONT>
__device__ __forceinline__ void load_a_frags(u32 tile, int row0, int lane, float (&x)[4][4]) {
    if constexpr (KCONT) {
        const int i = lane / 8, r = lane % 8;
        const u32 row = tile + (row0 + (i & 1) * 8 + r) * ROW_BYTES;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const u32 addr = row + (((2 * j + (i >> 1)) ^ r) << 4);
            u32 v0, v1, v2, v3;
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(addr) : "memory");
            x[j][0] = __uint_as_float(v0);
            x[j][1] = __uint_as_float(v1);
            x[j][2] = __uint_as_float(v2);
            x[j][3] = __uint_as_float(v3);
        }
    } else {
        const int g = lane / 4, t = lane % 4;
        // element (m, k), k & 3 = t: word k*BM + ((m/4 ^ 2t) * 4 + m % 4)
        const int m_lo = row0 + g, m_hi = m_lo + 8;
        const u32 base = tile + 4 * (t * BM);
        const u32 col_lo = 4 * ((((m_lo >> 2) ^ (2 * t)) << 2) | (m_lo & 3));
        const u32 col_hi = 4 * ((((m_hi >> 2) ^ (2 * t)) << 2) | (m_hi & 3));
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const u32 addr = base + 4 * BM * (8 * j + 4 * (q >> 1)) + ((q & 1) ? col_hi : col_lo);
                float v;
                asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
                x[j][q] = v;
            }
    }
}

// Named barrier of one consumer warpgroup (ids 1, 2; 0 is __syncthreads).  An
// immediate id lets ptxas reserve only the barriers used.
__device__ __forceinline__ void wg_sync(int cw) {
    if (cw == 0) asm volatile("bar.sync 1, 128;\n" ::: "memory");
    else asm volatile("bar.sync 2, 128;\n" ::: "memory");
}

// One consumer warpgroup: rows cw*64.. of the block tile.  a0/b_big0/b_small0:
// stage 0's tile addresses, stage s at + s * stage_bytes.
// PIPE: how the k-tile's fragment work meets its wgmmas.  Between the wait
// for tile kt's wgmmas and the issue of tile kt+1's, only this warpgroup's
// other work can run; the tensor cores stay busy there only if the other
// consumer's wgmmas are in flight.
//   1: load the 16 A values, split all of them, then issue the 12 wgmmas.
//   2: split k8 step j just before the first wgmma that reads it (a
//      wgmma.fence after each write), so the tensor cores start after one
//      step's split instead of four.
//   3: as 2, and tile kt+1's raw A is loaded (after its full barrier) while
//      tile kt's wgmmas run: 16 more registers, no shared-memory latency
//      between the wait and the next issue.
//   4: as 1 (one wgmma.fence per k-tile), with 3's early load of tile kt+1.
// On the H200 all four sustained within 1-2 % of each other at the power cap
// (docs/notes/tensorcore.md); large uses 2, the best of them in both sustained
// runs.
template <int BM, int BN, int STAGES, int PIPE, bool TA, bool TB>
__device__ __forceinline__ void consume(int M, int N, int K, float alpha,
                                        const float* __restrict__ A, long long lda,
                                        const float* __restrict__ B, long long ldb, float beta,
                                        float* __restrict__ C, long long ldc, sg::Epi ep,
                                        int KT, int cw,
                                        int m0, int n0, int wtid, u32 a0, u32 b_big0,
                                        u32 b_small0, u32 stage_bytes, const u64* full_bar,
                                        const u64* empty_bar, const int* b_bad, int* a_bad) {
    static_assert(PIPE >= 1 && PIPE <= 4, "PIPE: 1..4");
    constexpr bool EARLY = PIPE >= 3;                 // next tile's A loaded early
    float acc[BN / 2], part[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = part[i] = 0.0f;
    tc21::fence_acc(acc);
    tc21::fence_acc(part);
    const int lane = wtid % 32, row0 = cw * 64 + (wtid / 32) * 16;
    bool bad = false;
    float nx[4][4];                                   // EARLY: next tile's raw A
    if (EARLY && KT > 0) {
        tc21::mbar_wait(smem_u32(&full_bar[0]), 0);
        load_a_frags<BM, TA>(a0, row0, lane, nx);
    }

    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        const u32 so = s * stage_bytes;
        float hi[4][4], lo[4][4];
        if constexpr (EARLY) {
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int q = 0; q < 4; ++q) hi[j][q] = nx[j][q];
        } else {
            tc21::mbar_wait(smem_u32(&full_bar[s]), (kt / STAGES) & 1);
            load_a_frags<BM, TA>(a0 + so, row0, lane, hi);
        }
        const u64 dbb = tc21::make_desc(b_big0 + so);
        const u64 dbs = tc21::make_desc(b_small0 + so);
        // 21's order: the 8 small products first (while `part` is small, so are
        // its truncation errors), big*big last; `part` restarts from zero
        // (scale-d = 0) every k-tile.  k8 step j: +32 bytes = +2 in a descriptor.
        if constexpr (PIPE == 1 || PIPE == 4) {
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int q = 0; q < 4; ++q) tc::split<true>(hi[j][q], hi[j][q], lo[j][q], bad);
            tc21::wgmma_fence();
            wgmma_rs<BN, 0>(part, lo[0], dbb);
#pragma unroll
            for (int j = 1; j < 4; ++j) wgmma_rs<BN>(part, lo[j], dbb + 2 * j);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
#pragma unroll
                for (int q = 0; q < 4; ++q) tc::split<true>(hi[j][q], hi[j][q], lo[j][q], bad);
                tc21::wgmma_fence();       // the registers just written feed the next wgmma
                if (j == 0) wgmma_rs<BN, 0>(part, lo[0], dbb);
                else wgmma_rs<BN>(part, lo[j], dbb + 2 * j);
            }
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) wgmma_rs<BN>(part, hi[j], dbs + 2 * j);
#pragma unroll
        for (int j = 0; j < 4; ++j) wgmma_rs<BN>(part, hi[j], dbb + 2 * j);
        tc21::wgmma_commit();
        if (EARLY && kt + 1 < KT) {
            const int s1 = (kt + 1) % STAGES;
            tc21::mbar_wait(smem_u32(&full_bar[s1]), ((kt + 1) / STAGES) & 1);
            load_a_frags<BM, TA>(a0 + s1 * stage_bytes, row0, lane, nx);
        }
        tc21::wgmma_wait<0>();
        tc21::fence_acc(part);
        fence_frag(hi);
        fence_frag(lo);
        // Every consumer thread arrives (empty count 128 per consumer warpgroup),
        // not lane 0 of each warp as in 21: here all 32 lanes read raw A from
        // stage s with generic-proxy loads (ldmatrix / ld.shared), and one
        // lane's release does not order the other lanes' reads before the A
        // producer's cp.asyncs of tile kt + STAGES into the same stage.  A
        // __syncwarp() before a lane-0 arrive would order them too, but ptxas
        // turns it into a NOP and racecheck still reports the WAR
        // (docs/notes/tensorcore.md, "2026-11-22: racecheck on the RS kernel").
        tc21::mbar_arrive(smem_u32(&empty_bar[s]));
        // promotion: round-to-nearest FADDs (the tensor cores truncate)
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] += part[i];
    }

    // A row of this warpgroup or a column of B held Inf/NaN/huge: the whole
    // warpgroup recomputes its rows with FFMA, so all 128 threads must agree.
    if (bad) *(volatile int*)&a_bad[cw] = 1;
    wg_sync(cw);
    const bool ffma = *(const volatile int*)b_bad || *(const volatile int*)&a_bad[cw];
    tc21::store_tile<BN, TA, TB>(acc, ffma, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep,
                                 m0 + cw * 64, n0, wtid);
}

template <int BM, int BN, int STAGES, int PIPE, int SWZ, bool TA, bool TB, bool ALIGNED>
__device__ __forceinline__ void body(SGEMM_PARAMS) {
    constexpr int CW = BM / 64;                       // consumer warpgroups
    constexpr int A_BYTES = BM * BK * 4, B_BYTES = BN * ROW_BYTES;
    constexpr int STAGE_BYTES = A_BYTES + 2 * B_BYTES;   // [A raw][B big][B small]
    static_assert(BM == 64 || BM == 128, "BM: one or two consumer warpgroups");
    static_assert(BN == 64 || BN == 128, "BN: acc + part = BN registers, <= 128");
    static_assert(STAGES >= 2, "STAGES");
    static_assert(SWZ >= 1, "SWZ: m-tiles per raster group");
    // setmaxnreg budget (header): the block starts with R0 registers per thread.
    constexpr int W = 2 + CW, R0 = (65536 / (128 * W)) / 8 * 8;
    constexpr int P_A = 24, P_B = 104, C_REGS = CW == 2 ? 192 : 232;
    static_assert(P_A + P_B + CW * C_REGS <= W * R0, "register pool");

    extern __shared__ __align__(1024) unsigned char dsmem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    __shared__ int b_bad, a_bad[CW];
    SGEMM_BATCH_OFFSET();

    const int tid = threadIdx.x, wg = tid / 128, wtid = tid % 128;
    int bm, bn;
    tc21::raster<SWZ>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    const int KT = (K + BK - 1) / BK;
    const u32 base = (smem_u32(dsmem) + 1023u) & ~1023u;   // swizzle atoms: 1024 B
    auto a_raw = [&](int s) { return base + s * STAGE_BYTES; };
    auto b_big = [&](int s) { return base + s * STAGE_BYTES + A_BYTES; };
    auto b_small = [&](int s) { return base + s * STAGE_BYTES + A_BYTES + B_BYTES; };

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            // 128 async arrivals (A copies landed) + 128 B producer threads
            tc21::mbar_init(smem_u32(&full_bar[s]), 256);
            tc21::mbar_init(smem_u32(&empty_bar[s]), 128 * CW);  // every consumer thread
        }
        b_bad = 0;
        for (int c = 0; c < CW; ++c) a_bad[c] = 0;
    }
    __syncthreads();

    if (wg == 0) {
        // ---------------- A producer: cp.async, nothing in registers ----------------
        tc21::setmaxnreg_dec<P_A>();
        for (int kt = 0; kt < KT; ++kt) {
            const int s = kt % STAGES;
            tc21::mbar_wait(smem_u32(&empty_bar[s]), ((kt / STAGES) & 1) ^ 1);
            copy_a<BM, TA, ALIGNED>(a_raw(s), A, lda, m0, kt * BK, M, K, wtid);
            cp_async_arrive(smem_u32(&full_bar[s]));
        }
        // Drain before exiting (the barrier arrivals are tied to the copies).
        asm volatile("cp.async.wait_all;\n" ::: "memory");
    } else if (wg == 1) {
        // ---------------- B producer: 21's loader, split, swizzled stores ----------------
        tc21::setmaxnreg_dec<P_B>();
        using LB = tc21::TileLoader<BN, !TB, ALIGNED>;
        bool bad = false;
        LB l0, l1;
        tc21::produce_db<STAGES>(
            KT, l0, l1,
            [&](LB& l, int k0) { l.load(B, ldb, n0, k0, N, K, wtid); },
            [&](const LB& l, int s) {
                l.template store<true>(b_big(s), b_small(s), wtid, bad);
                if (bad) *(volatile int*)&b_bad = 1;   // before the arrive
            },
            full_bar, empty_bar);
    } else {
        tc21::setmaxnreg_inc<C_REGS>();
        consume<BM, BN, STAGES, PIPE, TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                              SGEMM_EPI, KT, wg - 2, m0, n0, wtid, a_raw(0),
                                              b_big(0), b_small(0), STAGE_BYTES, full_bar,
                                              empty_bar, &b_bad, a_bad);
    }
}

}  // namespace tc22

// PIPE: consumer schedule (tc22::consume).  THREADS = 128 * (2 + BM/64):
// A producer, B producer, BM/64 consumers.  SWZ: m-tiles per raster group
// (1: plain blockIdx order).
template <int BM, int BN, int STAGES, int PIPE, int THREADS, int SWZ, bool TA, bool TB,
          bool ALIGNED>
__global__ void __launch_bounds__(THREADS, 1)
sgemm_tf32x3_wgmma_rs(SGEMM_PARAMS) {
    static_assert(THREADS == 128 * (2 + BM / 64), "THREADS = 128 * (2 + BM/64)");
    tc22::body<BM, BN, STAGES, PIPE, SWZ, TA, TB, ALIGNED>(SGEMM_ARGS);
}
