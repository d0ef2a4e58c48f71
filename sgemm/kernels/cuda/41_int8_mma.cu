// Scheme kernel 41 -- the integer engine's INT8 GEMM: for every modulus l
// (blockIdx.z), C'_l = A'_l B'_l exactly, INT8 x INT8 -> INT32 on tensor
// cores with mma.sync.m16n8k32 (sm_80 and later).  Ozaki scheme II; the host
// side and an exact emulation are in sgemm/int8x/ (reference.py).
//
// Operands: the residue planes 40_int8x.cu writes, k contiguous, each row's
// k zero-padded to a multiple of 16 (the ld):
//   A plane l: A[l * planeA + i * lda + p]  (A'_l, m x K)
//   B plane l: B[l * planeB + j * ldb + p]  (B'_l^T, n x K: B's columns)
// so A is "row" and B is "col" for mma.sync as stored.  K is the padded
// depth, a multiple of 16: every 16-byte chunk is wholly inside or wholly
// past it, so cp.async's zero-fill covers the last tile with one compare and
// the padding needs no larger multiple.
// Output: byte planes, C'_l mod p_l in [0, p) as uint8, column-major like
// C, C[l * planeC + i + j * ldc] for rows i < ldc (ldc: a multiple of 16,
// >= M): what int8x_garner reads.
//
// Algorithm.  A block computes a BM x BN tile for one modulus with
// (BM/WM) x (BN/WN) warps, each a WM x WN warp tile of 16 x 8 MMAs.  The k
// loop is a STAGES-deep cp.async pipeline of BK-byte k-tiles: 16-byte
// cp.async.cg copies (L2 only: every tile is read once per block), zero-fill
// past M, N or K.  Shared memory keeps each tile row-major [row][BK bytes]
// with the 16-byte chunks of a row XOR-swizzled (swz below), so both the
// cp.async stores and the ldmatrix.x4 fragment reads touch eight distinct
// 16-byte bank groups per eight rows: no bank conflicts and no padding.
// ldmatrix's b16 8x8 matrices are 8 rows x 16 bytes, which for int8 is
// exactly an m8 x k16 (A) or n8 x k16 (B) quarter of an MMA operand in the
// register layout mma.m16n8k32 .s8 expects (PTX ISA, "Matrix fragments for
// mma.m16n8k32"), so no shuffles or byte permutes are needed.
// Blocks are rasterised in groups of `group` BM-row tiles (blockIdx.x walks
// down a group, then across it): a wave of blocks then shares a few A and B
// panels in L2 instead of streaming all of A once per wave of BN columns.
//
// Exactness.  A product of two residues is at most 128 * 128 = 16384 in
// magnitude (only p = 256 reaches -128), so an INT32 sum of up to 131071 of
// them is exact.  Deeper K is folded: every FOLD_TILES k-tiles each
// accumulator is replaced by its remainder modulo p_l (magnitude < 256), so
// no partial sum ever leaves INT32 whatever K is, and the result stays
// congruent to the exact C'_l modulo p_l -- all Garner needs (it reduces
// modulo p_l first; the epilogue stores only the residue).  For K <= FOLD_TILES * BK (131008 at BK = 64) the
// planes are the exact products.
//
// Measured (H100, bench/results/int8-gemm-probe-h100-2026-11-26.json):
// default 600-653 TOPS at 4096^3-16384^3, large 505-619.  The sm_80/sm_86/
// sm_89 path; on sm_90a the pipeline runs 42_int8_wgmma.cu (2.1-2.5x this).
#include "common.cuh"
#include "int8_common.cuh"

