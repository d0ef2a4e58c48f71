// Scheme kernels 40 -- the integer engine's conversion and reconstruction
// (Ozaki scheme II; the host arithmetic and an exact NumPy emulation are in
// sgemm/int8x/, which these kernels must match bit for bit).
//
// A matrix X (rows x cols, X(r, c) = X[r * sr + c * sc]: A's rows over k,
// or B's columns over k) goes to INT8 residue planes: per row the exponent
// e_r that puts a bound on the row's 2-norm at most at 2^bits
// (i8x::row_exponent; 0 for an all-zero row), X'(r, c) = rint(X(r, c) 2^e_r)
// (|X'| <= 2^31 - 128), and for each
// modulus p_l the residue in [-p/2, p/2) as int8, plane l row-major:
// out[l * plane + r * ld + c] (k contiguous, what the INT8 GEMMs,
// 41_int8_mma.cu and 42_int8_wgmma.cu, read; columns [cols, ld) are zeros,
// ld a multiple of 16).  Any Inf or NaN raises *bad (the engine then leaves
// the call to FP32: such values have no integer form).  Two routes, by
// which index is contiguous in memory (sgemm/int8x/device.py picks):
//   int8x_convert_rows<N> (a row is contiguous, or neither index is): one
//     block per row reads it once, keeps it in registers, reduces the
//     maximum and the norm bound and writes the planes -- one read of X;
//   int8x_rowmax, int8x_rownorm, then int8x_residues<N> (the row index is
//     the contiguous one: a column-major A, a row-major B): a whole row is a
//     strided walk, so coalesced passes take the row maxima (atomicMax on the
//     float bits) and then the norm bounds (which scale by the maxima), and a
//     tile kernel reads X again down its columns and writes the planes
//     k-contiguous through shared memory -- three reads of X.
// The residues themselves: X' in int32 (two exact float multiplies and one
// rounding conversion), then per modulus one unsigned division by the
// modulus as a compile-time constant (a multiply-high and a shift), no
// correction step and no int<->float conversion (i8x::sym_residue_of).
// After the INT8 GEMMs (41/42: byte planes, C'_l mod p_l in [0, p) as
// uint8, column-major like C, rows padded to a multiple of 16):
//   int8x_garner<N>: per element C' from its residues by the Chinese
//     remainder theorem in 64-bit integers (see the kernel), converted to
//     double once, scaled by 2^-(mu_i + nu_j), then C = alpha C' + beta C in
//     double, rounded once to float; beta == 0 never reads C.
// Each waits on griddepcontrol first (launched with PDL on sm_90 like the
// other FP32 kernels).  The moduli and Garner's constants come in one int
// array (sgemm/int8x/moduli.py, kernel_constants); the residue kernels use
// the same moduli as constants (i8x::modulus).
// Measured (H200, each kernel alone under ncu at the GPU's own clocks,
// bench/results/int8-steps-const-h200-2026-11-29.log): at 8192^3 the rows
// route 0.31 ms, the tiles route 0.08 + 0.30 ms, Garner 0.33 ms; at 16384^3
// 1.14-1.22, 0.28 + 1.24-1.26 and 1.55-1.61 ms.  The conversions are
// instruction-bound, which is why the moduli are constants: a runtime
// modulus needs two correction steps a residue, a third of the work
// (docs/notes/int8x.md).  Those times predate the norm scaling; with it the
// public path at 8 moduli ran within 1.2 % of them on one H200
// (int8x-norm-ab-h200-2026-11-29.log), and its bits let precision="fp32"
// run 7 moduli: 174.8 TFLOPS at 16384^3 (int8-fp32-moduli-h200-2026-11-29.json).
#include "common.cuh"
#include "int8_common.cuh"

