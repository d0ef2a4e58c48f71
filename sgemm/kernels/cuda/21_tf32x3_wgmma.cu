// 21 -- 3xTF32 (and 1xTF32) with Hopper wgmma, warp-specialized.  sm_90a only.
//
// Kernels: sgemm_tf32x3_wgmma (precision "tf32x3", template <BM, BN, STAGES,
// PROMO, THREADS, SWZ, TA, TB, ALIGNED>) and sgemm_tf32_wgmma (precision
// "tf32", template <BM, BN, STAGES, TA, TB, ALIGNED>); BK = 32.
//
// Roles (384 threads for BM = 128, 256 for BM = 64; tf32x3 BM = 128 may take
// 512: two producer warpgroups, one per operand, see body()):
//   warpgroup 0 -- producer.  Loads the BM x 32 tile of op(A) and the BN x 32
//     tile of op(B) from global memory into registers (ld.global, 16-byte when
//     the operand is contiguous along k and ALIGNED, else 4-byte; out-of-range
//     elements read as 0), splits every element ONCE into big = tf32(x) and
//     small = tf32(x - big) (tc::split), and stores big and small into
//     K-major, 128B-swizzled shared-memory tiles (row r = one m or n index,
//     128 bytes = 32 TF32 of k; 16-byte chunk c of row r lives at chunk
//     c ^ (r & 7), the layout wgmma's 128B swizzle mode reads).  Then
//     fence.proxy.async (generic-proxy stores -> async-proxy reads) and an
//     mbarrier arrive on full[stage].  When two tiles fit in its registers
//     (BM + BN <= 256) tile kt+1's loads are in flight while tile kt is split
//     and stored, so global latency overlaps the producer's own work too.
//   warpgroups PW..PW+BM/64-1 -- consumers.  Each owns 64 rows of the C tile and
//     issues, per k8 step, wgmma.mma_async m64nBNk8 .tf32 with both operands
//     from shared memory through descriptors (small*big, big*small, big*big
//     for tf32x3; big*big for tf32), FP32 accumulators in registers.
//     tf32x3 sums each group of PROMO k-tiles in a zero-started partial
//     accumulator and adds it to the running one with FP32 FADDs (see the
//     consumer loop: the tensor cores truncate when they accumulate), so it
//     holds BN registers per thread and BN <= 128; PROMO = 1 in both configs.  tf32 keeps one k-tile of wgmmas in flight
//     (wait_group 1) with BN/2 accumulator registers.
//
// Why a register producer and not TMA: 32-bit wgmma needs K-major operands in
// shared memory, and the split has to touch every element anyway.  Staging
// through registers does the split, the zero-filled edges, any alignment and
// the transpose of M-/N-contiguous operands in one pass, with no tensor maps
// and no raw staging buffer (TMA would add a raw copy of every stage and a
// second pass over shared memory).  Cost per layout:
//   K-contiguous operand (A with TA=true, B with TB=false): 16-byte loads
//     (ALIGNED) -> one swizzled 16-byte store per chunk for big and small.
//   M/N-contiguous operand (A with TA=false, B with TB=true): 4-byte loads,
//     coalesced across the warp (a warp reads 32 consecutive m or n), each
//     thread gathers a whole 32-deep row and writes it as 8 swizzled 16-byte
//     chunks: 4x the load instructions, same shared-memory traffic, no bank
//     conflicts (the XOR spreads a warp's 32 rows over all banks).
//
// Inf/NaN: the producer ORs tc::unsplittable over its elements into a shared
// flag; a block that saw one recomputes its tile with FFMA (tc_common.cuh).
// Edges: zero-filled loads, guarded C stores.  Batch via blockIdx.z.
// Measured (H200, NN, cuBLAS SGEMM in the same process; python
// scripts/tc_check.py, runs in docs/notes/tensorcore.md): tf32x3 128x128 with
// two producers and raster groups of 8: 102.3-106.0 TFLOPS at 4096^3
// (1.99-2.20x cuBLAS SGEMM), 92.9-95.2 at 8192^3 (1.83-1.87x); with one
// producer and cvt.rna splits: 81.6 / 78.0.  tf32 128x256: 133-166 TFLOPS at
// 4096^3 depending on layout.
// On sm_90 precision="tf32x3" runs 22_tf32x3_wgmma_rs.cu (A split in
// registers, shared-memory traffic cut by a quarter), which sustains more;
// this kernel stays the reference it is measured against and serves 1xTF32.
// SASS: HGMMA.64x128x8.F32.TF32 / HGMMA.64x256x8.F32.TF32, no local memory.
#include "tc_common.cuh"
#include "wgmma.cuh"

