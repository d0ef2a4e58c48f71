// Scheme kernel 36 -- split-K inside a thread-block cluster ("splitk_cluster",
// the small-problem path).  sm_90 only.
//
// Problem: a 384^3 or 512^3 GEMM has 36-64 output tiles of 64x64, a third to
// a half of an H200's 132 SMs.  Split-K fills the rest, but the two-launch
// scheme (32) pays a second kernel and a workspace round trip, and the fused
// one (34) a global-memory handshake -- each ~2 us, the size of the gain.
// Here the CS blocks that share an output tile form one cluster (cluster dims
// 1 x 1 x CS, grid z = batch * CS).  Block r of the cluster computes slice r
// of K with 30_tile.cu's main loop (s30::Tile: the same tile parameters and
// cp.async pipeline), parks its partial tile in its OWN shared memory, and
// after one cluster barrier every block sums a 1/CS share of the tile over
// the CS blocks' shared memories (distributed shared memory, ld.shared::cluster
// through mapa), slices in the fixed order 0..CS-1 -- deterministic, bit-equal
// run to run -- and writes C with alpha/beta (beta == 0 never reads C).  A
// second barrier keeps every block's shared memory alive until the others have
// read it.  No workspace, no atomics, one launch.
// Slice depth kc = ceil(K / (CS * BK)) * BK, so every slice but the last is
// whole k-tiles (and a multiple of 4: ALIGNED survives the offset); slices
// past K are empty and contribute zeros.
// Measured (H100, public suite under CUDA graphs,
// bench/results/suite-h100-2026-11-25.json; reproduce: bash
// scripts/gpu_session.sh suite): 128^3 1.33x and 256^3 1.46x cuBLAS, in
// clusters of 2. The steps that got there: docs/notes/dispatch.md.
#include "30_tile.cu"
#include "cluster.cuh"

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          int CS, bool TA, bool TB, bool ALIGNED>
__global__ void __cluster_dims__(1, 1, CS)
__launch_bounds__(THREADS, (THREADS <= 256 ? 512 / THREADS : 1))
sgemm_splitk_cluster(SGEMM_PARAMS) {
    using T = s30::Tile<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED>;
    constexpr int E = T::G * T::NT;                 // float4s in a parked tile
    static_assert(CS >= 2 && CS <= 8, "a portable cluster holds 2..8 blocks");
    static_assert(E % CS == 0, "the tile's float4s split evenly over the cluster");
    extern __shared__ __align__(16) float smem[];
    sg::pdl_wait();

    const unsigned rank = cl::rank();      // = blockIdx.z % CS for 1 x 1 x CS
    const long long entry = blockIdx.z / CS;
    const int kc = (K + CS * BK - 1) / (CS * BK) * BK;
    const int kbeg = (int)rank * kc;
    const int KL = max(0, min(kc, K - kbeg));       // 0: an empty slice, zeros
    A += entry * strideA + (TA ? (long long)kbeg : (long long)kbeg * lda) * (KL > 0);
    B += entry * strideB + (TB ? (long long)kbeg * ldb : (long long)kbeg) * (KL > 0);
    C += entry * strideC;

    const T tile;
    float acc[TM][TN];
    tile.accumulate(A, lda, B, ldb, M, N, KL, smem, acc);

    // Park the partial tile in this block's shared memory (the pipeline's,
    // idle now: accumulate() ended with every copy landed; the barrier makes
    // sure no thread still reads the last stage).
    __syncthreads();
    float4* parked = reinterpret_cast<float4*>(smem);
    if (tile.kg == 0) tile.park(acc, [&](int e, float4 v) { parked[e] = v; });
    cl::sync();

    // This block's share of the tile, summed over the cluster in rank order:
    // all sums first, then all stores (see 38_db_cluster.cu).
    constexpr int ITER = (E / CS + THREADS - 1) / THREADS;
    const unsigned base = cl::saddr(parked);
    const int e0 = (int)rank * (E / CS) + tile.tid, e_end = ((int)rank + 1) * (E / CS);
    float4 sum[ITER];
#pragma unroll
    for (int i = 0; i < ITER; ++i)
        if (e0 + i * THREADS < e_end) sum[i] = cl::sum_ranks<CS>(base, e0 + i * THREADS);
    cl::arrive();      // done reading the cluster's shared memory
#pragma unroll
    for (int i = 0; i < ITER; ++i) {
        const int e = e0 + i * THREADS;
        if (e >= e_end) break;
        int m, n;
        tile.coord(e, m, n);
        if (n < N && m < M)
            sg::store4<ALIGNED>(C + (long long)n * ldc, m, M, sum[i], alpha, beta, SGEMM_EPI, n);
    }
    cl::wait();        // our shared memory stays until every block has read it
}
