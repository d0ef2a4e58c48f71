// Scheme kernel 38 -- rung 9's main loop, split over K inside a thread-block
// cluster ("db_cluster": small squares, and shapes too small to fill the GPU).
// sm_90.
//
// Adds over 36_splitk_cluster.cu: the per-block main loop.  Kernel 36 runs
// 30_tile.cu's cp.async loop, which measured ~37% of the FFMA peak per SM at
// 512^3 (64x64 tiles, one 128-thread block per SM: 14.1 us against cuBLAS's
// 12.9 under graphs).  Rung 9 (register prefetch + double buffer, 8x8 and
// 16x8 thread tiles) is the library's fastest FFMA loop (~95% of cuBLAS at
// 4096^3), so the CS blocks of a cluster each run it on one K slice:
//   block r of the cluster (1 x 1 x CS, grid z = batch * CS) computes slice r
//   of K with double_buffer_accumulate (the same code as rung 9, shifted edge
//   tiles included).  Block q of the cluster sums share q (1/CS) of the
//   BM x BN tile: every block pushes each share of its partial tile into the
//   owner's shared memory (distributed shared memory, remote stores: they do
//   not wait for the round trip), one cluster barrier, and the owner adds its
//   slots in the fixed order 0..CS-1 (bit-identical run to run) and writes C
//   with alpha/beta (beta == 0 never reads C).  One launch, no workspace, no
//   atomics.  An early relaxed arrival, waited on before the first remote
//   store, makes sure every block of the cluster has started.
// k-groups: THREADS may be KG = 1, 2 or 4 times the warp tiling's thread
// count GT.  Group g of the block then runs the same loop on its own slice
// (cluster rank r takes slices r*KG .. r*KG+KG-1), with its own shared
// buffers and named barrier: KG independent instruction streams per SM where
// a 64x64 tile alone keeps one warp per scheduler (latency-bound, ~44% of
// the FFMA peak in a K-depth sweep).  The groups first add their partial tiles
// inside the block, so one partial tile per block crosses the cluster: two
// groups serially (group 1 parks, group 0 adds), four in parallel (all park
// over their dead buffers, every thread adds a share: one-warp groups' fixed
// cost 3.26 us against 4.85 us for the serial sum).
// One block per SM is assumed (launch bounds: up to 255 registers), so
// unaligned loads are prefetched early as in rung 9's roomy configs.
// Slice depth kc = ceil(K / (CS * KG * BK)) * BK: whole k-tiles, a multiple
// of 4 (ALIGNED survives the offset); slices past K are empty and add zeros.
// Tiles of up to 64 accumulators a thread run double_buffer_accumulate's
// pipelined loop (PIPE: fragments one k-step ahead, also across k-tiles).
// Measured (H100, public suite, cuBLAS in the same process;
// bench/results/suite-h100-2026-11-25.json, reproduce: bash
// scripts/gpu_session.sh suite): under CUDA graphs 384^3 1.47x cuBLAS and 512^3
// 1.28x; in plain launches 768^3 1.27x, 16384x64x4096 0.92x, 64x16384x4096
// 0.98x (16x8 thread tiles "tall"/"wide") and 1023x1025x1021 0.86x. Fixed cost
// per launch (H200, K-depth sweep): 1.49 us at a cluster of one block against
// 1.34 for rung 9 launched directly, 2.55 for k4 in clusters of 2; the cluster
// launch itself adds nothing, and hoisting the owner's index arithmetic out of
// the sum saved ~0.6 us (ncu: ~500 instructions per warp at one warp per
// scheduler). The steps, and what did not pay: docs/notes/dispatch.md.
#include "09_double_buffer.cu"
#include "cluster.cuh"

namespace sg {
// Whether a block's k-groups add their partial tiles in parallel (four
// groups) or group 0 adds the other's (two).  The parallel sum cuts the
// fixed cost of four one-warp groups to 3.26 us from 4.85, but with two
// groups of 16x8 tiles it changes ptxas's schedule of the main loop:
// 16384x64x4096 took 247 us against 220 with the serial sum (H200).
// schemes.py's DB_PARALLEL_KGROUPS holds the same threshold (shared memory,
// rules).
__host__ __device__ constexpr bool db_parallel_combine(int kg) { return kg >= 4; }
}  // namespace sg

