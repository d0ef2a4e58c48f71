// The sm_90 plumbing the wgmma kernels share (21_tf32x3_wgmma.cu, and through
// it 22_tf32x3_wgmma_rs.cu; 42_int8_wgmma.cu): shared-memory addresses, the
// async-proxy fence, the matrix descriptor and the wgmma group fences.  One
// copy, so a descriptor fix reaches every kernel that issues wgmma.
#pragma once

namespace wg {

__device__ __forceinline__ unsigned int smem_u32(const void* p) {
    return static_cast<unsigned int>(__cvta_generic_to_shared(p));
}

// Generic-proxy writes to shared memory (st.shared, cp.async) made visible to
// the async proxy that wgmma reads through.
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
// bits 0-13 start address >> 4, 16-29 leading byte offset >> 4 (unused by
// swizzled K-major layouts: 1), 32-45 stride byte offset >> 4 (1024: the next
// 8-row group), 62-63 layout (1: 128-byte swizzle).
__device__ __forceinline__ unsigned long long make_desc(unsigned int saddr) {
    return (unsigned long long)((saddr & 0x3FFFF) >> 4)
         | ((unsigned long long)1 << 16)
         | ((unsigned long long)(1024 >> 4) << 32)
         | ((unsigned long long)1 << 62);
}
__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// After a wait: tell the compiler the accumulators changed here, so no read or
// write of them moves across the wait.
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R>
__device__ __forceinline__ void fence_acc(int (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

}  // namespace wg