namespace i8x {
// 2^k as a float for -126 <= k <= 127 (clamped: a garbage exponent from an
// Inf/NaN row, whose result is discarded, must not make a bad bit pattern).
__device__ __forceinline__ float pow2f(int k) {
    return __int_as_float((min(max(k, -126), 127) + 127) << 23);
}

// ---- norm scaling: the row's exponent ----
// Row r's exponent e_r puts a bound on its 2-norm, not its largest entry,
// under 2^bits: |C'_ij| <= ||A'_i.|| ||B'_.j|| (Cauchy-Schwarz) is what the
// moduli must cover, with no factor k (sgemm/int8x/moduli.py, budget).  From
// the largest entry's binade E (float bits, as RowStats below: bexp - 127,
// -127 for a subnormal or zero maximum) the row's entries give
//   S = sum_c max(ceil(X(r, c)^2 2^(20 - 2E)), [X(r, c) != 0])
// an integer upper bound on ||X(r, .)||^2 / 4^E in units of 2^-20 (exact
// integer sums: the same S in any order of addition), t the least integer
// with 4^t >= S, and the gap D = t - 10, so ||X(r, .)|| <= 2^(E + D) and
// e_r = min(bits - D, 30) - E (0 for an all-zero row) makes ||X'(r, .)|| <=
// 2^bits before rounding and keeps every |X'| below 2^31 (moduli.ENTRY_BITS:
// |X| < 2^(E + 1)).  reference.exponents emulates it exactly.
// sq_unit: y = |x| 2^(10 - E) by two exact power-of-two products while y is
// normal (y < 2^11), then ceil(y^2) through a product rounded up (y^2 <
// 2^22, so ceil of the rounded-up float is ceil of the exact square); a y
// below 2^-126 has y^2 < 1, and the max makes it the one unit any nonzero
// entry adds.
__device__ __forceinline__ void sq_scale(unsigned maxbits, float& q1, float& q2) {
    const int e = 10 + 127 - (int)(maxbits >> 23);     // in [-118, 137]
    q1 = pow2f(min(e, 127));
    q2 = pow2f(e > 127 ? e - 127 : 0);
}
__device__ __forceinline__ unsigned sq_unit(float x, float q1, float q2) {
    const float y = __fmul_rn(__fmul_rn(fabsf(x), q1), q2);
    return max(__float2uint_ru(__fmul_ru(y, y)), (__float_as_uint(x) << 1) != 0u ? 1u : 0u);
}
// 4 entries: < 2^24, a 32-bit sum
__device__ __forceinline__ unsigned sq_unit4(float4 v, float q1, float q2) {
    return sq_unit(v.x, q1, q2) + sq_unit(v.y, q1, q2) + sq_unit(v.z, q1, q2) +
           sq_unit(v.w, q1, q2);
}
// D = t - 10 for S >= 1 (a nonzero row)
__device__ __forceinline__ int norm_gap(unsigned long long S) {
    return ((64 - __clzll((long long)(S - 1ull)) + 1) >> 1) - 10;
}
__device__ __forceinline__ int row_exponent(unsigned maxbits, unsigned long long S, int bits) {
    return maxbits != 0u ? min(bits - norm_gap(S), 30) - ((int)(maxbits >> 23) - 127) : 0;
}

// X' = rint(x 2^e) in int32.  e = min(bits - D, 30) - E lies in [bits -
// 144, 157] (E in [-127, 127]; D in [-10, 17] for k < 2^31), inside [-126,
// 157] for bits >= 18 (device.convert checks).  The scaling is two float
// multiplies s1 = 2^min(e, 127), s2 = 2^(e - 127) or 1: x s1 is exact
// whenever it is normal (for e > 127 always: x >= 2^-149), and a subnormal x
// s1 has |x 2^e| < 2^-126, which rounds to 0 anyway; the second product is
// then exact too (normal, below 2^31).  |x 2^e| < 2^(E + 1) 2^(30 - E) =
// 2^31, so the product is at most 2^31 - 128 (the float below 2^31) and
// __float2int_rn (round half to even, np.rint's rule) is exact.
__device__ __forceinline__ int scaled(float x, float s1, float s2) {
    return __float2int_rn(__fmul_rn(__fmul_rn(x, s1), s2));
}

// The moduli as constants: sgemm/int8x/moduli.py's moduli(8), the pairwise
// coprime integers taken greedily from 256 down (moduli(N) is its first N;
// tests/int8x/test_residues.py checks this table against it), so that each
// residue below divides by a constant.
__device__ __forceinline__ constexpr unsigned modulus(int l) {
    return l == 0 ? 256u : l == 1 ? 255u : l == 2 ? 253u : l == 3 ? 251u
         : l == 4 ? 247u : l == 5 ? 241u : l == 6 ? 239u : 233u;
}

// The symmetric residue of X' for modulus L, in [lo, lo + p), lo = -floor(p/2)
// (reference.residues: [-p/2, p/2) for even p, [-(p-1)/2, (p-1)/2] for odd),
// from u = X' + 2^31 (X' with its sign bit flipped): s = ((X' - lo) mod p) +
// lo, where X' - lo = u - 2^31 - lo is congruent to u - 128 + E for the
// constant E = (128 - 2^31 - lo) mod p in [0, p).  |X'| <= 2^31 - 128
// (scaled's bound) puts u in [128, 2^32 - 128], so u - 128 + E lies in
// [0, 2^32): one unsigned division by the constant p (a multiply-high and a
// shift) gives the residue with no correction step.  An Inf/NaN row's X'
// (saturated) may wrap here: its result is discarded (*bad).
// tests/int8x/test_residues.py emulates this in uint32/int32.
template <int L>
__device__ __forceinline__ int sym_residue_of(unsigned u) {
    constexpr unsigned P = modulus(L);
    constexpr int LO = -(int)(P / 2);
    constexpr long long T = 128LL - 2147483648LL - LO;
    constexpr unsigned E = (unsigned)(((T % (long long)P) + (long long)P) % (long long)P);
    return (int)((u + (E - 128u)) % P) + LO;
}
// sym_residue_of<l> for an l the unrolled loops make a constant.
__device__ __forceinline__ int sym_residue(int v, int l) {
    const unsigned u = (unsigned)v ^ 0x80000000u;
    switch (l) {
        case 0: return sym_residue_of<0>(u);
        case 1: return sym_residue_of<1>(u);
        case 2: return sym_residue_of<2>(u);
        case 3: return sym_residue_of<3>(u);
        case 4: return sym_residue_of<4>(u);
        case 5: return sym_residue_of<5>(u);
        case 6: return sym_residue_of<6>(u);
        default: return sym_residue_of<7>(u);
    }
}

// Four consecutive columns' residues packed little-endian into one word.
__device__ __forceinline__ unsigned pack4(int a, int b, int c, int d) {
    return (unsigned)(a & 0xff) | (unsigned)(b & 0xff) << 8 | (unsigned)(c & 0xff) << 16 |
           (unsigned)d << 24;
}

// ---- the scaling's error check (sgemm/int8x/bound.py) ----
// Per row of X, while its entries pass through: the largest entry's binade
// E (2^E <= max < 2^(E+1), from its float bits: E = bexp - 127, subnormal
// and zero maxima take bexp = 0), and
//   units = sum_c ceil(|X(r, c)| 2^(20 - E))  (|X|_1 / 2^E in 2^-20 steps,
//           rounded up entry by entry: an upper bound, exact integer sums,
//           so the order of the additions cannot change the decision);
//   cnt_q = #{c : |X(r, c)| >= 2^(E - T_q)} for T_q in THRESHOLDS (the
//           threshold kept at least 2^-126: subnormal entries never count).
// Each operand's summary (uint64 words, zeroed but for the counts, which
// start at 2^32 - 1): st[0] the non-finite flag is separate (int *bad);
// st[1] = max over nonzero rows of units, st[2 + q] = min over nonzero rows
// of cnt_q, st[2 + NT] = max over nonzero rows of max(D, 0) (the norm
// scaling's gap, above: the scaling's step is 2^-(min(bits - D, 30) + 1) of
// 2^E).  Per
// entry: two multiplies, one rounding-up conversion and NT compares; per row
// NT + 2 atomics.  A null summary (device.convert(
// stats=False)) skips all of it, for timing the check's cost.
enum : int { NT = 6, UNIT_BITS = 20 };
__device__ __forceinline__ int threshold(int q) {      // bound.THRESHOLDS
    return q == 0 ? 0 : q == 1 ? 1 : q == 2 ? 2 : q == 3 ? 4 : q == 4 ? 7 : 11;
}
struct RowStats {
    unsigned long long units;
    unsigned cnt[NT];
    float tau[NT], s1, s2;
    // maxbits: the float bits of the row's largest magnitude
    __device__ __forceinline__ void init(unsigned maxbits) {
        const int be = (int)(maxbits >> 23);
        units = 0ull;
#pragma unroll
        for (int q = 0; q < NT; ++q) {
            cnt[q] = 0u;
            tau[q] = __int_as_float(max(be - threshold(q), 1) << 23);
        }
        const int e = UNIT_BITS + 127 - be;            // in [-107, 147]
        s1 = pow2f(min(e, 127));
        s2 = pow2f(e > 127 ? e - 127 : 0);
    }
    // ceil(|x| 2^(20 - E)) (< 2^21), at least 1 for x != 0, and the counts.
    // The two power-of-two products are exact while the result is normal; a
    // subnormal or underflowed one (|x| more than ~127 binades below the
    // row's largest) is below 1 anyway, and the max makes it one unit, as
    // bound.summarize's float64 ceil does.  One rounding-up conversion.
    __device__ __forceinline__ unsigned unit(float x) {
        const float a = fabsf(x);
#pragma unroll
        for (int q = 0; q < NT; ++q) cnt[q] += a >= tau[q] ? 1u : 0u;
        return max(__float2uint_ru(__fmul_rn(__fmul_rn(a, s1), s2)),
                   __float_as_uint(a) != 0u ? 1u : 0u);
    }
    __device__ __forceinline__ void add(float x) { units += unit(x); }
    // 4 entries: a 32-bit sum (< 2^23) first
    __device__ __forceinline__ void add4(float4 v) {
        units += unit(v.x) + unit(v.y) + unit(v.z) + unit(v.w);
    }
    // the warp's sum into lane 0 (every lane holds a part)
    __device__ __forceinline__ void warp_sum() {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            units += __shfl_xor_sync(0xffffffffu, units, o);
#pragma unroll
            for (int q = 0; q < NT; ++q) cnt[q] += __shfl_xor_sync(0xffffffffu, cnt[q], o);
        }
    }
};
// One finished row into its operand's summary (rows whose largest entry is
// 0 add no error and are left out).
__device__ __forceinline__ void publish(unsigned long long* st, unsigned maxbits,
                                        unsigned long long units, const unsigned* cnt,
                                        int gap) {
    if (maxbits == 0u) return;
    atomicMax(st + 1, units);
#pragma unroll
    for (int q = 0; q < NT; ++q) atomicMin(st + 2 + q, (unsigned long long)cnt[q]);
    atomicMax(st + 2 + NT, (unsigned long long)max(gap, 0));
}

