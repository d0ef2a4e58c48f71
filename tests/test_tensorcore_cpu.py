"""CPU model of the 3xTF32 split used by the tensor-core kernels (issue 6).

No GPU: NumPy reproduces cvt.rna.tf32.f32 (round to 10 mantissa bits, ties
away from zero) and checks the error bounds the kernels rely on, the
special-value flag, and the specs' registration.
"""
from __future__ import annotations

import numpy as np
import pytest

from sgemm.kernels.registry import KERNELS


def to_tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32 for finite x: add half an ulp of the 10-bit mantissa
    to the magnitude, then clear the 13 low bits."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x1000) & 0xFFFFE000
    return u.astype(np.uint32).view(np.float32)


def split(x: np.ndarray):
    big = to_tf32(x)
    small = to_tf32((x - big).astype(np.float32))
    return big, small


def unsplittable(x: np.ndarray) -> np.ndarray:
    return ~(np.abs(x) < np.float32(2.0 ** 127 * (2 - 2.0 ** -11)))


def test_tf32_rounding_keeps_10_bits():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10000).astype(np.float32)
    b = to_tf32(x)
    assert np.all((b.view(np.uint32) & 0x1FFF) == 0)
    rel = np.abs((x - b) / x)
    assert rel.max() <= 2.0 ** -11 * (1 + 1e-6)


@pytest.mark.parametrize("scale", [1.0, 2.0 ** -16, 2.0 ** 16])
def test_split_error_bound(scale):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(100000) * scale).astype(np.float32)
    big, small = split(x)
    resid = x.astype(np.float64) - big.astype(np.float64) - small.astype(np.float64)
    assert np.all(np.abs(resid) <= 2.0 ** -22 * np.abs(x) * (1 + 1e-6))


