// Scheme kernel 42 -- the integer engine's INT8 GEMM on Hopper: for every
// modulus l (blockIdx.z), C'_l = A'_l B'_l exactly, INT8 x INT8 -> INT32 with
// wgmma.mma_async.m64nNk32.s32.s8.s8 (sm_90a only).  Same contract as
// 41_int8_mma.cu (same arguments, same planes in and out), so
// sgemm/int8x/device.py launches either; it picks this one on sm_90a.
//
// What it adds over 41: mma.sync s8 reached 600-653 TOPS on an H100
// (bench/results/int8-gemm-probe-h100-2026-11-26.json), about a third of the
// dense INT8 peak (~1979 TOPS), which only wgmma issues at full rate.  Here
// each warpgroup (4 warps) issues one m64nBNk32 wgmma per 32 bytes of k with
// both operands read by the tensor cores straight from shared memory: no
// ldmatrix, no fragment registers, and BN/2 INT32 accumulators a thread.
//
// Operands (as 40_int8x.cu writes them, k contiguous, each row zero-padded
// to a multiple of 16 bytes): A plane l: A[l planeA + i lda + p] (m x K),
// B plane l: B[l planeB + j ldb + p] (B's columns, n x K).  Both are
// "K-major" in wgmma's terms, the only layout 8-bit wgmma reads (PTX ISA:
// the transpose immediates exist for .f16/.bf16 only; the s8 form has no
// imm-scale or imm-trans operands at all).
// Output: byte planes, C'_l mod p_l in [0, p) as uint8, column-major like
// C, C[l planeC + i + j ldc] for rows i < ldc (a multiple of 16, >= M):
// the accumulators are reduced in the epilogue (see there).
//
// Shared memory.  A stage holds the BM x 128-byte tile of A' then the BN x
// 128-byte tile of B' (BK = 128 bytes = 128 k), each row one 128-byte line
// with its eight 16-byte chunks XOR-swizzled, chunk c of row r at c ^ (r & 7)
// -- the 128B swizzle that wgmma's descriptor names (layout type 1), with
// 8-row groups 1024 bytes apart (SBO) and tile bases 1024-aligned.  The same
// byte layout as 21_tf32x3_wgmma.cu's tf32 tiles (a 128-byte row there is
// 32 tf32 of k, here 128 int8), so the descriptor and its k-step are the
// same: k32 of int8 is 32 bytes, +2 in the descriptor's address field.
//
// Pipeline.  No producer warpgroup: every thread copies 16-byte chunks with
// cp.async.cg (zero-fill past M, N or K, as 41), the loads run STAGES - 2
// k-tiles ahead, and each warpgroup keeps one k-tile of wgmmas in flight
// (wait_group 1).  Per k-tile kt every thread:
//   1. waits for its own copies of tile kt (cp.async.wait_group), then
//      fence.proxy.async: cp.async writes through the generic proxy and
//      wgmma reads through the async proxy, so the writes must be fenced
//      before the barrier that publishes them;
//   2. __syncthreads: tile kt is complete for everyone, and every
//      warpgroup has retired its wgmmas of tile kt - 2 (step 4 of the last
//      iteration), so that tile's slot may be overwritten;
//   3. starts the copies of tile kt + STAGES - 2 into that slot;
//   4. issues the four k32 wgmmas of tile kt, commits them, and waits until
//      at most this group is pending (tile kt - 1's group done).
// Why not the warp-specialized TMA design: TMA needs tensor maps built on
// the host for every plane layout, and the copies here are few (12 16-byte
// cp.async a thread per 48 KiB stage at 128 x 256); the loads are not the
// bottleneck on paper (48 KiB a k-tile that the tensor cores take ~1000
// cycles to consume).  Not measured against a TMA version.
//
// Measured (H100, bench/results/int8-gemm-probe-h100-2026-11-26.json, 8
// moduli a launch, byte-plane epilogue): default (128 x 256, 4 stages) 1324
// TOPS at 4096^3, 1565 at 8192^3, 1474 at 16384^3 -- 2.1-2.5x 41's mma.sync
// (600-653) and 79 % of the ~1979 TOPS dense INT8 peak at 8192^3; narrow
// (128 x 128, 3 stages, two blocks an SM) 1002-1105.  Bit for bit against int64 products on 19 shapes with both
// configs, compute-sanitizer memcheck/racecheck/synccheck/initcheck clean.
//
// Exactness (see 41): every product is at most 128 * 128 = 16384 in
// magnitude.  Before a k-tile whose products could take a partial sum past
// INT32 (KLIMIT k since the last fold, counting padding) the warpgroup waits
// for its wgmmas and replaces each accumulator by its remainder modulo p_l
// (< 256 in magnitude), so no sum leaves INT32 for any K and the
// accumulators stay congruent to C'_l modulo p_l -- all the byte planes
// need.  KLIMIT = (2^31 - 1 - 255) / 16384 = 131071; K is padded to a
// multiple of 16, so for K <= 131056 nothing folds.
//
// Raster: blocks in groups of `group` BM-row tiles (blockIdx.x walks down a
// group, then across it), as 41, so a wave shares a few A and B panels in L2.
//
// Other archs: the body uses sm_90a instructions; compiled for any other
// target the kernel only traps (the bundle builder compiles every utility
// kernel for every arch; device.py launches this one on sm_90a alone).
#include "common.cuh"
#include "int8_common.cuh"
#include "wgmma.cuh"