namespace tc21 {

using tc::u32;
using tc::u64;
using wg::smem_u32;
using wg::fence_proxy_async;
using wg::make_desc;
using wg::wgmma_fence;
using wg::wgmma_commit;
using wg::wgmma_wait;
using wg::fence_acc;

constexpr int BK = 32;          // k per stage: one 128-byte row per m/n index
constexpr int ROW_BYTES = 128;

// ---- mbarrier -----------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    u32 done;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// ---- wgmma ----------------------------------------------------------------------

// D(64 x N) += A(64 x 8, smem desc) * B(8 x N, smem desc), TF32 in, FP32 acc.
template <int SCALE_D>
__device__ __forceinline__ void wgmma_m64n64k8(float (&d)[32], u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "n"(SCALE_D));
}

template <int SCALE_D>
__device__ __forceinline__ void wgmma_m64n128k8(float (&d)[64], u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "n"(SCALE_D));
}

template <int SCALE_D>
__device__ __forceinline__ void wgmma_m64n256k8(float (&d)[128], u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "n"(SCALE_D));
}

// SCALE_D = 0: D = A*B (the accumulator's old contents are ignored).
template <int N, int SCALE_D = 1>
__device__ __forceinline__ void wgmma_tf32(float (&d)[N / 2], u64 da, u64 db) {
    if constexpr (N == 64) wgmma_m64n64k8<SCALE_D>(d, da, db);
    else if constexpr (N == 128) wgmma_m64n128k8<SCALE_D>(d, da, db);
    else wgmma_m64n256k8<SCALE_D>(d, da, db);
}

// ---- producer: one operand tile, R rows x 32 k, held in registers -------------
// Interior loads are volatile asm so that the compiler keeps them where they
// are written: the producer issues tile kt+1's loads before storing tile kt,
// and a compiler free to sink them next to their use would serialize the two.
__device__ __forceinline__ void ldg4(float& a, float& b, float& c, float& d, const float* p) {
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(p));
}
__device__ __forceinline__ void ldg1(float& a, const float* p) {
    asm volatile("ld.global.nc.f32 %0, [%1];\n" : "=f"(a) : "l"(p));
}

// KCONT: element (r, p) of the operand is X[r*ld + p] (contiguous along k);
// otherwise X[p*ld + r] (contiguous along rows).
template <int R, bool KCONT, bool ALIGNED>
struct TileLoader {
    static_assert(R % 64 == 0, "rows must be a multiple of 64");
    // K-contiguous: 8 chunks of 4 k per row; thread takes chunk tid%8 of rows
    // tid/8 + 16 i.  Row-contiguous: thread takes row tid % min(R,128) (+128 i)
    // and KPT consecutive k of it.
    static constexpr int NV = R / 4;                 // floats per thread
    static constexpr int RPT = R >= 128 ? R / 128 : 1;
    static constexpr int KPT = R >= 128 ? 32 : 32 * R / 128;
    float v[NV];