// int8x_convert_rows' shape: one block of RT threads per row, each thread
// 4 consecutive columns at a time; RCACHE 4-column groups a thread kept in
// registers between the maximum and the conversion (rows up to RT * 4 *
// RCACHE = 16384 columns are read once; longer rows read their tail twice,
// the second time mostly from L2).  The residue tile of int8x_residues: TR
// rows x TC columns per block of 256 threads, staged in shared memory as
// int8 planes [N][TR][PITCH], PITCH = TC + 4 bytes = 33 words (odd), so the
// 32 rows of a warp's word stores hit 32 distinct banks.  (An enum:
// namespace-scope constexpr variables become per-process symbols.)
enum : int { RT = 256, RCACHE = 16, PUT_UNROLL = 4, TR = 32, TC = 128, PITCH = TC + 4,
             THREADS = 256, MAX_COLS = 256 };
}  // namespace i8x

// int8x_convert_rows<N>: block r converts row r (grid: rows in x).  Phase 1
// reads the row as 4-column groups (a float4 when the row is contiguous and
// 16-byte aligned, else 4 loads), keeping the first RCACHE groups a thread
// in registers, and reduces the maximum and the finite flag over the block,
// then the norm bound S from the kept groups (the tail past them read
// again, from L2); phase 2 converts and writes each plane's word for the
// group (a warp 128 consecutive bytes a plane), through ld (the zero padding
// included).
template <int N>
__global__ void __launch_bounds__(i8x::RT)
int8x_convert_rows(int rows, int cols, const float* __restrict__ X, long long sr, long long sc,
                   int bits, int* __restrict__ e, int* __restrict__ bad,
                   unsigned long long* __restrict__ st, signed char* __restrict__ out, long long ld,
                   long long plane) {
    using namespace i8x;
    static_assert(N >= 1 && N <= 8, "i8x::modulus holds the first 8 moduli");
    __shared__ float wmax[RT / 32];
    __shared__ unsigned long long wunits[RT / 32];
    __shared__ unsigned wcnt[RT / 32][NT];
    __shared__ unsigned long long wsq[RT / 32];
    sg::pdl_wait();   // the previous kernel may still be writing X
    const long long r = blockIdx.x;
    const float* x = X + r * sr;
    const bool vec = sc == 1 && (reinterpret_cast<unsigned long long>(x) & 15) == 0;
    const int groups = (cols + 3) / 4;
    auto load = [&](int g) -> float4 {
        const int c = 4 * g;
        if (vec && c + 3 < cols) return *reinterpret_cast<const float4*>(x + c);
        float4 v;
        v.x = c < cols ? x[(long long)c * sc] : 0.0f;
        v.y = c + 1 < cols ? x[(long long)(c + 1) * sc] : 0.0f;
        v.z = c + 2 < cols ? x[(long long)(c + 2) * sc] : 0.0f;
        v.w = c + 3 < cols ? x[(long long)(c + 3) * sc] : 0.0f;
        return v;
    };
    auto fold = [](float m, float4 v) {
        return fmaxf(fmaxf(m, fmaxf(fabsf(v.x), fabsf(v.y))), fmaxf(fabsf(v.z), fabsf(v.w)));
    };
    auto finite4 = [](float4 v) {
        return isfinite(v.x) && isfinite(v.y) && isfinite(v.z) && isfinite(v.w);
    };

    // ---- phase 1: read once, the maximum and the finite flag ----
    float4 xs[RCACHE];
    float m = 0.0f;
    bool finite = true;
#pragma unroll
    for (int i = 0; i < RCACHE; ++i) {                 // all loads first: RCACHE in flight
        const int g = threadIdx.x + i * RT;
        xs[i] = g < groups ? load(g) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int i = 0; i < RCACHE; ++i) {
        m = fold(m, xs[i]);
        finite = finite && finite4(xs[i]);
    }
    for (int g = threadIdx.x + RCACHE * RT; g < groups; g += RT) {
        const float4 v = load(g);
        m = fold(m, v);
        finite = finite && finite4(v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) wmax[threadIdx.x / 32] = m;
    const bool any_bad = __syncthreads_or(!finite);    // also orders wmax
    m = wmax[0];
#pragma unroll
    for (int w = 1; w < RT / 32; ++w) m = fmaxf(m, wmax[w]);

    // ---- phase 1b: the norm bound S (zeros past cols add nothing) ----
    float q1, q2;
    sq_scale(__float_as_uint(m), q1, q2);
    unsigned long long sq = 0ull;
#pragma unroll
    for (int i = 0; i < RCACHE; ++i) sq += sq_unit4(xs[i], q1, q2);
    for (int g = threadIdx.x + RCACHE * RT; g < groups; g += RT) sq += sq_unit4(load(g), q1, q2);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    if ((threadIdx.x & 31) == 0) wsq[threadIdx.x / 32] = sq;
    __syncthreads();
    sq = 0ull;
#pragma unroll
    for (int w = 0; w < RT / 32; ++w) sq += wsq[w];
    const int er = i8x::row_exponent(__float_as_uint(m), sq, bits);
    if (threadIdx.x == 0) {
        e[r] = er;
        if (any_bad) atomicOr(bad, 1);
    }

    // ---- phase 2: convert, one word a plane per 4-column group ----
    const float s1 = pow2f(er), s2 = pow2f(er > 127 ? er - 127 : 0);
    signed char* o = out + r * ld;
    RowStats rs;
    rs.init(__float_as_uint(m));
    const bool check = st != nullptr;                  // device.convert(stats=False): no check
    auto put = [&](int g, float4 v) {
        if (check) rs.add4(v);                         // past cols: zeros, which add nothing
        const int a = scaled(v.x, s1, s2), b = scaled(v.y, s1, s2);
        const int c = scaled(v.z, s1, s2), d = scaled(v.w, s1, s2);
#pragma unroll
        for (int l = 0; l < N; ++l)
            *reinterpret_cast<unsigned*>(o + l * plane + 4 * g) =
                pack4(sym_residue(a, l), sym_residue(b, l), sym_residue(c, l),
                      sym_residue(d, l));
    };
    const int words = (int)(ld / 4);        // ld is a multiple of 16: whole words
    // The cached groups PUT_UNROLL at a time in a rolled loop, the cache
    // shifted down after each step: unrolled RCACHE times, put's ~600
    // instructions overflowed the instruction cache once rows passed 8192
    // columns (ncu, H100: 0.38 stalls a issue on no instruction at 8192,
    // 7.2 at 16384, where the kernel took 4.3 ms against 0.52).
#pragma unroll 1
    for (int i = 0; i < RCACHE; i += PUT_UNROLL) {
        if (threadIdx.x + i * RT >= words) break;
#pragma unroll
        for (int u = 0; u < PUT_UNROLL; ++u) {
            const int g = threadIdx.x + (i + u) * RT;
            if (g < words) put(g, xs[u]);              // past cols: zeros, residue 0
        }
#pragma unroll
        for (int u = 0; u + PUT_UNROLL < RCACHE; ++u) xs[u] = xs[u + PUT_UNROLL];
    }
    for (int g = threadIdx.x + RCACHE * RT; g < words; g += RT)
        put(g, g < groups ? load(g) : make_float4(0.0f, 0.0f, 0.0f, 0.0f));

    // ---- the row's statistics (sgemm/int8x/bound.py) ----
    if (!check) return;
    rs.warp_sum();
    if ((threadIdx.x & 31) == 0) {
        wunits[threadIdx.x / 32] = rs.units;
#pragma unroll
        for (int q = 0; q < NT; ++q) wcnt[threadIdx.x / 32][q] = rs.cnt[q];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long units = 0ull;
        unsigned cnt[NT];
#pragma unroll
        for (int q = 0; q < NT; ++q) cnt[q] = 0u;
        for (int w = 0; w < RT / 32; ++w) {
            units += wunits[w];
#pragma unroll
            for (int q = 0; q < NT; ++q) cnt[q] += wcnt[w][q];
        }
        publish(st, __float_as_uint(m), units, cnt, norm_gap(sq));
    }
}

namespace i8x {
// The column walk of int8x_rowmax and int8x_rownorm: a lane's 4 rows r..r+3
// (zeros past rows) at the block's MAX_COLS columns from c0, warp w taking
// every 8th; one float4 when sr == 1 and the columns are 16-byte aligned (a
// warp reads 512 contiguous bytes of a column), 4 loads otherwise; f(v) per
// column.
template <typename F>
__device__ __forceinline__ void walk_rows4(const float* __restrict__ X, int rows, int cols,
                                           long long sr, long long sc, long long r, int c0,
                                           int w, F&& f) {
    if (r >= rows) return;
    const bool vec = sr == 1 && (sc & 3) == 0 &&
                     (reinterpret_cast<unsigned long long>(X) & 15) == 0 && r + 3 < rows;
#pragma unroll 8
    for (int i = 0; i < MAX_COLS / 8; ++i) {
        const long long c = c0 + w + 8 * i;
        if (c < cols) {
            float v[4];
            if (vec) {
                const float4 x4 = *reinterpret_cast<const float4*>(X + r + c * sc);
                v[0] = x4.x; v[1] = x4.y; v[2] = x4.z; v[3] = x4.w;
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) v[q] = r + q < rows ? X[(r + q) * sr + c * sc] : 0.0f;
            }
            f(v);
        }
    }
}
}  // namespace i8x

