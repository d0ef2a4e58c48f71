// tile_loaders.cuh -- pieces shared by rungs 8-11: staging A/B tiles from
// global into shared memory, the warp-tiled FFMA micro-kernel and the epilogue.
//
// Shared-memory layout (all four rungs, every transpose).  A tile of an operand
// is R rows (m for A, n for B) by BK (k).  It is stored k-major:
//
//     S[k * (R + 4) + r]          k in [0, BK), r in [0, R)
//
// so one k-step of the micro-kernel reads R contiguous floats per operand and
// every fragment load is a 16-byte LDS.128.  The 4-float pad keeps rows 16-byte
// aligned and makes the *transposing* stores conflict-free (see the mappings).
//
// "KCONT" says how the operand lies in global memory: contiguous along k
// (A with TA, B without TB) or along r (A without TA, B with TB).  Element
// (r, k) of a panel is at  KCONT ? r*ld + k : k*ld + r  (64-bit).
//
// Thread -> element mappings (lane = consecutive threads of one warp):
//   VEC_R   (r-contiguous, aligned)  16-byte vector along r; a warp covers 128
//           contiguous floats of one k-row: coalesced LDG.128, STS.128.
//   VEC_K   (k-contiguous, aligned)  16-byte vector along k, lanes in pairs
//           along k and 16 rows deep: each row's 32 bytes (one sector) come
//           from two lanes.  The four transposing STS.32 hit
//           bank = 16*(lane&1) + 4u + r  (mod 32)  -> conflict-free.
//   SCAL_R  (r-contiguous, any alignment)  one float per lane along r.
//   SCAL_K8 (k-contiguous, any alignment)  8 lanes along k (one 32-byte
//           sector) by 4 rows: bank = 4*(k&7) + r (mod 32) -> conflict-free.
//           Also the cp.async mapping for k-contiguous operands (rung 10/11),
//           since a 16-byte cp.async cannot transpose.
// Every mapping is a 2-D grid of slots per thread (TileMap), so a thread walks
// one 64-bit pointer with one 64-bit stride; holding a 64-bit address per slot
// spilled.  The mappings were checked to cover each tile exactly once, with
// conflict-free stores, by a CPU simulation (docs/notes/ffma-fast.md).
// Edges: a load outside the M/N/K range reads nothing and writes 0.0f into the
// tile, so the micro-kernel needs no guard.  KCHK (k < kend, the last partial
// k-tile) and RCHK (row < rows, blocks on the edge of C) switch the checks on;
// with both off the loads are unguarded (interior tiles).
#pragma once
#include "common.cuh"

namespace sg {

template <bool KCONT>
__device__ __forceinline__ long long poff(int r, int k, long long ld) {
    return KCONT ? (long long)r * ld + k : (long long)k * ld + r;
}

// Thread -> element geometry of one operand tile.  Every mapping is a 2-D grid:
// the thread's elements are (r_t + i*RSTEP + [0,WR), k_t + q*KSTEP + [0,WK))
// for i < NR, q < NK, with a vector of WR (along r) or WK (along k) floats.
// Keeping the slots on a grid lets the loaders walk one 64-bit pointer per
// thread with a single 64-bit stride (RSTEP*ld or KSTEP*ld) and compile-time
// immediates, instead of holding one 64-bit address per slot in registers.
// MODE: 0 VEC_R, 1 VEC_K (register-staged only), 2 SCAL_R, 3 SCAL_K8.
template <int R, int BK, int THREADS, int MODE>
struct TileMap {
    static constexpr int LD = R + 4;                   // smem row pitch (floats)
    static constexpr int WR = MODE == 0 ? 4 : 1;       // vector width along r
    static constexpr int WK = MODE == 1 ? 4 : 1;       // vector width along k
    static constexpr bool KCONT = MODE == 1 || MODE == 3;
    // Lanes that sit side by side along the contiguous dimension before the
    // mapping moves on to the next row (k-contiguous) / k (r-contiguous).
    static constexpr int KLANES = MODE == 1 ? 2 : (MODE == 3 ? 8 : 1);
    static constexpr int RUNITS = R / WR;              // r positions of one k
    static constexpr int TRU = (MODE == 0 || MODE == 2)
                                   ? (RUNITS < THREADS ? RUNITS : THREADS)
                                   : (R < THREADS / KLANES ? R : THREADS / KLANES);
    static constexpr int RSTEP = TRU * WR;             // rows between slots i, i+1
    static constexpr int NR = R / RSTEP;
    static constexpr int KSTEP = (THREADS / TRU) * WK; // k between slots q, q+1
    static constexpr int NK = BK / KSTEP;
    static constexpr int N = NR * NK * WR * WK;        // floats per thread
    static_assert(THREADS % TRU == 0 && R % RSTEP == 0, "threads must tile the rows of a k-slice");
    static_assert(BK % KSTEP == 0, "thread grid must tile BK");
    static_assert(N * THREADS == R * BK, "tile floats must divide among threads");
    static_assert(R % 32 == 0, "tile rows (BM, BN) must be multiples of 32");