    __device__ __forceinline__ void load(const float* __restrict__ X, long long ld, int r0,
                                         int k0, int Rv, int Kv, int tid) {
        // Interior tiles (all but the last row/column of blocks and the last
        // k-tile) take a branch-free path: every load goes straight into its
        // own register and all of them are in flight at once.  (A per-chunk
        // vector-or-scalar branch made ptxas funnel loads through one
        // register quadruple, serializing them; tf32 128x256 ran at 35 TFLOPS.)
        const bool interior = (r0 + R <= Rv) && (k0 + BK <= Kv);
        if (KCONT) {
            const int c = (tid % 8) * 4;
            const float* p0 = X + (long long)(r0 + tid / 8) * ld + k0 + c;
            if (interior) {
#pragma unroll
                for (int i = 0; i < R / 16; ++i) {
                    const float* p = p0 + (long long)(16 * i) * ld;
                    if (ALIGNED) {
                        ldg4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3], p);
                    } else {
#pragma unroll
                        for (int j = 0; j < 4; ++j) ldg1(v[4 * i + j], p + j);
                    }
                }
            } else {
#pragma unroll
                for (int i = 0; i < R / 16; ++i) {
                    const int r = r0 + tid / 8 + 16 * i, k = k0 + c;
                    const float* p = p0 + (long long)(16 * i) * ld;
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        v[4 * i + j] = (r < Rv && k + j < Kv) ? __ldg(p + j) : 0.0f;
                }
            }
        } else {
            const int r = r0 + tid % (R < 128 ? R : 128);
            const int kb = k0 + (R < 128 ? (tid / R) * KPT : 0);
            const float* p0 = X + (long long)kb * ld + r;
            if (interior) {
#pragma unroll
                for (int i = 0; i < RPT; ++i)
#pragma unroll
                    for (int kk = 0; kk < KPT; ++kk)
                        ldg1(v[i * KPT + kk], p0 + (long long)kk * ld + 128 * i);
            } else {
#pragma unroll
                for (int i = 0; i < RPT; ++i)
#pragma unroll
                    for (int kk = 0; kk < KPT; ++kk) {
                        const int rr = r + 128 * i, k = kb + kk;
                        v[i * KPT + kk] =
                            (rr < Rv && k < Kv) ? __ldg(p0 + (long long)kk * ld + 128 * i) : 0.0f;
                    }
            }
        }
    }

    // Split and store into the swizzled K-major tiles `big` / `small` (shared
    // addresses).  X3 == false stores big only.
    template <bool X3>
    __device__ __forceinline__ void store(u32 big, u32 small, int tid, bool& bad) const {
#pragma unroll
        for (int q = 0; q < NV / 4; ++q) {
            int r, c;
            if (KCONT) {
                r = tid / 8 + 16 * q;
                c = tid % 8;
            } else {
                const int i = q / (KPT / 4), cc = q % (KPT / 4);
                r = tid % (R < 128 ? R : 128) + 128 * i;
                c = (R < 128 ? (tid / R) * (KPT / 4) : 0) + cc;
            }
            const u32 off = r * ROW_BYTES + ((c ^ (r & 7)) << 4);
            float h[4], l[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) tc::split<X3>(v[4 * q + j], h[j], l[j], bad);
            asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n"
                         :: "r"(big + off), "f"(h[0]), "f"(h[1]), "f"(h[2]), "f"(h[3]) : "memory");
            if (X3)
                asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n"
                             :: "r"(small + off), "f"(l[0]), "f"(l[1]), "f"(l[2]), "f"(l[3])
                             : "memory");
        }
    }
};