// int8x_rowmax: the row maxima of X where the row index is the contiguous
// one (sr == 1), as float bits in maxbits (zeroed by the caller; non-negative
// floats order as unsigned ints), and the finite flag.  A block takes 128
// rows, 4 consecutive ones a lane (one float4 when sr == 1 and the columns
// are 16-byte aligned: a warp reads 512 contiguous bytes of a column; 4
// loads otherwise), and MAX_COLS columns, a warp every 8th; one atomicMax a
// row a block.
__global__ void __launch_bounds__(256, 4)
int8x_rowmax(int rows, int cols, const float* __restrict__ X, long long sr, long long sc,
             unsigned* __restrict__ maxbits, int* __restrict__ bad) {
    using namespace i8x;
    __shared__ __align__(16) float part[8][128];
    sg::pdl_wait();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long r = ((long long)blockIdx.x * 32 + lane) * 4;
    float m[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    bool finite = true;
    walk_rows4(X, rows, cols, sr, sc, r, blockIdx.y * MAX_COLS, w, [&](const float* v) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            finite = finite && isfinite(v[q]);
            m[q] = fmaxf(m[q], fabsf(v[q]));
        }
    });
    *reinterpret_cast<float4*>(&part[w][4 * lane]) = make_float4(m[0], m[1], m[2], m[3]);
    const bool any_bad = __syncthreads_or(!finite);
    if (threadIdx.x < 128) {
        const long long rr = (long long)blockIdx.x * 128 + threadIdx.x;
        float mm = part[0][threadIdx.x];
#pragma unroll
        for (int q = 1; q < 8; ++q) mm = fmaxf(mm, part[q][threadIdx.x]);
        if (rr < rows && mm > 0.0f) atomicMax(maxbits + rr, __float_as_uint(mm));
        if (threadIdx.x == 0 && any_bad) atomicOr(bad, 1);
    }
}

