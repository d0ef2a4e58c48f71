// common.cuh -- the contract every FP32 kernel of the ladder follows.
//
// The canonical problem (see sgemm/layout.py, which maps every user call onto it):
//
//   C[m x n, column-major, ldc] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C
//
//   TA == false : A is stored m x k column-major:  op(A)(i,p) = A[i + p*lda]
//   TA == true  : A is stored k x m column-major:  op(A)(i,p) = A[p + i*lda]
//   TB == false : B is stored k x n column-major:  op(B)(p,j) = B[p + j*ldb]
//   TB == true  : B is stored n x k column-major:  op(B)(p,j) = B[j + p*ldb]
//
// Strided batch: blockIdx.z selects the batch entry; A, B and C advance by
// strideA, strideB, strideC elements (0 broadcasts an operand over the batch).
//
// Epilogue rule (netlib): beta == 0 means C is never read, so NaN/Inf already in
// C cannot leak into the result.  Only the m x n block of C is ever written.
//
// Fused epilogue: C = act(alpha * op(A) * op(B) + beta * C + bias).  `bias`
// and `epi` are two more runtime arguments (not template parameters, so the
// number of instantiations does not change): `epi` holds the activation in
// its low three bits and says whether bias[i] (a vector along the canonical
// rows, EPI_BIAS_M) or bias[j] (along the columns, EPI_BIAS_N) is added; the
// host picks the axis (sgemm/epilogue.py), since a row-major C is computed
// transposed.  epi == 0 is the plain GEMM, one uniform branch per store.
// Every store of a final C element goes through store_c / store4 / Epi below,
// exactly once: split-K's slices and partial tiles are written without it and
// the kernel that sums them applies it.
//
// Indices that can pass 2^31 (lda * column, batch offsets) are 64-bit: a
// 50000 x 50000 matrix has 2.5e9 elements.
#pragma once

#define SGEMM_PARAMS                                                           \
    int M, int N, int K, float alpha,                                          \
    const float* __restrict__ A, long long lda, long long strideA,             \
    const float* __restrict__ B, long long ldb, long long strideB,             \
    float beta, float* __restrict__ C, long long ldc, long long strideC,       \
    const float* __restrict__ bias, int epi

// The same arguments, for kernels that hand them to a device function.
#define SGEMM_ARGS M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, \
    bias, epi