// ---- epilogue ---------------------------------------------------------------------
// One consumer warpgroup's 64 x BN tile of C from its accumulators (the wgmma D
// fragment layout: warp w holds rows 16w..16w+15, lane (g, t) rows g and g+8,
// columns 8b + 2t and 8b + 2t + 1), or, when `ffma` (an input of this tile was
// Inf/NaN/huge), the plain FFMA recomputation of the same rows.  Also used by
// 22_tf32x3_wgmma_rs.cu.
//
// With an epilogue (store_tile_epi), bias and activation are applied in registers
// before the one store of each element.  Finished in a second pass that read C back
// instead, the tile's C went through L2 twice while nothing else ran (one block per
// SM): 10-51 us of a 2048-4096-token MLP layer on the H100.  A rolled loop over
// chunks of CB column groups (4 CB elements of the lane): the chunk's accumulators
// (NC - 1 selects each, 3 at BN = 128: a register array is indexed at compile time
// only), alpha/beta, bias, the activation (sg::activate_chunk: straight-line code for the
// one chosen, so the chunk's latency chains interleave), the stores, unguarded when
// the chunk is inside C.  Unrolled over the whole tile instead, the four
// activations' code grew the 128 x 128 kernels by ~35 %, and ptxas then allocated
// the setmaxnreg-capped producers, whose code had not changed, differently: up to
// 116 bytes of spills (RS, TT).  BN = 256 (tf32) takes CB = 2 (15 selects an
// element): its 128 accumulators stay live through the loop, and CB = 4 spilled.
// Out-of-range elements are computed too (from zero, with the bias of the nearest
// in-range index) and not stored.  r0, c0: the lane's first row and column.
template <int BN>
__device__ __forceinline__ void store_tile_epi(const float (&acc)[BN / 2], int M, int N,
                                               float alpha, float beta,
                                               float* __restrict__ C, long long ldc,
                                               sg::Epi ep, int r0, int c0) {
    constexpr int NB = BN / 8, CB = BN == 256 ? 2 : 4, NC = NB / CB;
    static_assert(NB % CB == 0, "whole chunks of column groups");
    const bool row_in[2] = {r0 < M, r0 + 8 < M};
    const int act = ep.code & sg::EPI_ACT;
#pragma unroll 1
    for (int ch = 0; ch < NC; ++ch) {
        // Element (b, q) of the chunk: row r0 + 8 (q >= 2), column
        // c + (q & 1) with c = c0 + 8 (CB ch + b), at col[b] + dq(q).
        float v[CB][4];
#pragma unroll
        for (int k = 0; k < NC; ++k)
#pragma unroll
            for (int b = 0; b < CB; ++b)
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (k == 0 || ch == k) v[b][q] = acc[4 * (CB * k + b) + q];
        const int cc = c0 + 8 * CB * ch;
        float* col[CB];
#pragma unroll
        for (int b = 0; b < CB; ++b) col[b] = C + (long long)(cc + 8 * b) * ldc + r0;
        auto dq = [&](int q) { return (q & 1) * ldc + (q >= 2 ? 8 : 0); };
#pragma unroll
        for (int b = 0; b < CB; ++b)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int c = cc + 8 * b + (q & 1);
                v[b][q] = (row_in[q >> 1] && c < N)
                    ? sg::scale_c(col[b], dq(q), v[b][q], alpha, beta) : 0.0f;
                v[b][q] = ep.add_bias(v[b][q], min(r0 + (q >= 2 ? 8 : 0), M - 1),
                                      min(c, N - 1));
            }
        sg::activate_chunk<CB>(v, act);
        if (row_in[1] && cc + 8 * (CB - 1) + 1 < N) {
#pragma unroll
            for (int b = 0; b < CB; ++b)
#pragma unroll
                for (int q = 0; q < 4; ++q) col[b][dq(q)] = v[b][q];
        } else {
#pragma unroll
            for (int b = 0; b < CB; ++b)
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (row_in[q >> 1] && cc + 8 * b + (q & 1) < N) col[b][dq(q)] = v[b][q];
        }
    }
}

template <int BN, bool TA, bool TB>
__device__ __forceinline__ void store_tile(const float (&acc)[BN / 2], bool ffma, int M, int N,
                                           int K, float alpha, const float* __restrict__ A,
                                           long long lda, const float* __restrict__ B,
                                           long long ldb, float beta, float* __restrict__ C,
                                           long long ldc, sg::Epi ep, int cm0, int n0,
                                           int wtid) {
    if (ffma) {
        tc::ffma_tile<TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep, cm0, n0, 64, BN,
                              wtid, 128);
        return;
    }
    const int warp = wtid / 32, lane = wtid % 32, g = lane / 4, t = lane % 4;
    const int r0 = cm0 + warp * 16 + g, c0 = n0 + 2 * t;
    if (ep.code) {
        store_tile_epi<BN>(acc, M, N, alpha, beta, C, ldc, ep, r0, c0);
        return;
    }