// int8x_rownorm: the norm bounds S of X's rows (the tiles route, between
// int8x_rowmax and int8x_residues), summed into norm (uint64 a row, zeroed
// by the caller; integer sums, so the order of the atomics cannot change
// them).  The same blocks and reads as int8x_rowmax, each lane scaling its 4
// rows by their maxima.
__global__ void __launch_bounds__(256, 4)
int8x_rownorm(int rows, int cols, const float* __restrict__ X, long long sr, long long sc,
              const unsigned* __restrict__ maxbits, unsigned long long* __restrict__ norm) {
    using namespace i8x;
    __shared__ unsigned long long part[8][128];
    sg::pdl_wait();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long r = ((long long)blockIdx.x * 32 + lane) * 4;
    float q1[4], q2[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) sq_scale(r + q < rows ? maxbits[r + q] : 0u, q1[q], q2[q]);
    unsigned long long s[4] = {0ull, 0ull, 0ull, 0ull};
    walk_rows4(X, rows, cols, sr, sc, r, blockIdx.y * MAX_COLS, w, [&](const float* v) {
#pragma unroll
        for (int q = 0; q < 4; ++q) s[q] += sq_unit(v[q], q1[q], q2[q]);
    });
#pragma unroll
    for (int q = 0; q < 4; ++q) part[w][4 * lane + q] = s[q];
    __syncthreads();
    if (threadIdx.x < 128) {
        const long long rr = (long long)blockIdx.x * 128 + threadIdx.x;
        unsigned long long t = 0ull;
#pragma unroll
        for (int q = 0; q < 8; ++q) t += part[q][threadIdx.x];
        if (rr < rows && t) atomicAdd(norm + rr, t);
    }
}