namespace i8w {

using u32 = unsigned int;
using u64 = unsigned long long;
using wg::smem_u32;
using wg::fence_proxy_async;
using wg::make_desc;
using wg::wgmma_fence;
using wg::wgmma_commit;
using wg::wgmma_wait;
using wg::fence_acc;

// An enum, not constexpr variables: NVRTC emits namespace-scope constexpr
// variables as symbols named with a per-process id, so two compiles of one
// kernel would differ in bytes (common.cuh, EpiCode).
enum : int {
    BK = 128,                                 // bytes (= int8 k) per k-tile and per smem row
    KLIMIT = (2147483647 - 255) / 16384,      // k summed between folds: 131071
};


// 16-byte async copy global -> shared; bytes == 0 writes zeros and reads
// nothing (src must still be a valid address).
__device__ __forceinline__ void cp16(u32 dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_pending() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}


// D(64 x N, s32) += A(64 x 32, s8, smem desc) * B(32 x N, s8, smem desc).
// scale-d is always 1: the accumulators start at zero.
__device__ __forceinline__ void wgmma_m64n64k32(int (&d)[32], u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
          "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
        : "l"(da), "l"(db), "n"(1));
}

__device__ __forceinline__ void wgmma_m64n128k32(int (&d)[64], u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
          "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
          "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
          "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
          "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
        : "l"(da), "l"(db), "n"(1));
}

__device__ __forceinline__ void wgmma_m64n256k32(int (&d)[128], u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
          "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
          "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
          "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
          "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]),
          "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
          "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]),
          "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]),
          "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]),
          "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
          "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
          "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]),
          "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
        : "l"(da), "l"(db), "n"(1));
}

template <int N>
__device__ __forceinline__ void wgmma_s8(int (&d)[N / 2], u64 da, u64 db) {
    if constexpr (N == 64) wgmma_m64n64k32(d, da, db);
    else if constexpr (N == 128) wgmma_m64n128k32(d, da, db);
    else wgmma_m64n256k32(d, da, db);
}