#pragma unroll
    for (int b = 0; b < BN / 8; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int r = r0 + (q >= 2 ? 8 : 0), c = c0 + b * 8 + (q & 1);
            if (r < M && c < N)
                sg::store_c(C, (long long)c * ldc + r, acc[4 * b + q], alpha, beta);
        }
}

// SWZ: block raster.  SWZ = 1: blockIdx.x is the m-tile.  SWZ = G > 1: the
// linear block id walks G m-tiles down before moving one n-tile right, so the
// ~132 blocks in flight share ~G A panels and ~132/G B panels in L2 instead
// of every A panel (at 8192^2 one wave otherwise touches all 256 MB of A).
template <int SWZ>
__device__ __forceinline__ void raster(int& bm, int& bn) {
    bm = blockIdx.x;
    bn = blockIdx.y;
    if constexpr (SWZ > 1) {
        const int gm = gridDim.x, pid = blockIdx.y * gridDim.x + blockIdx.x;
        const int per_group = SWZ * gridDim.y, first = (pid / per_group) * SWZ;
        const int gsz = min(gm - first, SWZ), r = pid % per_group;
        bm = first + r % gsz;
        bn = r / gsz;
    }
}

// ---- consumers ------------------------------------------------------------------
// tf32x3: the tensor cores' FP32 accumulation truncates, and over a long k
// loop that bias grows linearly with K (measured 1.2e-4 relative at
// K = 16384).  So each k-tile's 12 wgmmas accumulate into `part`
// (starting from zero: scale-d = 0) and `part` is added to `acc` with
// round-to-nearest FADDs -- the "promotion" of Ootomo & Yokota (and of
// DeepGEMM's FP8 path).  That needs the tile's wgmmas finished (wait 0)
// before the next tile is issued; the other consumer warpgroup keeps the
// tensor cores busy meanwhile.  tf32 (one product) keeps wait 1 and one
// accumulator set.  cw: this consumer's 64-row slice of the block tile;
// *_0: stage 0's tile addresses, stage s at + s * stage_bytes.
template <bool X3, int BM, int BN, int STAGES, int PROMO, bool TA, bool TB>
__device__ __forceinline__ void consume(int M, int N, int K, float alpha,
                                        const float* __restrict__ A, long long lda,
                                        const float* __restrict__ B, long long ldb, float beta,
                                        float* __restrict__ C, long long ldc, sg::Epi ep,
                                        int KT, int cw,
                                        int m0, int n0, int wtid, u32 a_big0, u32 a_small0,
                                        u32 b_big0, u32 b_small0, u32 stage_bytes,
                                        const u64* full_bar, const u64* empty_bar,
                                        const int* bad_flag) {
    float acc[BN / 2];
    float part[X3 ? BN / 2 : 1];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < (X3 ? BN / 2 : 1); ++i) part[i] = 0.0f;
    fence_acc(acc);
    fence_acc(part);

    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        const u32 so = s * stage_bytes;
        mbar_wait(smem_u32(&full_bar[s]), (kt / STAGES) & 1);
        const u64 dab = make_desc(a_big0 + so + cw * 64 * ROW_BYTES);
        const u64 dbb = make_desc(b_big0 + so);
        wgmma_fence();
        if constexpr (X3) {
            const u64 das = make_desc(a_small0 + so + cw * 64 * ROW_BYTES);
            const u64 dbs = make_desc(b_small0 + so);
            // Small products of all four k8 steps first, big*big last: while
            // `part` is small its truncation errors are too (k8 step j: +32
            // bytes = +2 in the descriptor).  `part` restarts from zero
            // (scale-d = 0) every PROMO k-tiles.
            if (kt % PROMO == 0) wgmma_tf32<BN, 0>(part, das, dbb);
            else wgmma_tf32<BN, 1>(part, das, dbb);
#pragma unroll
            for (int j = 1; j < BK / 8; ++j) wgmma_tf32<BN>(part, das + 2 * j, dbb + 2 * j);
#pragma unroll
            for (int j = 0; j < BK / 8; ++j) wgmma_tf32<BN>(part, dab + 2 * j, dbs + 2 * j);
#pragma unroll
            for (int j = 0; j < BK / 8; ++j) wgmma_tf32<BN>(part, dab + 2 * j, dbb + 2 * j);
            wgmma_commit();
            if (kt % PROMO == PROMO - 1 || kt == KT - 1) {
                // Promote: wait for the group, free its stages, add it in.
                wgmma_wait<0>();
                fence_acc(part);
                if ((wtid % 32) == 0)
                    for (int t = kt - kt % PROMO; t <= kt; ++t)
                        mbar_arrive(smem_u32(&empty_bar[t % STAGES]));
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[i] += part[i];
            }
        } else {
#pragma unroll
            for (int j = 0; j < BK / 8; ++j) wgmma_tf32<BN>(acc, dab + 2 * j, dbb + 2 * j);
            wgmma_commit();
            wgmma_wait<1>();
            fence_acc(acc);
            if (kt > 0 && (wtid % 32) == 0)
                mbar_arrive(smem_u32(&empty_bar[(kt - 1) % STAGES]));
        }
    }
    wgmma_wait<0>();
    fence_acc(acc);

    store_tile<BN, TA, TB>(acc, X3 && *(const volatile int*)bad_flag, M, N, K, alpha, A, lda, B,
                           ldb, beta, C, ldc, ep, m0 + cw * 64, n0, wtid);
}