namespace sg {

// Epilogue codes; sgemm/epilogue.py holds the same numbers.  An enum, not
// constexpr variables: NVRTC emits those as symbols whose names carry a
// per-process id, which made two compiles of one kernel differ in bytes
// (the kernel cache's tests compare them).
enum EpiCode : int {
    EPI_RELU = 1, EPI_GELU = 2, EPI_GELU_TANH = 3, EPI_SILU = 4,
    EPI_ACT = 7, EPI_BIAS_M = 8, EPI_BIAS_N = 16
};

// The activations in PyTorch's formulas (torch.nn.functional's relu, gelu
// with approximate="none" and "tanh", silu), in accurate libdevice
// functions rather than the MUFU approximations: the point of the library
// is FP32-level accuracy.  relu keeps NaN (torch.relu(nan) is nan).  Its
// code is long (erff alone is tens of instructions): it appears only in
// rolled loops and a few sites per kernel (see epi_pass4; activate_chunk below for
// a loop body that needs it straight-line).
__device__ __forceinline__ float activate(float v, int act) {
    switch (act) {
    case EPI_RELU: return v < 0.0f ? 0.0f : v;
    case EPI_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case EPI_GELU_TANH: {
        const float u = 0.79788456080286536f * fmaf(0.044715f * v, v * v, v);
        return 0.5f * v * (1.0f + tanhf(u));
    }
    // __fdividef (2 ulp) rather than '/': IEEE division brings a slow-path
    // subroutine whose call made a gemv block spill 8 bytes.  Past v < -87
    // the denominator overflows and it returns -0 (torch: -0 or ~1e-37).
    case EPI_SILU: return __fdividef(v, 1.0f + expf(-v));
    default: return v;
    }
}

// Bias and activation of one element at canonical (i, j), applied after
// alpha and beta.  Built from the kernel's (bias, epi) arguments: SGEMM_EPI.
struct Epi {
    const float* bias;
    int code;
    __device__ __forceinline__ float add_bias(float v, int i, int j) const {
        if (code & EPI_BIAS_M) return v + __ldg(bias + i);
        if (code & EPI_BIAS_N) return v + __ldg(bias + j);
        return v;
    }
    __device__ __forceinline__ float operator()(float v, int i, int j) const {
        return activate(add_bias(v, i, j), code & EPI_ACT);
    }
};
#define SGEMM_EPI (sg::Epi{bias, epi})

// activate(v, A) on every element of a chunk, one copy per activation A
// (compile time), so its latency chains interleave (21_tf32x3_wgmma.cu's
// store_tile_epi).  Template functions, not a generic lambda: the GPU
// machine's NVRTC rejected an unannotated generic lambda as a host function
// in JIT mode (NVRTC 13.5 on the CPU machine took it).
template <int A, int CB>
__device__ __forceinline__ void activate_chunk(float (&v)[CB][4]) {
#pragma unroll
    for (int b = 0; b < CB; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) v[b][q] = activate(v[b][q], A);
}
template <int CB>
__device__ __forceinline__ void activate_chunk(float (&v)[CB][4], int act) {
    switch (act) {
    case EPI_RELU: activate_chunk<EPI_RELU>(v); break;
    case EPI_GELU: activate_chunk<EPI_GELU>(v); break;
    case EPI_GELU_TANH: activate_chunk<EPI_GELU_TANH>(v); break;
    case EPI_SILU: activate_chunk<EPI_SILU>(v); break;
    default: break;
    }
}

// op(A)(i, p) and op(B)(p, j) as 64-bit offsets into the stored arrays.
template <bool TA>
__device__ __forceinline__ long long a_off(int i, int p, long long lda) {
    return TA ? (long long)i * lda + p : (long long)p * lda + i;
}
template <bool TB>
__device__ __forceinline__ long long b_off(int p, int j, long long ldb) {
    return TB ? (long long)p * ldb + j : (long long)j * ldb + p;
}

// Programmatic dependent launch (sm_90+).  The launcher starts every FP32
// kernel with the "programmatic stream serialization" attribute, so its
// blocks may be scheduled while the previous kernel on the stream is still
// finishing.  griddepcontrol.wait then blocks until that kernel has completed
// and its memory is visible: it must come before the kernel's first global
// access (read *or* write: the previous kernel may still read our C).
// launch_dependents lets the next such kernel be scheduled as soon as all of
// our blocks have started; it too waits before touching memory.  Together they
// hide the ~2 us launch gap between back-to-back small GEMMs (CUDA graphs,
// split-K's two launches).  Without the attribute both are no-ops.  Every
// kernel calls this first (SGEMM_BATCH_OFFSET does); tests/kernels checks it.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Move the three pointers to this block's batch entry (a macro because the
// kernel parameters are __restrict__ and cannot bind to plain references),
// after the programmatic-launch wait above.
#define SGEMM_BATCH_OFFSET()                                                   \
    do {                                                                       \
        sg::pdl_wait();                                                        \
        const long long z_ = blockIdx.z;                                       \
        A += z_ * strideA;                                                     \
        B += z_ * strideB;                                                     \
        C += z_ * strideC;                                                     \
    } while (0)

// alpha*acc + beta*C[off]; C is not read when beta == 0 (it may hold NaN).
__device__ __forceinline__ float scale_c(const float* C, long long off, float acc,
                                         float alpha, float beta) {
    return (beta == 0.0f) ? alpha * acc : fmaf(beta, C[off], alpha * acc);
}

// C(i,j) <- alpha*acc + beta*C(i,j).  No epilogue: split-K's partial slices,
// and the first pass of the heavily unrolled stores (epi_pass below).
__device__ __forceinline__ void store_c(float* C, long long off, float acc,
                                        float alpha, float beta) {
    C[off] = scale_c(C, off, acc, alpha, beta);
}

// C(i,j) <- act(alpha*acc + beta*C(i,j) + bias); C is not read when beta == 0.
// C + off must address element (i, j) (i, j index the bias).
__device__ __forceinline__ void store_c(float* C, long long off, float acc, float alpha,
                                        float beta, Epi ep, int i, int j) {
    float r = scale_c(C, off, acc, alpha, beta);
    if (ep.code) r = ep(r, i, j);
    C[off] = r;
}

// The epilogue of four consecutive rows m..m+3 of column n.
__device__ __forceinline__ float4 epi4(float4 r, Epi ep, int m, int n) {
    if (ep.code) {
        r.x = ep(r.x, m, n); r.y = ep(r.y, m + 1, n);
        r.z = ep(r.z, m + 2, n); r.w = ep(r.w, m + 3, n);
    }
    return r;
}

// Second pass of the epilogue for stores unrolled over a whole thread tile
// (64-128 elements: rungs 5-12, 30/34's tile, 20's mma tile, gemv):
// there, bias loads and activation code at every element site are compiled
// 64-128 times and hoisted over the live accumulators -- rung 9's
// 256x64 tile (16x8 per thread) went from 214/228 registers (sm_80/sm_90a)
// to 224/254 and from ~4 s to ~70 s of compile per instantiation, for every
// call, epilogue or not.  So those kernels store alpha*acc + beta*C as
// before and then, when epi != 0, walk the same elements in a rolled loop,
// the accumulators dead: each element is read back (a thread sees its own
// stores), passed through Epi and written again, once.  r0..r3 say whether
// rows m..m+3 of column n are this thread's to finish.
__device__ __forceinline__ void epi_pass4(float* col, int m, int n, Epi ep,
                                          bool r0, bool r1, bool r2, bool r3) {
    float v[4];
    const bool ok[4] = {r0, r1, r2, r3};
#pragma unroll
    for (int u = 0; u < 4; ++u) if (ok[u]) v[u] = col[m + u];
#pragma unroll
    for (int u = 0; u < 4; ++u) if (ok[u]) col[m + u] = ep(v[u], m + u, n);
}

// One element of such a pass.
__device__ __forceinline__ void epi_at(float* p, Epi ep, int i, int j) { *p = ep(*p, i, j); }

// The pass over a strided grid of one thread's elements, rows i0 + r*di (r <
// nr) by columns j0 + c*dj (c < nc), inside M x N.  Not inlined: rung 5's
// 128x128 tile on sm_80 spilled 40 bytes with the pass inlined (ptxas capped
// that instantiation at 128 registers); called, it takes 147 registers
// instead of 135, no spills, the same one block of 256 threads per SM.
__device__ __noinline__ void epi_grid(float* C, long long ldc, int M, int N, int i0, int di,
                                      int nr, int j0, int dj, int nc, Epi ep) {
    for (int c = 0; c < nc; ++c) {
        const int j = j0 + c * dj;
        if (j >= N) continue;
        for (int r = 0; r < nr; ++r) {
            const int i = i0 + r * di;
            if (i < M) epi_at(C + (long long)j * ldc + i, ep, i, j);
        }
    }
}

// C(m..m+3, n) <- alpha * v + beta * C(m..m+3, n); float4 when the rows
// allow it, guarded scalars at the bottom edge (beta == 0: C is not read).
// OWN: only rows >= mlo are this block's (rung 9's shifted edge tiles); with
// ALIGNED the caller keeps mlo - m a multiple of 4 or the group scalar.
template <bool ALIGNED, bool OWN = false>
__device__ __forceinline__ void store4(float* col, int m, int M, float4 v, float alpha,
                                       float beta, int mlo = 0) {
    if (ALIGNED && m + 3 < M && (!OWN || m >= mlo)) {
        float4* p = reinterpret_cast<float4*>(col + m);
        float4 r = make_float4(alpha * v.x, alpha * v.y, alpha * v.z, alpha * v.w);
        if (beta != 0.0f) {
            const float4 c = *p;
            r.x = fmaf(beta, c.x, r.x); r.y = fmaf(beta, c.y, r.y);
            r.z = fmaf(beta, c.z, r.z); r.w = fmaf(beta, c.w, r.w);
        }
        *p = r;
    } else {
        const float a[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (m + u < M && (!OWN || m + u >= mlo)) store_c(col, m + u, a[u], alpha, beta);
    }
}

// The same with the epilogue, col = C + n*ldc: for stores in rolled loops
// (the split-K sums, the cluster kernels), where it costs no registers.
template <bool ALIGNED, bool OWN = false>
__device__ __forceinline__ void store4(float* col, int m, int M, float4 v, float alpha,
                                       float beta, Epi ep, int n, int mlo = 0) {
    if (ALIGNED && m + 3 < M && (!OWN || m >= mlo)) {
        float4* p = reinterpret_cast<float4*>(col + m);
        float4 r = make_float4(alpha * v.x, alpha * v.y, alpha * v.z, alpha * v.w);
        if (beta != 0.0f) {
            const float4 c = *p;
            r.x = fmaf(beta, c.x, r.x); r.y = fmaf(beta, c.y, r.y);
            r.z = fmaf(beta, c.z, r.z); r.w = fmaf(beta, c.w, r.w);
        }
        *p = epi4(r, ep, m, n);
    } else {
        const float a[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (m + u < M && (!OWN || m + u >= mlo))
                store_c(col, m + u, a[u], alpha, beta, ep, m + u, n);
    }
}

// C <- alpha * acc + beta * C for a warp tile held as 4x4 sub-tiles, when C
// is not 16-byte aligned (ldc % 4 != 0 or an odd pointer).  Thread tiles lie
// as in rungs 8-9 and 30_tile.cu: lane (l % LM, l / LM) holds rows
// (l % LM) * 4 + it * 4 * LM + u and columns (l / LM) * 4 + jt * 4 * LN + v of
// the warp's WM x WN tile at (mw, nw).  Stored from registers, each float4
// group would leave as four scalars 16 bytes apart, so a warp store fills a
// quarter of each sector it touches.  Instead, for each column group (jt, v),
// the warp parks its WM x LN piece in `park` (WM * LN floats of its own,
// 16-byte aligned) and writes it back with its lanes along m: 32 consecutive
// floats of one column per store.  Only rows in [mlo, M) and columns in
// [nlo, N) are written (rung 9's shifted edge tiles own part of theirs).
// UNROLL: the write-back's loads from park all issue before its stores when
// unrolled (rolled, each store waited on its load: 0.78-0.87x the scalar
// stores on batched 64x64 tiles, H200); configs at their register cap pass
// less (rung 9's medium spilled 16 bytes unrolled).
// Measured (H200, same plans, bench/results/parked-store-ab-h200-2026-11-27.json):
// 1.12x the scalar stores in geometric mean over 28 store-heavy problems of
// the judge's distribution (0.88-2.16x; batched 64x64 tiles lose 7-12 %).
template <int TM, int TN, int LM, int UNROLL = TM>
__device__ __forceinline__ void store_parked(const float (&acc)[TM][TN], float* park,
                                             float* C, long long ldc, int mw, int nw, int M,
                                             int N, float alpha, float beta, int mlo = 0,
                                             int nlo = 0) {
    constexpr int LN = 32 / LM, WM = LM * TM, SA = 4 * LM, SB = 4 * LN;
    const int lane = threadIdx.x & 31;
    float* mine = park + (lane / LM) * WM + (lane % LM) * 4;
#pragma unroll
    for (int jt = 0; jt < TN / 4; ++jt)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            const int j = 4 * jt + v;
#pragma unroll
            for (int it = 0; it < TM / 4; ++it)
                *reinterpret_cast<float4*>(mine + it * SA) =
                    make_float4(acc[4 * it][j], acc[4 * it + 1][j], acc[4 * it + 2][j],
                                acc[4 * it + 3][j]);
            __syncwarp();
#pragma unroll UNROLL
            for (int s = 0; s < TM; ++s) {
                const int e = 32 * s + lane;
                const int m = mw + e % WM, n = nw + (e / WM) * 4 + jt * SB + v;
                if (m >= mlo && m < M && n >= nlo && n < N)
                    store_c(C, (long long)n * ldc + m, park[e], alpha, beta);
            }
            __syncwarp();
        }
}

// 16-byte vector load / store helpers (caller guarantees alignment).
__device__ __forceinline__ float4 ld4(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}

// ---- one-launch split-K (34_splitk_fused.cu, gemv_wide in 33_gemv.cu) ----
// Release/acquire increment at GPU scope: the partial-tile stores ordered
// before it (via __syncthreads + the fence in every thread) are visible to
// whichever block observes the incremented value.
__device__ __forceinline__ unsigned count_in(unsigned* p) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(old) : "l"(p) : "memory");
    return old;
}

__device__ __forceinline__ void add_to(float& a, float b) { a += b; }
__device__ __forceinline__ void add_to(float4& a, float4 b) {
    a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
}

// Element e of n slots `stride` apart, summed in slot order 0..n-1 (the same
// bits whichever block sums them), read through L2 (__ldcg: other SMs wrote
// them).  Loads go out 8 slots at a time before any is added: with one load
// in flight per add, the last block's tail measured ~18 us at 16 slots.
template <class T>
__device__ __forceinline__ T sum_slots(const T* slots, long long stride, int n, long long e) {
    T s = __ldcg(slots + e);
    for (int q0 = 1; q0 < n; q0 += 8) {
        T u[8];
#pragma unroll
        for (int i = 0; i < 8; ++i)
            if (q0 + i < n) u[i] = __ldcg(slots + (long long)(q0 + i) * stride + e);
#pragma unroll
        for (int i = 0; i < 8; ++i)
            if (q0 + i < n) add_to(s, u[i]);
    }
    return s;
}

}  // namespace sg
