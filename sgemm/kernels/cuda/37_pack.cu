// Utility, not a GEMM: copy up to two operands into 16-byte-aligned, zero-padded
// workspace panels, so a problem whose operands forbid float4 access (odd
// leading dimension, odd base address, m or n not a multiple of 4) can run the
// ALIGNED instantiation of a fast kernel on the copies (the "pack" scheme:
// sgemm/packing.py builds the launches and says when it pays).
//
// One operand: a column-major panel of `rows` x `cols` at `src` (leading
// dimension `ld`, any alignment) goes to `dst` with leading dimension `ldd`
// (a multiple of 4, dst 16-byte aligned) and `cols_pad` >= cols columns;
// everything outside the source (rows [rows, ldd), columns [cols, cols_pad))
// is written as 0.0f, so no later float4 read of the panel sees garbage.
// Grid: x blocks stride over the panel's float4 groups, column by column
// (group t: column t / (ldd/4), rows 4 (t mod ldd/4) ...), z = operand (0 or
// 1; a launch with one operand has z = 1).  A grid of the two panels' largest
// row count by their largest column count (as first written) launched
// 4.3 million mostly idle blocks for a 46691 x 642 panel beside a 335 x
// 46691 one: 5.3 ms of copies where the bytes take ~80 us (H100).
// Each thread reads 4 consecutive source floats (scalar: the source is not
// aligned) and writes one float4: reads and writes are coalesced.
#include "common.cuh"

namespace sg {

__device__ __forceinline__ void pack_panel(int rows, int cols, const float* __restrict__ src,
                                           long long ld, float* __restrict__ dst,
                                           long long ldd, int cols_pad) {
    const long long groups = ldd / 4;                     // float4 groups per column
    const long long total = groups * cols_pad;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += step) {
        const long long j = t / groups;
        const long long i = (t - j * groups) * 4;
        float e[4];
        const float* s = src + j * ld + i;
#pragma unroll
        for (int u = 0; u < 4; ++u) e[u] = (j < cols && i + u < rows) ? s[u] : 0.0f;
        *reinterpret_cast<float4*>(dst + j * ldd + i) = make_float4(e[0], e[1], e[2], e[3]);
    }
}

}  // namespace sg

__global__ void __launch_bounds__(256)
pack_operands(int rows0, int cols0, const float* __restrict__ src0, long long ld0,
              float* __restrict__ dst0, long long ldd0, int cols_pad0,
              int rows1, int cols1, const float* __restrict__ src1, long long ld1,
              float* __restrict__ dst1, long long ldd1, int cols_pad1) {
    sg::pdl_wait();   // the previous kernel may still be writing A or B
    if (blockIdx.z == 0)
        sg::pack_panel(rows0, cols0, src0, ld0, dst0, ldd0, cols_pad0);
    else
        sg::pack_panel(rows1, cols1, src1, ld1, dst1, ldd1, cols_pad1);
}
