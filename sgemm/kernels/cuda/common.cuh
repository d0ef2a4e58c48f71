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
// Indices that can pass 2^31 (lda * column, batch offsets) are 64-bit: a
// 50000 x 50000 matrix has 2.5e9 elements.
#pragma once

#define SGEMM_PARAMS                                                           \
    int M, int N, int K, float alpha,                                          \
    const float* __restrict__ A, long long lda, long long strideA,             \
    const float* __restrict__ B, long long ldb, long long strideB,             \
    float beta, float* __restrict__ C, long long ldc, long long strideC

namespace sg {

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

// C(i,j) <- alpha*acc + beta*C(i,j); C is not read when beta == 0.
__device__ __forceinline__ void store_c(float* C, long long off, float acc,
                                        float alpha, float beta) {
    C[off] = (beta == 0.0f) ? alpha * acc : fmaf(beta, C[off], alpha * acc);
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