// int8x_residues<N>: one block per TR x TC tile of X (grid: column tiles up
// to ld in x, row tiles in y: consecutive blocks walk along the planes' rows,
// so a wave writes whole plane rows -- the planes are two thirds of the
// bytes -- and reads 32-row column segments), the row maxima from
// int8x_rowmax.  Phase 1:
// lane t of warp w reads row t of the tile at the column groups w, w + 8,
// w + 16, w + 24 (4 columns each), so each load instruction reads 32
// consecutive rows of one column (128 bytes when sr == 1, the layout this
// route is for; other strides are correct, only slower); it converts and
// stores each plane's 4 bytes as one word in shared memory.  Phase 2 writes
// each plane's rows with k contiguous as 4-byte words, a warp a 128-byte row
// segment.  Blocks of column tile 0 write the exponents.
template <int N>
__global__ void __launch_bounds__(i8x::THREADS)
int8x_residues(int rows, int cols, const float* __restrict__ X, long long sr, long long sc,
               const unsigned* __restrict__ maxbits,
               const unsigned long long* __restrict__ norm, int bits, int* __restrict__ e,
               signed char* __restrict__ out, long long ld,
               long long plane, unsigned long long* __restrict__ row_units,
               unsigned* __restrict__ row_cnt) {
    using namespace i8x;
    static_assert(N >= 1 && N <= 8, "i8x::modulus holds the first 8 moduli");
    static_assert(N * TR * PITCH + THREADS * (8 + 4 * NT) <= 48 * 1024,
                  "the staged planes and the row statistics must fit static shared memory");
    static_assert(THREADS == 8 * TR && TC == 4 * 4 * 8, "a lane a row, 8 warps x 4 groups");
    __shared__ __align__(16) signed char tile[N][TR][PITCH];
    __shared__ unsigned long long sunits[THREADS / 32][TR];
    __shared__ unsigned scnt[NT][THREADS / 32][TR];
    sg::pdl_wait();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long r0 = (long long)blockIdx.y * TR, c0 = (long long)blockIdx.x * TC;
    const long long gr = r0 + lane;

    // ---- phase 1: read, convert, stage ----
    float x[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)                        // all loads first: 16 in flight
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) {
            const long long gc = c0 + 4 * (w + 8 * j) + cc;
            x[j][cc] = gr < rows && gc < cols ? X[gr * sr + gc * sc] : 0.0f;
        }
    const unsigned mb = gr < rows ? maxbits[gr] : 0u;
    const int er = gr < rows ? row_exponent(mb, norm[gr], bits) : 0;
    if (blockIdx.x == 0 && w == 0 && gr < rows) e[gr] = er;
    const bool check = row_units != nullptr;           // device.convert(stats=False): no check
    if (check) {   // the row's statistics over this tile's 16 entries of it
        // (zeros past the edges add nothing); summed over the 8 warps below
        RowStats rs;
        rs.init(mb);
        unsigned u = 0u;                               // < 16 * 2^21
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int cc = 0; cc < 4; ++cc) u += rs.unit(x[j][cc]);
        sunits[w][lane] = u;