// One producer warpgroup's loop over the k-tiles with double-buffered
// registers: tile kt+1's loads are in flight while tile kt is split and
// stored, so one global latency no longer costs one k-tile.  (Single-buffered,
// the producer's chain load -> wait -> store capped every 128 x 128 config at
// ~80 TFLOPS whatever the precision: notes.)  `load(L&, k0)` fills a register
// set, `store(const L&, stage)` splits it into shared memory; `put` adds the
// barrier handshake.
template <int STAGES, class L, class Load, class Store>
__device__ __forceinline__ void produce_db(int KT, L& l0, L& l1, Load load, Store store,
                                           const u64* full_bar, const u64* empty_bar) {
    auto put = [&](int kt, const L& l) {
        const int s = kt % STAGES;
        mbar_wait(smem_u32(&empty_bar[s]), ((kt / STAGES) & 1) ^ 1);
        store(l, s);
        fence_proxy_async();
        mbar_arrive(smem_u32(&full_bar[s]));
    };
    if (KT > 0) load(l0, 0);
    for (int kt = 0; kt < KT; kt += 2) {
        if (kt + 1 < KT) load(l1, (kt + 1) * BK);
        put(kt, l0);
        if (kt + 1 < KT) {
            if (kt + 2 < KT) load(l0, (kt + 2) * BK);
            put(kt + 1, l1);
        }
    }
}

// setmaxnreg: a warpgroup changes its own per-thread register allocation.
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(R));
}

// PW: producer warpgroups (1 or 2).  PW = 2 (BM = 128 only, 512 threads):
// warpgroup 0 loads and splits A, warpgroup 1 B, each double-buffered, so the
// split's instructions are spread over two warps per SM sub-partition instead
// of one.  512 threads start with 128 registers each, too few for a consumer's
// two 64 x BN accumulator sets, so the producers give registers back
// (setmaxnreg.dec to P_REGS) and the consumers take them (setmaxnreg.inc to
// C_REGS); PW * P_REGS + CW * C_REGS = 4 * 128 keeps the block's register pool
// unchanged (setmaxnreg.inc waits for registers released by .dec).
// SWZ: m-tiles per raster group of the block order (raster() above).
template <bool X3, int BM, int BN, int STAGES, int PROMO, int PW, int SWZ, bool TA, bool TB,
          bool ALIGNED>