template <int BM, int BN, int STAGES>
__device__ __forceinline__ void body(int M, int N, int K,
                                     const signed char* __restrict__ A, long long lda,
                                     const signed char* __restrict__ B, long long ldb, int p,
                                     int group, unsigned char* __restrict__ C, long long ldc) {
    constexpr int THREADS = 128 * (BM / 64);
    constexpr int STAGE_BYTES = (BM + BN) * BK;
    constexpr int ROWS_PER_IT = THREADS / 8;           // 8 chunks of 16 bytes per row
    constexpr int A_ITERS = BM / ROWS_PER_IT;          // = 4
    constexpr int B_ITERS = BN / ROWS_PER_IT;
    constexpr int R = BN / 2;                          // accumulators a thread

    extern __shared__ __align__(1024) unsigned char dsmem[];
    const u32 base = (smem_u32(dsmem) + 1023u) & ~1023u;   // swizzle atoms: 1024 B

    const int tid = threadIdx.x, wg = tid / 128, wtid = tid % 128;
    int m0, n0;                                        // grouped raster (41_int8_mma.cu)
    i8c::grouped_tile<BM, BN>(M, N, group, m0, n0);
    if (m0 >= M || n0 >= N) return;                    // never: the grid is exact

    // This thread's copies: chunk c = tid % 8 of rows r0 + it * ROWS_PER_IT
    // (r0 = tid / 8) of the stacked [A tile; B tile].  ROWS_PER_IT is a
    // multiple of 8, so every row of the thread has the same swizzled chunk
    // (c ^ (r0 & 7)) and the shared address is one base plus constants.  The
    // global address walks down by ROWS_PER_IT rows an iteration from one
    // pointer per operand: holding 12 row pointers made ptxas 13.0 spill
    // (255 registers with 128 accumulators).  Rows past M or N copy zeros
    // (src-size 0) from the plane's start; `rows_ok` has bit it set when row
    // it is inside.
    const int c = tid % 8, r0 = tid / 8;
    const signed char* a_src = A + (long long)min(m0 + r0, M - 1) * lda + c * 16;
    const signed char* b_src = B + (long long)min(n0 + r0, N - 1) * ldb + c * 16;
    const long long a_step = (long long)ROWS_PER_IT * lda, b_step = (long long)ROWS_PER_IT * ldb;
    unsigned rows_ok = 0;
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it)
        rows_ok |= (unsigned)(m0 + r0 + it * ROWS_PER_IT < M) << it;
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it)
        rows_ok |= (unsigned)(n0 + r0 + it * ROWS_PER_IT < N) << (A_ITERS + it);
    const u32 dst0 = base + r0 * BK + ((c ^ (r0 & 7)) << 4);
    auto load_tile = [&](int kt, int slot) {
        const int k0 = kt * BK;
        const bool k_ok = k0 + c * 16 < K;             // K is a multiple of 16
        const u32 dst = dst0 + slot * STAGE_BYTES;
        const signed char* pa = a_src + k0;
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it, pa += a_step) {
            const bool ok = k_ok && (rows_ok >> it & 1u);
            cp16(dst + it * ROWS_PER_IT * BK, ok ? pa : A, ok ? 16 : 0);
        }
        const signed char* pb = b_src + k0;
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it, pb += b_step) {
            const bool ok = k_ok && (rows_ok >> (A_ITERS + it) & 1u);
            cp16(dst + (BM + it * ROWS_PER_IT) * BK, ok ? pb : B, ok ? 16 : 0);
        }
    };

    int acc[R];
