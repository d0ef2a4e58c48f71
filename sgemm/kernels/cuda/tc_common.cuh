// tc_common.cuh -- helpers shared by the tensor-core kernels (20_*, 21_*).
//
// 3xTF32 (CUTLASS "3xTF32"; Ootomo & Yokota 2022): every FP32 operand x is
// split into big = tf32(x) and small = tf32(x - big) (both rounded to nearest,
// ties away, by cvt.rna), and
//     a*b ~= big_a*big_b + big_a*small_b + small_a*big_b
// with FP32 accumulation.  |x - big - small| <= 2^-22 |x| and the dropped
// small_a*small_b term is <= 2^-22 |a||b|, so each product carries an error
// of a few FP32 ulps; the tensor-core accumulation then behaves like a
// blocked FP32 sum.  precision="tf32" keeps only big_a*big_b.
//
// Special values.  The split is not closed under Inf/NaN: small = Inf - Inf
// is NaN, and big_a*small_b with a = Inf and small_b = 0 is NaN where plain
// FFMA gives Inf.  Values within 2^-11 of FLT_MAX would round to Inf in the
// split.  So every split also ORs a flag, "this input is not a finite number
// below 0x1.ffep127", and a block that saw one recomputes its tile of C with
// plain FFMA in the same kernel (sg::ffma_tile below).  NaN/Inf therefore
// propagate exactly as in the FFMA path; finite data never pays for it beyond
// one compare per split element.
#pragma once
#include "common.cuh"

namespace tc {

// NVRTC has no <cstdint>.
using u32 = unsigned int;
using u64 = unsigned long long;

// Round an FP32 value to TF32 (10 explicit mantissa bits), nearest, ties away.
__device__ __forceinline__ float to_tf32(float x) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}

// True when x is not safe to split (NaN, +-Inf, or so large that rounding it
// to TF32 overflows).
__device__ __forceinline__ bool unsplittable(float x) {
    return !(fabsf(x) < 0x1.ffep127f);
}

// cvt.rna.tf32.f32 for a finite x below 0x1.ffep127, in two integer ops:
// adding 0x1000 (half of the lowest kept mantissa bit, bit 13) to the bit
// pattern and clearing the 13 low bits rounds the magnitude to nearest, ties
// away from zero; a carry out of the mantissa bumps the exponent, as rounding
// must.  ptxas expands cvt.rna.tf32.f32 into four ops (an |x| < Inf test and a
// select guard Inf/NaN), and the 3xTF32 producer does two of these per element:
// on sm_90a the split was most of the producer warpgroup's instructions
// (docs/notes/tensorcore.md).  Inf/NaN/huge x give garbage here (canonical NaN
// 0x7fffffff even wraps to -0), which is why only the flagged X3 split uses it.
__device__ __forceinline__ float to_tf32_finite(float x) {
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u);
}

// big/small split of one value; X3 == false only rounds (small unused).
// X3: every x that to_tf32_finite would get wrong sets `bad`, and a block
// that saw one never uses its tensor-core result (ffma_tile below), so the
// cheap rounding is exact wherever its result is used.  X3 == false (1xTF32,
// no flag) keeps cvt.rna so that Inf and NaN survive the rounding.
template <bool X3>
__device__ __forceinline__ void split(float x, float& big, float& small, bool& bad) {
    if (X3) {
        big = to_tf32_finite(x);
        small = to_tf32_finite(x - big);   // x - big is exact (|x - big| <= 2^-11 |x|)
        bad |= unsplittable(x);
    } else {
        big = to_tf32(x);
        small = 0.0f;
    }
}

// Plain FFMA recomputation of the C tile [m0, m0+bm) x [n0, n0+bn): the
// fallback for blocks whose inputs held Inf/NaN/huge values (see above).  Slow
// (every thread streams a row of A and a column of B from global memory), and
// only ever run on such inputs.
template <bool TA, bool TB>
__device__ __noinline__ void ffma_tile(int M, int N, int K, float alpha,
                                       const float* __restrict__ A, long long lda,
                                       const float* __restrict__ B, long long ldb,
                                       float beta, float* __restrict__ C, long long ldc,
                                       sg::Epi ep, int m0, int n0, int bm, int bn, int tid,
                                       int nthreads) {
    for (int e = tid; e < bm * bn; e += nthreads) {
        const int i = m0 + e % bm, j = n0 + e / bm;
        if (i >= M || j >= N) continue;
        float acc = 0.0f;
        for (int p = 0; p < K; ++p)
            acc = fmaf(A[sg::a_off<TA>(i, p, lda)], B[sg::b_off<TB>(p, j, ldb)], acc);
        sg::store_c(C, (long long)j * ldc + i, acc, alpha, beta, ep, i, j);
    }
}

}  // namespace tc