// The pipelined main loop (double_buffer_accumulate's PIPE) on unguarded
// tiles of up to 64 accumulators a thread.  H200, under graphs: 512^3 with
// "k4" 9.84 us against 9.96 without it, fixed cost 2.55 against 2.77 us.  The
// 16x8 tiles ("wide", "tall") need 246 and 255 registers with it, and
// 16384x64x4096 took 228-230 us against 217 without it (cuBLAS ~198), so
// they keep rung 9's loop.
// SG_DB_PIPE=0 (SGEMM_DEFINES) turns it off everywhere, for A/B runs.
#ifndef SG_DB_PIPE
#define SG_DB_PIPE 1
#endif
namespace sg {
template <int TM, int TN>
__host__ __device__ constexpr bool db_pipelined() { return SG_DB_PIPE != 0 && TM * TN <= 64; }
}  // namespace sg

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int CS,
          bool TA, bool TB, bool ALIGNED>
__global__ void __cluster_dims__(1, 1, CS) __launch_bounds__(THREADS, 1)
sgemm_db_cluster(SGEMM_PARAMS) {
    constexpr int GT = (BM / WM) * (BN / WN) * 32;     // threads of one k-group
    constexpr int KG = THREADS / GT;
    constexpr int A_FLOATS = BK * (BM + 4), B_FLOATS = BK * (BN + 4);
    constexpr int E = BM * BN / 4;                     // float4s in a partial tile
    constexpr int GROUP_FLOATS = 2 * (A_FLOATS + B_FLOATS);   // a group's k-tile buffers
    // How the k-groups of a block meet (sg::db_parallel_combine): four groups
    // add in parallel, every group parking its partial tile over the dead
    // k-tile buffers; two groups add serially, group 1 parking past the slots
    // and group 0 adding.
    constexpr bool PAR = sg::db_parallel_combine(KG);
    // float4s each block sums: whole strides of the threads that push (all
    // THREADS with PAR, else group 0's GT), so that the owner of a pushed
    // float4 is known at compile time and the owner's thread tile is the same
    // on every pass of its sum loop (e and e + THREADS belong to one thread).
    constexpr int PUSHERS = PAR ? THREADS : GT;
    constexpr int SHARE = (E + CS * PUSHERS - 1) / (CS * PUSHERS) * PUSHERS;
    constexpr int PER = E / THREADS;                   // float4s a thread adds with PAR
    constexpr int PARK = PAR ? KG * E : 0, BUFS = KG * GROUP_FLOATS / 4;
    constexpr int SLOT0 = PARK > BUFS ? PARK : BUFS;  // the slots that receive pushes
    using TT = sg::DbThreadTile<BM, BN, WM, WN, TM, TN>;
    static_assert(CS >= 1 && CS <= 8, "a portable cluster holds up to 8 blocks");
    static_assert(KG * GT == THREADS && (KG == 1 || KG == 2 || KG == 4),
                  "THREADS is 1, 2 or 4 k-groups of the warp tiling's threads");
    static_assert(!PAR || PER * THREADS == E, "k-groups must split a tile's float4s evenly");
    extern __shared__ float4 smem4[];
    sg::pdl_wait();
    if constexpr (CS > 1)
        cl::arrive_relaxed();      // "started": remote stores may target us (waited below)
    const int group = (int)threadIdx.x / GT, gtid = (int)threadIdx.x % GT;
    float* mine = reinterpret_cast<float*>(smem4) + group * GROUP_FLOATS;
    auto As = reinterpret_cast<float (*)[A_FLOATS]>(mine);
    auto Bs = reinterpret_cast<float (*)[B_FLOATS]>(mine + 2 * A_FLOATS);

    const unsigned rank = cl::rank();                  // = blockIdx.z % CS for 1 x 1 x CS
    const long long entry = blockIdx.z / CS;
    const int kc = (K + CS * KG * BK - 1) / (CS * KG * BK) * BK;
    const int kbeg = ((int)rank * KG + group) * kc;
    const int KL = max(0, min(kc, K - kbeg));          // 0: an empty slice, zeros
    A += entry * strideA + (TA ? (long long)kbeg : (long long)kbeg * lda) * (KL > 0);
    B += entry * strideB + (TB ? (long long)kbeg * ldb : (long long)kbeg) * (KL > 0);
    C += entry * strideC;

    // Edge blocks as in rung 9's roomy configs (double_buffer_dispatch): the
    // last full tile inside C when that is legal for the unguarded loop, else
    // the guarded one.  Every block of a cluster takes the same branch.
    const int mlo = blockIdx.x * BM, nlo = blockIdx.y * BN;
    const bool m_fast = mlo + BM <= M || (M >= BM && (!ALIGNED || M % 4 == 0));
    const bool n_fast = nlo + BN <= N || (N >= BN && (!ALIGNED || !TB || N % 4 == 0));
    const bool fast = m_fast && n_fast;
    const int bm0 = fast ? min(mlo, M - BM) : mlo, bn0 = fast ? min(nlo, N - BN) : nlo;
    float acc[TM][TN];
    if (fast)
        sg::double_buffer_accumulate<BM, BN, BK, WM, WN, TM, TN, GT, TA, TB, ALIGNED, false,
                                     true, KG, sg::db_pipelined<TM, TN>()>(A, lda, B, ldb, M, N, KL, bm0,
                                                                bn0, As, Bs, acc);
    else
        sg::double_buffer_accumulate<BM, BN, BK, WM, WN, TM, TN, GT, TA, TB, ALIGNED, true,
                                     true, KG>(A, lda, B, ldb, M, N, KL, bm0, bn0, As, Bs, acc);

    // Float4 `sub` (= it*TN + j) of the thread tile at (m0, n0) -- rows m0 +
    // it*SA .. +3 of column n0 + (j/4)*SB + j%4 -- into C with alpha/beta.  A
    // shifted block owns only rows >= mlo and columns >= nlo (rung 9's rule:
    // the neighbour computes the overlap too and must be its only writer).
    // `sub` is unsigned: shifts, no sign fix-ups.  (Not a generic lambda: the
    // device's NVRTC takes its template call operator for a host function.)
    auto store_sub = [&](int m0, int n0, unsigned sub, float4 v) {
        const int it = (int)(sub / TN), j = (int)(sub % TN);
        const int m = m0 + it * TT::SA, n = n0 + (j / 4) * TT::SB + j % 4;
        if (n < N && n >= nlo)
            sg::store4<ALIGNED, true>(C + (long long)n * ldc, m, M, v, alpha, beta, SGEMM_EPI,
                                      n, mlo);
    };
    float4* slots = smem4 + SLOT0;
    const unsigned rank_off = rank * SHARE;
    if constexpr (!PAR) {
        // Two groups meet in this block first: group 1 parks its partial
        // tile (float4 e = s*GT + gtid, conflict-free) past the slots and
        // group 0 adds it to its registers, so one partial tile per block
        // crosses the cluster.
        if constexpr (KG > 1) {
            float4* stage = slots + CS * SHARE;
            if (group > 0) {
#pragma unroll
                for (int it = 0; it < TM / 4; ++it)
#pragma unroll
                    for (int j = 0; j < TN; ++j)
                        stage[(group - 1) * E + (it * TN + j) * GT + gtid] =
                            make_float4(acc[4 * it][j], acc[4 * it + 1][j], acc[4 * it + 2][j],
                                        acc[4 * it + 3][j]);
            }
            __syncthreads();
            if (group == 0) {
#pragma unroll
                for (int g = 1; g < KG; ++g)
#pragma unroll
                    for (int it = 0; it < TM / 4; ++it)
#pragma unroll
                        for (int j = 0; j < TN; ++j) {
                            const float4 u = stage[(g - 1) * E + (it * TN + j) * GT + gtid];
                            acc[4 * it][j] += u.x; acc[4 * it + 1][j] += u.y;
                            acc[4 * it + 2][j] += u.z; acc[4 * it + 3][j] += u.w;
                        }
            }
        }
        // A cluster of one block: group 0 stores its registers as rung 9 does
        // (the smem round trip and its index arithmetic cost ~500
        // instructions per warp at one warp per scheduler, ncu).
        if constexpr (CS == 1) {
            if (group == 0) {
                const TT tt(gtid);
                if (fast)
                    sg::store_tile<TM, TN, TT::SA, TT::SB, ALIGNED, false, true>(
                        acc, C, ldc, bm0 + tt.a_off, bn0 + tt.b_off, M, N, alpha, beta,
                        SGEMM_EPI, mlo, nlo);
                else
                    sg::store_tile<TM, TN, TT::SA, TT::SB, ALIGNED, true>(
                        acc, C, ldc, bm0 + tt.a_off, bn0 + tt.b_off, M, N, alpha, beta,
                        SGEMM_EPI);
            }
            return;
        }
        // Group 0 pushes the block's partial tile: the float4 e = s*GT + gtid
        // of this thread's sub-tile s = it*TN + j (rows a_off + it*SA .. +3,
        // column b_off + jt*SB + v) belongs to block q = s*GT / SHARE, which
        // sums that share; it goes into q's slot for this block, with a remote
        // store (no round trip), or a plain one for this block's own share.
        cl::wait();                // every block of the cluster has started
        if (group == 0) {
            float4* own = slots + rank_off;
            const unsigned own_addr = cl::saddr(own);
#pragma unroll
            for (int it = 0; it < TM / 4; ++it)
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    const int s0 = (it * TN + j) * GT, q = s0 / SHARE;   // both compile-time
                    const int off = s0 - q * SHARE + gtid;
                    const float4 v = make_float4(acc[4 * it][j], acc[4 * it + 1][j],
                                                 acc[4 * it + 2][j], acc[4 * it + 3][j]);
                    if (q == (int)rank)
                        own[off] = v;
                    else
                        cl::st4(cl::remote(own_addr + 16u * off, q), v);
                }
        }
    } else {
        // Four groups add in parallel (with group 0 adding alone,
        // one-warp groups spent ~1.6 us of fixed cost in that serial sum).
        // Group g parks its tile at g*E (float4 e = s*GT + gtid) over the
        // dead k-tile buffers; then thread t adds float4s e = i*THREADS + t
        // over the groups in order 0..KG-1 -- all of owner thread t % GT =
        // gtid's tile, sub-tile e / GT = group + i*KG -- and stores them (a
        // cluster of one block) or pushes them to their owner.
        __syncthreads();           // every group is done with its k-tile buffers
#pragma unroll
        for (int it = 0; it < TM / 4; ++it)
#pragma unroll
            for (int j = 0; j < TN; ++j)
                smem4[group * E + (it * TN + j) * GT + gtid] =
                    make_float4(acc[4 * it][j], acc[4 * it + 1][j], acc[4 * it + 2][j],
                                acc[4 * it + 3][j]);
        __syncthreads();
        const TT tt(gtid);
        const int m0 = bm0 + tt.a_off, n0 = bn0 + tt.b_off;
        if constexpr (CS > 1)
            cl::wait();            // every block of the cluster has started
        const unsigned own_addr = cl::saddr(slots + rank_off);
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const int e = i * THREADS + (int)threadIdx.x;
            float4 v = smem4[e];
#pragma unroll
            for (int g = 1; g < KG; ++g) {
                const float4 u = smem4[g * E + e];
                v.x += u.x; v.y += u.y; v.z += u.z; v.w += u.w;
            }
            if constexpr (CS == 1) {
                store_sub(m0, n0, (unsigned)(group + i * KG), v);
            } else {
                const int q = i * THREADS / SHARE;             // compile-time
                const int off = e - q * SHARE;
                if (q == (int)rank)
                    slots[rank_off + off] = v;
                else
                    cl::st4(cl::remote(own_addr + 16u * off, q), v);
            }
        }
        if constexpr (CS == 1)
            return;
    }
    cl::sync();                    // every partial tile has landed

    // This block's share of the tile: its CS slots summed in the fixed order
    // (block 0, block 1, ...; each already the sum of its groups in group
    // order), bit-identical run to run.  Thread l sums the float4s
    // e = rank*SHARE + l + i*THREADS: all of owner thread e % GT's tile, sub-
    // tiles e / GT = g0 + i*KG.
    const int e_end = min(E, ((int)rank + 1) * SHARE) - (int)rank * SHARE;
    const unsigned e0 = rank_off + threadIdx.x;       // unsigned: shifts, no sign fix-ups
    const TT owner((int)(e0 % GT));
    const int m0 = bm0 + owner.a_off, n0 = bn0 + owner.b_off;
    unsigned g = e0 / GT;
    for (int l = (int)threadIdx.x; l < e_end; l += THREADS, g += KG) {
        float4 s = slots[l];
#pragma unroll
        for (int q = 1; q < CS; ++q) {
            const float4 u = slots[q * SHARE + l];
            s.x += u.x; s.y += u.y; s.z += u.z; s.w += u.w;
        }
        store_sub(m0, n0, g, s);
    }
}
