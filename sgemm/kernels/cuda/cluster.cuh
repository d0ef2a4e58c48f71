// cluster.cuh -- thread-block cluster primitives (sm_90) shared by the
// split-K-in-a-cluster kernels (36_splitk_cluster.cu, 38_db_cluster.cu):
// the block's rank, a cluster-wide barrier, and loads from another block's
// shared memory (distributed shared memory, PTX mapa + ld.shared::cluster).
#pragma once

namespace cl {

__device__ __forceinline__ unsigned rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
// All threads of all blocks of the cluster; release/acquire orders each
// block's shared-memory stores (parked tiles, 36; stores pushed into other
// blocks, 38) before the loads that follow the barrier anywhere in the cluster.
// ptxas compiles the release to MEMBAR.ALL.GPU and the acquire to an L1
// invalidate (CCTL.IVALL).  A transaction-barrier exchange without them
// (st.async onto the owner's mbarrier) measured 0.15 us less
// fixed cost at a cluster of one block, 0.4 us more for two k-groups in
// clusters of 2, and racecheck reported it; not kept (docs/notes/dispatch.md).
__device__ __forceinline__ void sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// The same barrier in two halves: arrive once this block's reads of the
// others' shared memory are done (release: they are performed before it),
// wait before exiting, so that no block's shared memory goes away while
// another still reads it.  What lies between (the stores to C) overlaps the
// barrier instead of waiting behind it.
__device__ __forceinline__ void arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// An arrival that publishes nothing (the first barrier of 38_db_cluster.cu:
// "every block of the cluster has started", before the first remote store).
__device__ __forceinline__ void arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
// The address of the same shared-memory location in block `rank` of the cluster.
__device__ __forceinline__ unsigned remote(unsigned local, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(local), "r"(rank));
    return r;
}
__device__ __forceinline__ float4 ld4(unsigned addr) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
    return v;
}
// A store into another block's shared memory (its address from remote()):
// fire and forget, unlike a remote load, which waits the round trip.
__device__ __forceinline__ void st4(unsigned addr, float4 v) {
    asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n"
                 ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
__device__ __forceinline__ unsigned saddr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Element e of the parked partial tiles (float4s at `base` in every block's
// shared memory), summed over the CS blocks in rank order 0..CS-1: the same
// bits whichever block sums it.  All CS loads go out before the first add.
template <int CS>
__device__ __forceinline__ float4 sum_ranks(unsigned base, int e) {
    float4 u[CS];
#pragma unroll
    for (int q = 0; q < CS; ++q) u[q] = ld4(remote(base + 16u * e, q));
#pragma unroll
    for (int q = 1; q < CS; ++q) {
        u[0].x += u[q].x; u[0].y += u[q].y; u[0].z += u[q].z; u[0].w += u[q].w;
    }
    return u[0];
}

}  // namespace cl