#pragma unroll
        for (int q = 0; q < NT; ++q) scnt[q][w][lane] = rs.cnt[q];
    }
    const float s1 = pow2f(er), s2 = pow2f(er > 127 ? er - 127 : 0);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        int v[4];
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) v[cc] = scaled(x[j][cc], s1, s2);
#pragma unroll
        for (int l = 0; l < N; ++l)
            *reinterpret_cast<unsigned*>(&tile[l][lane][4 * (w + 8 * j)]) =
                pack4(sym_residue(v[0], l), sym_residue(v[1], l),
                      sym_residue(v[2], l), sym_residue(v[3], l));
    }
    __syncthreads();
    if (check && w == 0 && gr < rows && mb != 0u) {    // one add per row and statistic a block
        unsigned long long units = 0ull;
        for (int ww = 0; ww < THREADS / 32; ++ww) units += sunits[ww][lane];
        if (units) atomicAdd(row_units + gr, units);
#pragma unroll
        for (int q = 0; q < NT; ++q) {
            unsigned c = 0u;
            for (int ww = 0; ww < THREADS / 32; ++ww) c += scnt[q][ww][lane];
            if (c) atomicAdd(row_cnt + (long long)q * rows + gr, c);
        }
    }

    // ---- phase 2: planes out, k contiguous, 4 bytes a thread ----
    // Word `lane` of rows w, w + 8, w + 16 and w + 24 of every plane: a warp
    // stores 128 contiguous bytes of one row.  Unrolled with the addresses
    // hoisted (a rolled loop that derived plane, row and word from one
    // index spent ~20 instructions an element on it).  ld is a multiple of
    // 16, so a word is wholly inside [0, ld) or past it; columns [cols, ld)
    // hold the residues of 0.
    const long long gc = c0 + 4 * lane;
    if (gc < ld) {
        signed char* o = out + r0 * ld + gc;
#pragma unroll
        for (int i = 0; i < TR / 8; ++i) {
            const int r = w + 8 * i;
            if (r0 + r < rows) {
#pragma unroll
                for (int l = 0; l < N; ++l)
                    *reinterpret_cast<int*>(o + l * plane + r * ld) =
                        *reinterpret_cast<const int*>(&tile[l][r][4 * lane]);
            }
        }
    }
}

// int8x_row_stats: the tiles route's per-row statistics (the gap from norm, row_units,
// row_cnt[q * rows + r], summed by int8x_residues over the row's tiles)
// into the operand's summary, one thread a row, a warp's minimum and maximum
// first (32x fewer atomics on the summary's 7 words).
__global__ void __launch_bounds__(256)
int8x_row_stats(int rows, const unsigned* __restrict__ maxbits,
                const unsigned long long* __restrict__ norm,
                const unsigned long long* __restrict__ row_units,
                const unsigned* __restrict__ row_cnt, unsigned long long* __restrict__ st) {
    using namespace i8x;
    sg::pdl_wait();
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = r < rows && maxbits[r] != 0u;   // all-zero rows add no error
    unsigned long long units = live ? row_units[r] : 0ull;
    int gap = live ? norm_gap(norm[r]) : 0;
    unsigned cnt[NT];
#pragma unroll
    for (int q = 0; q < NT; ++q) cnt[q] = live ? row_cnt[q * rows + r] : 0xffffffffu;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        units = max(units, __shfl_xor_sync(0xffffffffu, units, o));
        gap = max(gap, __shfl_xor_sync(0xffffffffu, gap, o));
#pragma unroll
        for (int q = 0; q < NT; ++q) cnt[q] = min(cnt[q], __shfl_xor_sync(0xffffffffu, cnt[q], o));
    }
    const bool any = __any_sync(0xffffffffu, live);
    if ((threadIdx.x & 31) == 0 && any) publish(st, 1u, units, cnt, gap);
}

// int8x_garner<N>: byte planes in (what 41/42 write: C'_l mod p_l in
// [0, p), column-major, R[l plane + i + j ldr], every row < ldr written),
// FP32 out.  Each thread takes 16 consecutive rows of one column: one
// 16-byte load a plane (all N issued before any arithmetic: 128 bytes in
// flight a thread, where the 4-row version had 32 and ran at ~1 TB/s), a
// warp 512 contiguous bytes; C as float4 where aligned.  Grid: row blocks
// of 1024 in x (64 threads x 16 rows), 4 columns a block in y, looping past
// 65535.
// C' by the Chinese remainder theorem in 64-bit integers, not by Garner's
// digits: C' = sum_l r_l E_l - q P, E_l = (P / p_l) ((P / p_l)^-1 mod p_l)
// mod P.  The sum is taken modulo 2^64 (P < 2^64 for N <= 8), which is
// exact for the result because |C'| < 2^62 (moduli.budget keeps |C'| below
// 2^(bitlen(P/2) - 1)).  q = round(sum_l r_l E_l / P) is an FP32 sum
// of r_l F_l, F_l = E_l / P rounded to float: each term is off by at most
// 255 * 2^-24 and each of the N additions by 2^-13 (sums below 2048), so
// the sum is within 2e-3 of the exact quotient, whose distance to the next
// half-integer is at least 1/2 - |C'| / P >= 0.16 for 8 moduli
// (moduli.crt_margin checks it).  Per element that is N 64-bit multiply-
// adds and N FFMAs, where Garner's digits took two Barrett reductions and
// up to N - 1 multiply-adds each, ~100 integer operations (3.1 ms of the
// 16384^3 pipeline on the H100, 2026-11-26: integer-bound, the bytes'
// floor ~1.1 ms).  C' converts to double once, rounded to nearest (the
// emulation's float(C')), then 2^-(mu_i + nu_j), alpha and beta in double,
// rounded once to float; beta == 0 never reads C.
// Constants (moduli.kernel_constants, after the N moduli): E_l as (low,
// high) int32 words, F_l as float bits, P as (low, high).
namespace i8x {
__device__ __forceinline__ unsigned long long u64_at(const int* __restrict__ w) {
    return (unsigned long long)(unsigned)w[0] | ((unsigned long long)(unsigned)w[1] << 32);
}
}  // namespace i8x