    __device__ static __forceinline__ int r_of(int tid) {
        if (MODE == 0 || MODE == 2) return (tid % TRU) * WR;
        return (tid / KLANES) % TRU;
    }
    __device__ static __forceinline__ int k_of(int tid) {
        if (MODE == 0 || MODE == 2) return tid / TRU;
        return ((tid % KLANES) + KLANES * ((tid / KLANES) / TRU)) * WK;
    }
};

template <bool ALIGNED, bool KCONT>
__host__ __device__ constexpr int reg_mode() { return ALIGNED ? (KCONT ? 1 : 0) : (KCONT ? 3 : 2); }
template <bool ALIGNED, bool KCONT>
__host__ __device__ constexpr int async_mode() { return (ALIGNED && !KCONT) ? 0 : (KCONT ? 3 : 2); }

// Guards of a load: KCHK checks k < kend (the last, partial k-tile), RCHK
// checks r < rows (blocks on the bottom/right edge of C).  Both false is the
// unguarded fast path of interior tiles.

// ---------------------------------------------------------------------------
// Register-staged loader (rungs 8 and 9): global -> registers -> shared.
// Each thread walks one pointer p (its slot (0,0) at the current k-tile).
// ---------------------------------------------------------------------------
template <int R, int BK, int THREADS, bool KCONT, bool ALIGNED>
struct RegStage {
    using Map = TileMap<R, BK, THREADS, reg_mode<ALIGNED, KCONT>()>;
    static constexpr int NR = Map::NR, NK = Map::NK, WR = Map::WR, WK = Map::WK, W = WR * WK;
    float v[NR][NK][W];
    const float* p;    // this thread's slot (0, 0) in the current k-tile
    long long slow;    // element stride between slots along the non-contiguous direction
    long long step;    // element stride from one k-tile to the next

    // panel: element (0, 0) of the block's panel.
    __device__ __forceinline__ RegStage(const float* panel, long long ld, int tid) {
        p = panel + poff<KCONT>(Map::r_of(tid), Map::k_of(tid), ld);
        slow = KCONT ? (long long)Map::RSTEP * ld : (long long)Map::KSTEP * ld;
        step = KCONT ? (long long)BK : (long long)BK * ld;
    }
    __device__ __forceinline__ void advance() { p += step; }

    template <bool KCHK, bool RCHK>
    __device__ __forceinline__ void load(int rows, int kend, int tid) {
        const int r0 = Map::r_of(tid), k0 = Map::k_of(tid);
#pragma unroll
        for (int i = 0; i < NR; ++i)
#pragma unroll
            for (int q = 0; q < NK; ++q) {
                const float* s = KCONT ? p + i * slow + q * Map::KSTEP
                                       : p + q * slow + i * Map::RSTEP;
                const int r = r0 + i * Map::RSTEP, k = k0 + q * Map::KSTEP;
                if constexpr (W == 4) {
                    float4 x;
                    const bool all = (!RCHK || r + WR <= rows) && (!KCHK || k + WK <= kend);
                    if (all) {
                        x = ld4(s);
                    } else {   // the 4 elements are contiguous in memory either way
                        float e[4];
#pragma unroll
                        for (int u = 0; u < 4; ++u) {
                            const bool ok = (!RCHK || r + u * (WR / 4) < rows) &&
                                            (!KCHK || k + u * (WK / 4) < kend);
                            e[u] = ok ? s[u] : 0.0f;
                        }
                        x = make_float4(e[0], e[1], e[2], e[3]);
                    }
                    v[i][q][0] = x.x; v[i][q][1] = x.y; v[i][q][2] = x.z; v[i][q][3] = x.w;
                } else {
                    const bool ok = (!RCHK || r < rows) && (!KCHK || k < kend);
                    v[i][q][0] = ok ? *s : 0.0f;
                }
            }
    }