def test_three_products_bound():
    """big*big + big*small + small*big differs from a*b by <= ~2^-21 |a b|:
    the dropped small*small term plus the two split residuals."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal(100000).astype(np.float32)
    b = rng.standard_normal(100000).astype(np.float32)
    ab, as_ = split(a)
    bb, bs = split(b)
    f = lambda v: v.astype(np.float64)  # noqa: E731
    approx = f(ab) * f(bb) + f(ab) * f(bs) + f(as_) * f(bb)
    exact = f(a) * f(b)
    assert np.all(np.abs(approx - exact) <= 2.0 ** -20 * np.abs(exact) + 1e-300)
    # one TF32 product alone is ~2^-11 relative: 3xTF32 is ~1000x better
    one = f(ab) * f(bb)
    assert np.median(np.abs(one - exact) / np.abs(exact)) > 100 * np.median(
        np.abs(approx - exact) / np.abs(exact))


def test_special_values_are_flagged():
    x = np.array([np.inf, -np.inf, np.nan, 3.4028235e38, -3.4028e38, 3.4e38, 0.0, 1e-40],
                 dtype=np.float32)
    flag = unsplittable(x)
    assert flag.tolist() == [True, True, True, True, True, False, False, False]
    # the largest value that is not flagged still rounds to a finite TF32
    ok = np.float32(2.0 ** 127 * (2 - 2.0 ** -11))
    ok = np.nextafter(ok, np.float32(0))
    assert np.isfinite(to_tf32(np.array([ok]))[0])


def test_specs_registered():
    names = {s.name: s for s in KERNELS.values()}
    for n, prec in (("tf32x3_mma", "tf32x3"), ("tf32_mma", "tf32"),
                    ("tf32x3_wgmma", "tf32x3"), ("tf32_wgmma", "tf32")):
        s = names[n]
        assert s.precision == prec and s.id >= 20
        for cname, p in s.configs.items():
            assert not s.can_implement(p), (n, cname, s.can_implement(p))
    assert names["tf32x3_wgmma"].archs == ("sm_90a",)
    assert names["tf32x3_wgmma"].min_cc == 90
    assert set(names["tf32x3_mma"].archs) == {"sm_80", "sm_90a"}


_TC_NAMES = ("tf32x3_mma", "tf32_mma", "tf32x3_wgmma", "tf32_wgmma", "tf32x3_wgmma_rs")


@pytest.mark.parametrize("name", _TC_NAMES)
def test_no_spills_in_any_function(name):
    """Every ptxas 'stack frame' line of every tensor-core instantiation shows
    zero.  The generic compile test reads only the log's last such line, which
    for these kernels belongs to the __noinline__ FFMA fallback (tc::ffma_tile),
    not to the kernel: a spilling producer (setmaxnreg budget too small) passed
    it during session 2 (docs/notes/tensorcore.md)."""
    import re

    from sgemm.runtime.compiler import compile_kernel
    spec = KERNELS[name]
    for _, p, ta, tb, al in spec.instantiations():
        for arch in spec.archs:
            log = compile_kernel(spec.source, spec.name_expression(p, ta, tb, al), arch).log
            frames = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                                r"(\d+) bytes spill loads", log)
            assert frames, (name, arch, log[:500])
            assert all(f == ("0", "0", "0") for f in frames), (
                spec.name_expression(p, ta, tb, al), arch, frames)


# ---- producer store pattern (21_tf32x3_wgmma.cu, TileLoader::store) ----------
# Bank model: 32 banks of 4 bytes; a warp's st.shared.v4 needs at least 4
# wavefronts (512 bytes at 128 bytes per wavefront), and one more for every
# extra distinct word a bank must take.  Two groupings are checked: 8-lane
# phases (the classic 128-bit rule) and the whole warp at once.
def _store_offsets(R: int, kcont: bool, q: int, warp: int, swizzle: bool = True):
    """Byte offset in the tile of each lane's 16-byte store for store q,
    exactly as TileLoader<R, KCONT>::store computes it."""
    kpt = 32 if R >= 128 else 32 * R // 128
    out = []
    for lane in range(32):
        tid = warp * 32 + lane
        if kcont:
            r, c = tid // 8 + 16 * q, tid % 8
        else:
            i, cc = q // (kpt // 4), q % (kpt // 4)
            r = tid % min(R, 128) + 128 * i
            c = ((tid // R) * (kpt // 4) if R < 128 else 0) + cc
        out.append((r, c, r * 128 + (((c ^ (r & 7)) if swizzle else c) << 4)))
    return out


def _wavefronts(offsets) -> int:
    banks: dict[int, set] = {}
    for off in offsets:
        for w in range(4):
            word = off // 4 + w
            banks.setdefault(word % 32, set()).add(word)
    return max(len(v) for v in banks.values())


@pytest.mark.parametrize("R", [64, 128])
@pytest.mark.parametrize("kcont", [True, False])
def test_producer_stores_are_conflict_free_and_cover_the_swizzled_tile(R, kcont):
    """Every st.shared.v4 of the producers takes the minimum 4 wavefronts, for
    both operand sizes and both source layouts, and the stores write each
    16-byte chunk of the 128B-swizzled K-major tile (chunk c of row r at
    c ^ (r & 7), what the wgmma descriptors read) exactly once.  The ncu
    probe (tc21_store_probe, notes session 3) measured the same on an H200:
    4.00 wavefronts per store, 0 conflicts."""
    seen = set()
    for warp in range(4):
        for q in range(R // 16):
            offs = _store_offsets(R, kcont, q, warp)
            addr = [o for _, _, o in offs]
            assert _wavefronts(addr) == 4                       # whole warp
            assert sum(_wavefronts(addr[8 * p:8 * p + 8]) for p in range(4)) == 4
            for r, c, o in offs:
                assert o == r * 128 + ((c ^ (r & 7)) << 4)
                seen.add((r, c))
    assert seen == {(r, c) for r in range(R) for c in range(8)}


def test_bank_model_detects_conflicts():
    """Negative control: without the XOR swizzle the m/n-contiguous layout
    (each lane one row, same chunk) puts 8 lanes of a phase on the same 4 banks."""
    addr = [o for _, _, o in _store_offsets(128, False, 0, 0, swizzle=False)]
    assert _wavefronts(addr[:8]) == 8
    assert _wavefronts(addr) == 32