__device__ __forceinline__ void body(SGEMM_PARAMS) {
    constexpr int CW = BM / 64;                       // consumer warpgroups
    constexpr int A_BYTES = BM * ROW_BYTES, B_BYTES = BN * ROW_BYTES;
    constexpr int STAGE_BYTES = (A_BYTES + B_BYTES) * (X3 ? 2 : 1);
    static_assert(BM == 64 || BM == 128, "BM: one or two consumer warpgroups");
    static_assert(BN == 64 || BN == 128 || BN == 256, "BN: wgmma n");
    static_assert(!X3 || BN <= 128, "tf32x3 holds two accumulator sets: BN <= 128");
    static_assert(PROMO >= 1 && PROMO < STAGES, "promotion group must leave a stage free");
    static_assert(PW == 1 || (PW == 2 && BM == 128), "PW = 2 needs BM = 128 (512 threads)");
    static_assert(SWZ >= 1, "SWZ: m-tiles per raster group");
    constexpr int P_REGS = 104, C_REGS = 152;          // PW = 2 only
    static_assert(PW == 1 || PW * P_REGS + CW * C_REGS == 4 * 128, "register pool");

    extern __shared__ __align__(1024) unsigned char dsmem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    __shared__ int bad_flag;
    SGEMM_BATCH_OFFSET();

    const int tid = threadIdx.x, wg = tid / 128, wtid = tid % 128;
    int bm, bn;
    raster<SWZ>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    const int KT = (K + BK - 1) / BK;
    const u32 base = (smem_u32(dsmem) + 1023u) & ~1023u;   // swizzle atoms: 1024 B
    // stage s: [A big][B big][A small][B small]
    auto a_big = [&](int s) { return base + s * STAGE_BYTES; };
    auto b_big = [&](int s) { return base + s * STAGE_BYTES + A_BYTES; };
    auto a_small = [&](int s) { return base + s * STAGE_BYTES + A_BYTES + B_BYTES; };
    auto b_small = [&](int s) { return base + s * STAGE_BYTES + 2 * A_BYTES + B_BYTES; };

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full_bar[s]), 128 * PW);   // every producer thread
            mbar_init(smem_u32(&empty_bar[s]), 4 * CW);    // lane 0 of each consumer warp
        }
        bad_flag = 0;
    }
    __syncthreads();

    using LA = TileLoader<BM, TA, ALIGNED>;
    using LB = TileLoader<BN, !TB, ALIGNED>;
    if (wg < PW) {
        // ---------------- producer(s) ----------------
        bool bad = false;
        if constexpr (PW == 2) {
            setmaxnreg_dec<P_REGS>();
            if (wg == 0) {
                LA l0, l1;
                produce_db<STAGES>(
                    KT, l0, l1,
                    [&](LA& l, int k0) { l.load(A, lda, m0, k0, M, K, wtid); },
                    [&](const LA& l, int s) {
                        l.template store<X3>(a_big(s), a_small(s), wtid, bad);
                        if (X3 && bad) *(volatile int*)&bad_flag = 1;   // before the arrive
                    },
                    full_bar, empty_bar);
            } else {
                LB l0, l1;
                produce_db<STAGES>(
                    KT, l0, l1,
                    [&](LB& l, int k0) { l.load(B, ldb, n0, k0, N, K, wtid); },
                    [&](const LB& l, int s) {
                        l.template store<X3>(b_big(s), b_small(s), wtid, bad);
                        if (X3 && bad) *(volatile int*)&bad_flag = 1;
                    },
                    full_bar, empty_bar);
            }
        } else if constexpr ((BM + BN) <= 256) {
            // Double-buffered when two tiles of A and B fit in registers.
            struct Both { LA a; LB b; };
            Both l0, l1;
            produce_db<STAGES>(
                KT, l0, l1,
                [&](Both& l, int k0) {
                    l.a.load(A, lda, m0, k0, M, K, wtid);
                    l.b.load(B, ldb, n0, k0, N, K, wtid);
                },
                [&](const Both& l, int s) {
                    l.a.template store<X3>(a_big(s), a_small(s), wtid, bad);
                    l.b.template store<X3>(b_big(s), b_small(s), wtid, bad);
                    if (X3 && bad) *(volatile int*)&bad_flag = 1;
                },
                full_bar, empty_bar);
        } else {
            LA la;
            LB lb;
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                la.load(A, lda, m0, kt * BK, M, K, wtid);
                lb.load(B, ldb, n0, kt * BK, N, K, wtid);
                mbar_wait(smem_u32(&empty_bar[s]), ((kt / STAGES) & 1) ^ 1);
                la.template store<X3>(a_big(s), a_small(s), wtid, bad);
                lb.template store<X3>(b_big(s), b_small(s), wtid, bad);
                if (X3 && bad) *(volatile int*)&bad_flag = 1;
                fence_proxy_async();
                mbar_arrive(smem_u32(&full_bar[s]));
            }
        }
    } else {
        if constexpr (PW == 2) setmaxnreg_inc<C_REGS>();
        consume<X3, BM, BN, STAGES, PROMO, TA, TB>(
            M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, SGEMM_EPI, KT, wg - PW, m0, n0, wtid,
            a_big(0), a_small(0), b_big(0), b_small(0), STAGE_BYTES, full_bar, empty_bar,
            &bad_flag);
    }
}

}  // namespace tc21