    __device__ __forceinline__ void store(float* __restrict__ sm, int tid) const {
        constexpr int LD = Map::LD;
        float* s = sm + Map::k_of(tid) * LD + Map::r_of(tid);
#pragma unroll
        for (int i = 0; i < NR; ++i)
#pragma unroll
            for (int q = 0; q < NK; ++q) {
                float* d = s + q * Map::KSTEP * LD + i * Map::RSTEP;
                if constexpr (WR == 4) {
                    *reinterpret_cast<float4*>(d) =
                        make_float4(v[i][q][0], v[i][q][1], v[i][q][2], v[i][q][3]);
                } else {
#pragma unroll
                    for (int u = 0; u < WK; ++u) d[u * LD] = v[i][q][u];
                }
            }
    }
};

// ---------------------------------------------------------------------------
// cp.async loader (rungs 10 and 11): global -> shared without registers.
// r-contiguous aligned operands: 16-byte cp.async.cg (L2 only), src-size
// clipped to the valid bytes, the rest zero-filled by the hardware.
// Everything else: 4-byte cp.async.ca with src-size 0 for out-of-range
// elements (the SCAL_* mappings, which transpose for free).  A copy with
// nothing valid reads from `safe`, the block's panel origin (always in range).
// ---------------------------------------------------------------------------
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async16_zfill(unsigned dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}
__device__ __forceinline__ void cp_async4(unsigned dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async4_zfill(unsigned dst, const void* src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void cp_async_wait_all() {
    asm volatile("cp.async.wait_all;\n" ::);
}

template <int R, int BK, int THREADS, bool KCONT, bool ALIGNED>
struct AsyncStage {
    using Map = TileMap<R, BK, THREADS, async_mode<ALIGNED, KCONT>()>;
    static constexpr int NR = Map::NR, NK = Map::NK, WR = Map::WR;
    const float* p;      // this thread's slot (0, 0) in the next k-tile to issue
    const float* safe;   // the block's panel origin: a valid address
    long long slow, step;
    unsigned soff;       // byte offset of slot (0, 0) inside a stage's tile

    __device__ __forceinline__ AsyncStage(const float* panel, long long ld, int tid) {
        safe = panel;
        p = panel + poff<KCONT>(Map::r_of(tid), Map::k_of(tid), ld);
        slow = KCONT ? (long long)Map::RSTEP * ld : (long long)Map::KSTEP * ld;
        step = KCONT ? (long long)BK : (long long)BK * ld;
        soff = 4u * (Map::k_of(tid) * Map::LD + Map::r_of(tid));
    }
    __device__ __forceinline__ void advance() { p += step; }

    // Pipeline interface shared with RegAsync: fetch a k-tile into stage s
    // (byte address s, generic pointer sp); land() is a no-op here.
    template <bool KCHK, bool RCHK>
    __device__ __forceinline__ void fetch(unsigned s, float*, int rows, int kend, int tid) {
        issue<KCHK, RCHK>(s, rows, kend, tid);
    }
    __device__ __forceinline__ void land(int) const {}

    // s: byte address of the stage's tile in shared memory.
    template <bool KCHK, bool RCHK>
    __device__ __forceinline__ void issue(unsigned s, int rows, int kend, int tid) const {
        const int r0 = Map::r_of(tid), k0 = Map::k_of(tid);
        s += soff;
#pragma unroll
        for (int i = 0; i < NR; ++i)
#pragma unroll
            for (int q = 0; q < NK; ++q) {
                const float* src = KCONT ? p + i * slow + q * Map::KSTEP
                                         : p + q * slow + i * Map::RSTEP;
                const unsigned d = s + 4u * (q * Map::KSTEP * Map::LD + i * Map::RSTEP);
                const int r = r0 + i * Map::RSTEP, k = k0 + q * Map::KSTEP;
                if constexpr (WR == 4) {
                    if (!KCHK && !RCHK) {
                        cp_async16(d, src);
                    } else {
                        int n = RCHK ? rows - r : 4;      // valid floats along r
                        n = n < 0 ? 0 : (n > 4 ? 4 : n);
                        if (KCHK && k >= kend) n = 0;
                        cp_async16_zfill(d, n > 0 ? src : safe, 4 * n);
                    }
                } else {
                    if (!KCHK && !RCHK) {
                        cp_async4(d, src);
                    } else {
                        const bool ok = (!RCHK || r < rows) && (!KCHK || k < kend);
                        cp_async4_zfill(d, ok ? src : safe, ok ? 4 : 0);
                    }
                }
            }
    }
};

// Register-staged operand with the pipeline interface of AsyncStage: fetch()
// issues float4 global loads into registers, land() writes them (transposed
// when k-contiguous) into the stage named at fetch time.  Used by rung 10 for
// k-contiguous operands, which a 16-byte cp.async cannot transpose.
template <int R, int BK, int THREADS, bool KCONT, bool ALIGNED>
struct RegAsync {
    RegStage<R, BK, THREADS, KCONT, ALIGNED> rs;
    float* dst;
    __device__ __forceinline__ RegAsync(const float* panel, long long ld, int tid)
        : rs(panel, ld, tid), dst(nullptr) {}
    __device__ __forceinline__ void advance() { rs.advance(); }
    template <bool KCHK, bool RCHK>
    __device__ __forceinline__ void fetch(unsigned, float* sp, int rows, int kend, int tid) {
        rs.template load<KCHK, RCHK>(rows, kend, tid);
        dst = sp;
    }
    __device__ __forceinline__ void land(int tid) { rs.store(dst, tid); }
};

template <bool C, class T, class F> struct pick { using type = T; };
template <class T, class F> struct pick<false, T, F> { using type = F; };

// ---------------------------------------------------------------------------
// Warp-tiled micro-kernel.  The thread owns a TM x TN block of C made of
// (TM/4) x (TN/4) sub-tiles of 4 x 4; sub-tile it sits SA rows after it-1
// (SA = 4 * threads-per-warp along m), so a warp's LDS.128 for one sub-tile
// reads SA contiguous floats: one wavefront, no conflicts.  As/Bs point at the
// thread's first fragment (k = 0).
// ---------------------------------------------------------------------------
// One k-step's fragments: a[TM] from As row p, b[TN] from Bs row p.
template <int TM, int TN, int SA, int SB, int LDA, int LDB>
__device__ __forceinline__ void load_frag(const float* __restrict__ As,
                                          const float* __restrict__ Bs, int p, float (&a)[TM],
                                          float (&b)[TN]) {
#pragma unroll
    for (int it = 0; it < TM / 4; ++it) {
        const float4 x = *reinterpret_cast<const float4*>(As + p * LDA + it * SA);
        a[4 * it + 0] = x.x; a[4 * it + 1] = x.y; a[4 * it + 2] = x.z; a[4 * it + 3] = x.w;
    }
#pragma unroll
    for (int jt = 0; jt < TN / 4; ++jt) {
        const float4 x = *reinterpret_cast<const float4*>(Bs + p * LDB + jt * SB);
        b[4 * jt + 0] = x.x; b[4 * jt + 1] = x.y; b[4 * jt + 2] = x.z; b[4 * jt + 3] = x.w;
    }
}

// The outer product of one k-step: TM*TN FFMA.  SERP: odd rows walk j
// backwards (a serpentine), so each row's first FFMA reads the b[j] the
// previous row's last one read.  Each accumulator sees the same FMAs in the
// same order either way, so the outputs are the same bit for bit; what
// changes is ptxas's register allocation and schedule.  Rung 9 takes it in
// its unguarded blocks (09_double_buffer.cu, SGEMM_FFMA_SERP), where large
// layers ran 0.6-1.9 % faster (docs/notes/ffma-fast.md).
template <int TM, int TN, bool SERP = false>
__device__ __forceinline__ void ffma_step(const float (&a)[TM], const float (&b)[TN],
                                          float (&acc)[TM][TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) {
            const int j = SERP && (i & 1) ? TN - 1 - jj : jj;
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
}

// A whole k-tile.  UNROLL < BK (edge blocks) trades speed for registers.
template <int BK, int TM, int TN, int SA, int SB, int LDA, int LDB, int UNROLL = BK,
          bool SERP = false>
__device__ __forceinline__ void mma_ktile(const float* __restrict__ As,
                                          const float* __restrict__ Bs, float (&acc)[TM][TN]) {
#pragma unroll UNROLL
    for (int p = 0; p < BK; ++p) {
        float a[TM], b[TN];
        load_frag<TM, TN, SA, SB, LDA, LDB>(As, Bs, p, a, b);
        ffma_step<TM, TN, SERP>(a, b, acc);
    }
}

// The epilogue pass (common.cuh, epi_pass4) over the elements store_tile
// stored.  Not inlined: inlined, rung 9's 128x128 tile on sm_80 (capped at
// 128 registers for two blocks per SM) spilled 44 bytes.  A column's TM
// elements are read back together (float4s where store_tile wrote float4s),
// then finished and written: one L2 round trip per column, not one per four
// elements (the pass was latency-bound: a 2048x768->3072 layer took ~75 us
// more with bias + GELU than without on the H100, docs/notes/torch.md).
template <int TM, int TN, int SA, int SB, bool ALIGNED, bool EDGE, bool OWN>
__device__ __noinline__ void epi_tile(float* __restrict__ C, long long ldc, int m0, int n0,
                                      int M, int N, Epi ep, int mlo, int nlo) {
    constexpr int G = TM / 4;
    constexpr bool VEC = ALIGNED && !EDGE;
    for (int jt = 0; jt < TN / 4; ++jt)
        for (int v = 0; v < 4; ++v) {
            const int n = n0 + jt * SB + v;
            if (EDGE ? n >= N : (OWN && n < nlo)) continue;
            float* col = C + (long long)n * ldc;
            float x[G][4];
            bool ok[G][4];
#pragma unroll
            for (int it = 0; it < G; ++it) {
                const int m = m0 + it * SA;
#pragma unroll
                for (int u = 0; u < 4; ++u)      // VEC: a group is owned whole or not at all
                    ok[it][u] = EDGE ? m + u < M : (!OWN || (VEC ? m : m + u) >= mlo);
                if (VEC) {
                    if (ok[it][0]) {
                        const float4 r = ld4(col + m);
                        x[it][0] = r.x; x[it][1] = r.y; x[it][2] = r.z; x[it][3] = r.w;
                    }
                } else {
#pragma unroll
                    for (int u = 0; u < 4; ++u) if (ok[it][u]) x[it][u] = col[m + u];
                }
            }
#pragma unroll
            for (int it = 0; it < G; ++it) {
                const int m = m0 + it * SA;
                if (VEC) {
                    if (ok[it][0])
                        *reinterpret_cast<float4*>(col + m) =
                            make_float4(ep(x[it][0], m, n), ep(x[it][1], m + 1, n),
                                        ep(x[it][2], m + 2, n), ep(x[it][3], m + 3, n));
                } else {
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        if (ok[it][u]) col[m + u] = ep(x[it][u], m + u, n);
                }
            }
        }
}

// Epilogue: C(m0 + it*SA + u, n0 + jt*SB + v) <- alpha*acc + beta*C, then
// ep's bias and activation in a second, rolled pass (common.cuh).  With
// ALIGNED (C 16-byte aligned, ldc % 4 == 0) interior tiles go out as float4
// along m; edge tiles store element by element with guards.
// OWN (rung 9's shifted edge tiles): the tile was computed at [m0, n0), moved
// back inside C, and the block owns only rows >= mlo and columns >= nlo; the
// rows and columns before belong to the neighbouring block, which computes the
// same values but must be the only one to read-modify-write them (beta != 0).
// The caller keeps mlo - m0 a multiple of 4 when ALIGNED, so a float4 group is
// owned whole or not at all.
template <int TM, int TN, int SA, int SB, bool ALIGNED, bool EDGE, bool OWN = false>
__device__ __forceinline__ void store_tile(const float (&acc)[TM][TN], float* __restrict__ C,
                                           long long ldc, int m0, int n0, int M, int N,
                                           float alpha, float beta, Epi ep, int mlo = 0,
                                           int nlo = 0) {
    constexpr bool interior = !EDGE;
#pragma unroll
    for (int jt = 0; jt < TN / 4; ++jt)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            const int n = n0 + jt * SB + v;
            const bool own_n = !OWN || n >= nlo;
            float* col = C + (long long)n * ldc;
#pragma unroll
            for (int it = 0; it < TM / 4; ++it) {
                const int m = m0 + it * SA;
                const int i = 4 * it, j = 4 * jt + v;
                if (ALIGNED && interior) {
                    if (!own_n || (OWN && m < mlo)) continue;
                    float4* p = reinterpret_cast<float4*>(col + m);
                    float4 r = make_float4(alpha * acc[i][j], alpha * acc[i + 1][j],
                                           alpha * acc[i + 2][j], alpha * acc[i + 3][j]);
                    if (beta != 0.0f) {
                        const float4 c = *p;
                        r.x = fmaf(beta, c.x, r.x); r.y = fmaf(beta, c.y, r.y);
                        r.z = fmaf(beta, c.z, r.z); r.w = fmaf(beta, c.w, r.w);
                    }
                    *p = r;
                } else if (interior) {
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        if (own_n && (!OWN || m + u >= mlo))
                            store_c(col, m + u, acc[i + u][j], alpha, beta);
                } else if (n < N) {
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        if (m + u < M) store_c(col, m + u, acc[i + u][j], alpha, beta);
                }
            }
        }
    if (ep.code) epi_tile<TM, TN, SA, SB, ALIGNED, EDGE, OWN>(C, ldc, m0, n0, M, N, ep, mlo, nlo);
}

}  // namespace sg