// Two blocks an SM (128 registers) where ptxas fits them without spilling;
// sm_80 keeps one block (its draw of the earlier Garner kernel spilled at
// 128).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define I8X_GARNER_MIN_BLOCKS 2
#else
#define I8X_GARNER_MIN_BLOCKS 1
#endif
template <int N>
__global__ void __launch_bounds__(256, I8X_GARNER_MIN_BLOCKS)
int8x_garner(int M, int Nc, const unsigned char* __restrict__ R, long long ldr, long long plane,
             const int* __restrict__ mods, const int* __restrict__ mu,
             const int* __restrict__ nu, float alpha, float beta, float* __restrict__ C,
             long long ldc) {
    static_assert(N >= 1 && N <= 8, "the CRT sum is taken modulo 2^64: P < 2^64 needs N <= 8");
    sg::pdl_wait();
    enum : int { BASE = N };
    unsigned long long e[N];
    float f[N];
#pragma unroll
    for (int l = 0; l < N; ++l) {
        e[l] = i8x::u64_at(mods + BASE + 2 * l);
        f[l] = __int_as_float(mods[BASE + 2 * N + l]);
    }
    const unsigned long long P = i8x::u64_at(mods + BASE + 3 * N);
    const int i0 = (blockIdx.x * 64 + threadIdx.x % 64) * 16;
    if (i0 >= M) return;
    // float4 stores of C where its columns allow (ldc and C 16-byte aligned)
    const bool vec = (ldc & 3) == 0 && (reinterpret_cast<unsigned long long>(C) & 15) == 0;
    for (int j = blockIdx.y * 4 + threadIdx.x / 64; j < Nc; j += gridDim.y * 4) {
        // i0 + 15 < ldr: i0 < M, i0 a multiple of 16 and ldr a multiple of 16
        // (the planes' columns 16-byte aligned, device.garner checks)
        uint4 r16[N];
#pragma unroll
        for (int l = 0; l < N; ++l)
            r16[l] = *reinterpret_cast<const uint4*>(R + l * plane + j * ldr + i0);
        const int nj = nu[j];
        float* cj = C + j * ldc;
#pragma unroll 1
        for (int s = 0; s < 4; ++s) {                  // 4 rows at a time
            const int i = i0 + 4 * s;
            if (i >= M) break;
            unsigned r4[N];
#pragma unroll
            for (int l = 0; l < N; ++l) {
                r4[l] = r16[l].x;
                r16[l] = make_uint4(r16[l].y, r16[l].z, r16[l].w, 0u);   // the next 4 rows
            }
            const bool whole = vec && i + 3 < M;
            float4 old = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (beta != 0.0f && whole) old = *reinterpret_cast<const float4*>(cj + i);
            float res[4];
#pragma unroll
            for (int el = 0; el < 4; ++el) {
                if (i + el >= M) break;
                unsigned long long acc = 0ull;
                float qs = 0.0f;
#pragma unroll
                for (int l = 0; l < N; ++l) {
                    const unsigned r = r4[l] >> (8 * el) & 0xffu;
                    acc += (unsigned long long)r * e[l];
                    // r as a float without a conversion: 2^23 + r, exact
                    qs = __fmaf_rn(__fsub_rn(__int_as_float(0x4b000000 | r), 8388608.0f), f[l],
                                   qs);
                }
                const long long q = __float2ll_rn(qs);
                const long long cp = (long long)(acc - (unsigned long long)q * P);
                double y = __ll2double_rn(cp);
                // times 2^-(mu_i + nu_j), exact: the sum is in [-252, 358]
                y = __dmul_rn(y, __longlong_as_double((long long)(1023 - mu[i + el] - nj) << 52));
                double out = __dmul_rn((double)alpha, y);
                if (beta != 0.0f) {
                    const float c0 = whole ? (el == 0 ? old.x : el == 1 ? old.y : el == 2 ? old.z
                                                                                     : old.w)
                                           : cj[i + el];
                    out = __dadd_rn(out, __dmul_rn((double)beta, (double)c0));
                }
                res[el] = __double2float_rn(out);
            }
            if (whole) {
                *reinterpret_cast<float4*>(cj + i) = make_float4(res[0], res[1], res[2], res[3]);
            } else {
#pragma unroll
                for (int el = 0; el < 4; ++el)
                    if (i + el < M) cj[i + el] = res[el];
            }
        }
    }
}