// Diagnostic only (no KernelSpec names it; scripts/tc_check.py --probe runs
// it under ncu).  One producer warpgroup's split + swizzled stores of an R x 32
// tile, ITERS times, and nothing else: no global loads filling L1 and no wgmma
// reading shared memory at the same time.  ncu's store bank-conflict counter
// on this kernel is the address pattern's own cost, so comparing it with the
// GEMM's count separates mapping conflicts from contention with other clients
// of the data banks (docs/notes/tensorcore.md).
template <int R, bool KCONT>
__global__ void __launch_bounds__(128, 1) tc21_store_probe(float* out, int iters) {
    extern __shared__ __align__(1024) unsigned char dsmem[];
    const tc::u32 base = (tc21::smem_u32(dsmem) + 1023u) & ~1023u;
    tc21::TileLoader<R, KCONT, true> l;
    bool bad = false;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int i = 0; i < tc21::TileLoader<R, KCONT, true>::NV; ++i)
            l.v[i] = (float)(threadIdx.x * 37 + i + it);   // data the compiler cannot fold
        l.template store<true>(base, base + R * tc21::ROW_BYTES, threadIdx.x, bad);
    }
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = *(const float*)(dsmem + (base - tc21::smem_u32(dsmem))) + bad;
}

// PROMO: k-tiles summed on the tensor cores between two FP32 promotions.
// THREADS = 128 * (BM/64 + PW): PW producer warpgroups (see body).
// SWZ: m-tiles per raster group (1: plain blockIdx order).
template <int BM, int BN, int STAGES, int PROMO, int THREADS, int SWZ, bool TA, bool TB,
          bool ALIGNED>
__global__ void __launch_bounds__(THREADS, 1)
sgemm_tf32x3_wgmma(SGEMM_PARAMS) {
    static_assert(THREADS % 128 == 0 && THREADS / 128 > BM / 64, "THREADS");
    tc21::body<true, BM, BN, STAGES, PROMO, THREADS / 128 - BM / 64, SWZ, TA, TB, ALIGNED>(
        SGEMM_ARGS);
}

template <int BM, int BN, int STAGES, bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(128 * (BM / 64 + 1), 1)
sgemm_tf32_wgmma(SGEMM_PARAMS) {
    tc21::body<false, BM, BN, STAGES, 1, 1, 1, TA, TB, ALIGNED>(
        SGEMM_ARGS);
}