namespace i8g {

using u32 = unsigned int;

__device__ __forceinline__ u32 smem_u32(const void* p) {
    return static_cast<u32>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; bytes == 0 writes zeros and reads
// nothing (src must still be a valid address).
__device__ __forceinline__ void cp16(u32 dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_pending() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// d += a b for one 16 x 8 x 32 int8 tile (s32 accumulators, wrapping is
// never reached: see Exactness above).
__device__ __forceinline__ void mma_s8(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of 16-byte chunk c of row r in a [rows][BK] int8 tile.  A
// 128-byte line of banks holds 8 / CH rows; XOR-ing the chunk with the line
// index (mod CH) gives the eight rows an ldmatrix phase reads (same logical
// chunk) eight distinct 16-byte bank groups; a NumPy model checks
// this (tests/int8x/test_tiling.py).
template <int BK>
__device__ __forceinline__ int swz(int r, int c) {
    constexpr int CH = BK / 16;      // 16-byte chunks per row
    constexpr int RPL = 8 / CH;      // rows per 128-byte line
    return r * BK + ((c ^ ((r / RPL) & (CH - 1))) << 4);
}

}  // namespace i8g

// Warp tiles of up to 64 x 32 (64 accumulators a thread) ask ptxas for 128
// registers so that two 256-thread blocks share an SM (sm_80, sm_90: 2 x 64
// KiB of shared memory fit too): 16 warps to hide ldmatrix and cp.async
// latency.  Larger warp tiles need the registers and run one block an SM.
template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, WM * WN <= 64 * 32 ? 2 : 1)
int8_mma(int M, int N, int K,
         const signed char* __restrict__ A, long long lda, long long planeA,
         const signed char* __restrict__ B, long long ldb, long long planeB,
         const int* __restrict__ mods, int group,
         unsigned char* __restrict__ C, long long ldc, long long planeC) {
    using namespace i8g;
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int CH = BK / 16;
    constexpr int A_ITERS = BM * CH / THREADS;     // 16-byte chunks per thread per tile
    constexpr int B_ITERS = BN * CH / THREADS;
    constexpr int MT = WM / 16, NT = WN / 8;       // MMA tiles per warp
    constexpr int STAGE_BYTES = (BM + BN) * BK;
    // k-tiles between folds: 256 (a folded remainder) + FOLD_TILES * BK * 16384
    // stays below 2^31.
    constexpr int FOLD_TILES = (2147483647 - 256) / (16384 * BK);
    static_assert(BK == 32 || BK == 64 || BK == 128, "BK: 32, 64 or 128 bytes (the swizzle)");
    static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile: multiples of 16 (ldmatrix.x4)");
    static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must cover the block tile");
    static_assert(BM * CH % THREADS == 0 && BN * CH % THREADS == 0,
                  "every thread copies whole 16-byte chunks of each tile");
    static_assert(STAGES >= 2, "the pipeline needs two stages");

    sg::pdl_wait();   // the residue kernel may still be writing A and B
    extern __shared__ __align__(128) signed char smem[];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int m0, n0;                                     // grouped raster (see the header)
    i8c::grouped_tile<BM, BN>(M, N, group, m0, n0);
    if (m0 >= M || n0 >= N) return;                    // never: the grid is exact

    const int z = blockIdx.z;
    A += z * planeA;
    B += z * planeB;
    C += z * planeC;
    const int p = mods[z];

    // This thread's copies: chunk q = tid + it * THREADS of a tile is row
    // q / CH, chunk q % CH.  Row pointers and row validity are fixed for the
    // whole k loop; rows past M or N copy zeros from the plane's start.
    const signed char* a_src[A_ITERS];
    const signed char* b_src[B_ITERS];
    bool a_ok[A_ITERS], b_ok[B_ITERS];
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int q = tid + it * THREADS, r = q / CH;
        a_ok[it] = m0 + r < M;
        a_src[it] = A + (a_ok[it] ? (long long)(m0 + r) * lda : 0) + (q % CH) * 16;
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int q = tid + it * THREADS, r = q / CH;
        b_ok[it] = n0 + r < N;
        b_src[it] = B + (b_ok[it] ? (long long)(n0 + r) * ldb : 0) + (q % CH) * 16;
    }
    const u32 s_base = smem_u32(smem);

    auto load_tile = [&](int kt, int slot) {
        const int k0 = kt * BK;
        const u32 sa = s_base + slot * STAGE_BYTES, sb = sa + BM * BK;
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it) {
            const int q = tid + it * THREADS, c = q % CH;
            const bool ok = a_ok[it] && k0 + c * 16 < K;
            cp16(sa + swz<BK>(q / CH, c), ok ? a_src[it] + k0 : A, ok ? 16 : 0);
        }
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it) {
            const int q = tid + it * THREADS, c = q % CH;
            const bool ok = b_ok[it] && k0 + c * 16 < K;
            cp16(sb + swz<BK>(q / CH, c), ok ? b_src[it] + k0 : B, ok ? 16 : 0);
        }
    };

    int acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;

    // ---- prologue: STAGES - 1 tiles in flight ----
    const int KT = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        commit();                        // empty groups keep the count uniform
    }

    // ldmatrix lane addresses inside a warp tile.  A (16 x 32 per MMA): lanes
    // 0-7 / 8-15 / 16-23 / 24-31 give the rows of matrices a0..a3 = (rows
    // 0-7, k 0-15), (rows 8-15, k 0-15), (rows 0-7, k 16-31), (rows 8-15,
    // k 16-31).  B (two n8 tiles): (n 0-7, k 0-15), (n 0-7, k 16-31),
    // (n 8-15, k 0-15), (n 8-15, k 16-31): b0, b1 of tile 0, then tile 1.
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int a_row = wm0 + (lane & 15), a_half = lane >> 4;
    const int b_row = wn0 + (lane & 7) + ((lane >> 4) << 3), b_half = (lane >> 3) & 1;

    // ---- main loop ----
    int since_fold = 0;
    for (int kt = 0; kt < KT; ++kt) {
        wait_pending<STAGES - 2>();      // tile kt has landed (this thread's copies)
        __syncthreads();                 // ... everyone's; and slot (kt - 1) is free
        if (kt + STAGES - 1 < KT) load_tile(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
        commit();

        const u32 sa = s_base + (kt % STAGES) * STAGE_BYTES, sb = sa + BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk) {
            u32 af[MT][4], bf[NT / 2][4];
#pragma unroll
            for (int i = 0; i < MT; ++i)
                ldmatrix_x4(af[i], sa + swz<BK>(a_row + i * 16, kk * 2 + a_half));
#pragma unroll
            for (int j = 0; j < NT / 2; ++j)
                ldmatrix_x4(bf[j], sb + swz<BK>(b_row + j * 16, kk * 2 + b_half));
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    mma_s8(acc[i][j], af[i], bf[j / 2][(j & 1) * 2], bf[j / 2][(j & 1) * 2 + 1]);
        }
        // K deeper than one exact INT32 sum; never after the last tile, so
        // K <= FOLD_TILES * BK leaves the exact products
        if (++since_fold == FOLD_TILES && kt + 1 < KT) {
            since_fold = 0;
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[i][j][e] %= p;
        }
    }
    wait_pending<0>();                   // no copy may outlive the block

    // ---- epilogue: accumulator (g = lane / 4, t = lane % 4) e holds row
    // g + 8 (e / 2), column 2 t + (e % 2) of its 16 x 8 tile.  Each is
    // reduced to C'_l mod p_l in [0, p) and stored as one byte (Garner needs
    // nothing more; 4x less traffic than INT32 planes).  Rows are stored up
    // to ldc, the plane's row count (a multiple of 16, >= M): rows past M
    // were zero-filled, so their bytes are 0, and every byte Garner's 4-row
    // loads touch is written.  Stored straight from the fragment (8 bytes a
    // column per quarter-warp): this is the sm_80/sm_89 path; 42 stages its
    // bytes through shared memory for 16-byte stores. ----
    const int g = lane >> 2, t = lane & 3;
    const int c16 = 65536 % p;
    const float inv = __frcp_rn((float)p);
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = m0 + wm0 + i * 16 + g + (e >> 1) * 8;
                const int c = n0 + wn0 + j * 8 + t * 2 + (e & 1);
                if (r < ldc && c < N)
                    C[r + (long long)c * ldc] =
                        (unsigned char)i8c::mod_small(acc[i][j][e], p, c16, inv);
            }
}