#pragma unroll
    for (int i = 0; i < R; ++i) acc[i] = 0;

    // ---- prologue: STAGES - 2 tiles in flight ----
    const int KT = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {
        if (s < KT) load_tile(s, s);
        commit();                                      // empty groups keep the count uniform
    }

    // ---- main loop (steps 1-4 of the header) ----
    const u32 a_off = wg * 64 * BK, b_off = BM * BK;   // this warpgroup's 64 rows of A
    int since_fold = 0;
    for (int kt = 0; kt < KT; ++kt) {
        wait_pending<STAGES - 3>();                    // groups after tile kt's: STAGES - 3
        fence_proxy_async();
        __syncthreads();
        if (kt + STAGES - 2 < KT) load_tile(kt + STAGES - 2, (kt + STAGES - 2) % STAGES);
        commit();

        const int kn = min(BK, K - kt * BK);
        if (since_fold + kn > KLIMIT) {                // deep K only (> 131056)
            wgmma_wait<0>();
            fence_acc(acc);
#pragma unroll
            for (int i = 0; i < R; ++i) acc[i] %= p;
            since_fold = 0;
        }
        since_fold += kn;

        const u32 st = base + (kt % STAGES) * STAGE_BYTES;
        const u64 da = make_desc(st + a_off), db = make_desc(st + b_off);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 32; ++j) wgmma_s8<BN>(acc, da + 2 * j, db + 2 * j);
        wgmma_commit();
        wgmma_wait<1>();   // no fence_acc here: this tile's group still writes acc
    }
    wgmma_wait<0>();
    fence_acc(acc);
    wait_pending<0>();                                 // only empty groups remain; none may outlive the block

    // ---- epilogue: byte planes.  Garner only needs C'_l mod p_l, which
    // fits a byte, so each accumulator is reduced here (mod_small) and one
    // uint8 in [0, p) is written instead of four bytes of INT32: the GEMM's
    // stores and Garner's reads both shrink 4x (2.1 GB each way at 8192^3
    // with 8 moduli, docs/notes/int8x.md).  The wgmma D fragment (PTX ISA,
    // m64nNk32 .s32 accumulators): warp w of the warpgroup holds rows
    // 16w..16w+15, lane (g, t) rows g and g + 8, columns 8b + 2t and
    // 8b + 2t + 1: acc[4b + q] is row g + 8 (q / 2), column 8b + 2t + (q % 2).
    // A lane's bytes are scattered over columns of a column-major plane, so
    // they go through shared memory first (the pipeline's stages, free now):
    // stg[col][row], PITCH = BM + 16 bytes, then each thread stores whole
    // 16-byte column chunks (16 rows).  PITCH / 4 = BM / 4 + 4 words puts the
    // four t of a store instruction 8 banks apart, the eight g in 2 words:
    // no bank conflicts; and keeps every chunk 16-byte aligned. ----
    constexpr int PITCH = BM + 16;
    constexpr int CHUNKS = BM / 16;                    // 16-row chunks per column
    static_assert(BN * PITCH <= STAGES * STAGE_BYTES, "the byte tile must fit the stages");
    static_assert((BN * CHUNKS) % THREADS == 0, "chunks split evenly over the threads");
    __syncthreads();                                   // every warpgroup is done with the stages
    unsigned char* stg = dsmem + (base - smem_u32(dsmem));
    const int c16 = 65536 % p;
    const float inv = __frcp_rn((float)p);
    const int warp = wtid / 32, lane = wtid % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int b = 0; b < BN / 8; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int r = wg * 64 + warp * 16 + g + (q >> 1) * 8;
            const int col = b * 8 + 2 * t + (q & 1);
            stg[col * PITCH + r] = (unsigned char)i8c::mod_small(acc[4 * b + q], p, c16, inv);
        }
    __syncthreads();
    // Rows past M hold residues of zero-filled rows (0); they are stored up
    // to ldc, the plane's row count (a multiple of 16, >= M), so every byte
    // Garner reads with its 4-row loads is written.
#pragma unroll
    for (int it = 0; it < BN * CHUNKS / THREADS; ++it) {
        const int qc = tid + it * THREADS, col = qc / CHUNKS, ch = qc % CHUNKS;
        const long long r = m0 + ch * 16;
        if (r < ldc && n0 + col < N)
            *reinterpret_cast<uint4*>(C + r + (long long)(n0 + col) * ldc) =
                *reinterpret_cast<const uint4*>(stg + col * PITCH + ch * 16);
    }
}

}  // namespace i8w

// THREADS = 128 * BM / 64: one warpgroup per 64 rows of the block tile.
// Tiles of BN <= 128 (64 accumulators) ask for 128 registers so that two
// blocks share an SM; BN = 256 (128 accumulators) runs one.
template <int BM, int BN, int STAGES>
__global__ void __launch_bounds__(128 * (BM / 64), BN <= 128 ? 2 : 1)
int8_wgmma(int M, int N, int K,
           const signed char* __restrict__ A, long long lda, long long planeA,
           const signed char* __restrict__ B, long long ldb, long long planeB,
           const int* __restrict__ mods, int group,
           unsigned char* __restrict__ C, long long ldc, long long planeC) {
    static_assert(BM % 64 == 0 && BM >= 64 && BM <= 256, "BM: 1-4 warpgroups of 64 rows");
    static_assert(BN == 64 || BN == 128 || BN == 256, "BN: the wgmma n written here");
    static_assert(BN % (2 * BM / 8) == 0, "B rows split evenly over the copy iterations");
    static_assert(STAGES >= 3, "loads run STAGES - 2 tiles ahead of the wgmmas in flight");
    sg::pdl_wait();   // the residue kernel may still be writing A and B
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const int z = blockIdx.z;
    i8w::body<BM, BN, STAGES>(M, N, K, A + z * planeA, lda, B + z * planeB, ldb, mods[z], group,
                              C + z * planeC, ldc);
#else
    __trap();         // wgmma is sm_90a only (see the header)
#endif
}
