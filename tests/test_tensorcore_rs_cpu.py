"""CPU model of the RS wgmma kernel's A path (22_tf32x3_wgmma_rs.cu).

No GPU.  The A producer copies raw tiles with cp.async (copy_a), and each
consumer thread reads its wgmma A fragment back (load_a_frags): ldmatrix.x4
from the K-major swizzled tile (TA = true) or ld.shared.b32 from the M-major
swizzled tile (TA = false).  Mirrored here exactly as the kernel computes the
addresses, these tests check that (1) the copies write every float of the
tile exactly once, (2) every fragment register gets the (m, k) element the
PTX ISA's .m64nNk8 .tf32 A layout asks for (lane (g, t) of warp w: a0 = (16w
+ g, t), a1 = (+8, t), a2 = (g, t+4), a3 = (+8, t+4)), and (3) both the
copies and the fragment loads hit the shared-memory banks without conflicts.
"""
from __future__ import annotations

import pytest

from sgemm.kernels.registry import KERNELS

ROW_BYTES = 128


def copy_a_chunks(BM: int, kcont: bool):
    """(tid, dst byte offset, (tile row, first tile column)) of every 16-byte
    cp.async of copy_a<BM, KCONT>; a tile row is an m (K-major) or a k
    (M-major), the four floats of a chunk run along the other index."""
    cpr = 8 if kcont else BM // 4
    step = 128 // cpr
    out = []
    for tid in range(128):
        c, r0 = tid % cpr, tid // cpr
        for i in range(BM // 16):
            r = r0 + step * i
            if kcont:
                d = r * ROW_BYTES + ((c ^ (r & 7)) << 4)
            else:
                d = r * (BM * 4) + ((c ^ (2 * (r & 3))) << 4)
            out.append((tid, d, (r, 4 * c)))
    return out


def tile_element_at(BM: int, kcont: bool) -> dict:
    """byte offset -> (m, k) within the tile, from the copies."""
    where = {}
    for _, d, (r, c0) in copy_a_chunks(BM, kcont):
        for e in range(4):
            m, k = (r, c0 + e) if kcont else (c0 + e, r)
            assert d + 4 * e not in where
            where[d + 4 * e] = (m, k)
    return where


def frag_addresses(BM: int, kcont: bool, row0: int, j: int):
    """Byte offsets, per lane, of registers a0..a3 of k8 step j (rows row0..).
    K-major: ldmatrix.x4, lane l supplies the row address of matrix l // 8,
    and register i of lane l is word l % 4 of row l // 4 of matrix i."""
    out = {}
    if kcont:
        rowaddr = {}
        for lane in range(32):
            i, r = lane // 8, lane % 8
            row = row0 + (i & 1) * 8 + r
            rowaddr[(i, r)] = row * ROW_BYTES + (((2 * j + (i >> 1)) ^ r) << 4)
        for lane in range(32):
            out[lane] = [rowaddr[(i, lane // 4)] + 4 * (lane % 4) for i in range(4)]
    else:
        for lane in range(32):
            g, t = lane // 4, lane % 4
            m_lo, m_hi = row0 + g, row0 + g + 8
            base = 4 * (t * BM)
            col = [4 * ((((m >> 2) ^ (2 * t)) << 2) | (m & 3)) for m in (m_lo, m_hi)]
            out[lane] = [base + 4 * BM * (8 * j + 4 * (q >> 1)) + col[q & 1] for q in range(4)]
    return out


def _wavefronts(words) -> int:
    """Wavefronts for one warp-wide access: the most distinct 4-byte words any
    of the 32 banks must deliver (same-word broadcasts are free)."""
    banks: dict[int, set] = {}
    for w in words:
        banks.setdefault(w % 32, set()).add(w)
    return max(len(v) for v in banks.values())


@pytest.mark.parametrize("BM", [64, 128])
@pytest.mark.parametrize("kcont", [True, False])
def test_copies_cover_the_tile_once(BM, kcont):
    where = tile_element_at(BM, kcont)
    assert sorted(where.values()) == sorted((m, k) for m in range(BM) for k in range(32))
    assert max(where) == BM * 32 * 4 - 4


@pytest.mark.parametrize("BM", [64, 128])
@pytest.mark.parametrize("kcont", [True, False])
def test_fragments_match_the_ptx_a_layout(BM, kcont):
    where = tile_element_at(BM, kcont)
    for cw in range(BM // 64):
        for warp in range(4):
            row0 = cw * 64 + warp * 16
            for j in range(4):
                addr = frag_addresses(BM, kcont, row0, j)
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    want = [(row0 + g, 8 * j + t), (row0 + g + 8, 8 * j + t),
                            (row0 + g, 8 * j + t + 4), (row0 + g + 8, 8 * j + t + 4)]
                    assert [where[a] for a in addr[lane]] == want, (cw, warp, j, lane)


@pytest.mark.parametrize("BM", [64, 128])
@pytest.mark.parametrize("kcont", [True, False])
def test_fragment_loads_are_conflict_free(BM, kcont):
    """ld.shared.b32: one wavefront per register (32 lanes, 32 banks).
    ldmatrix.x4: each 8x16-byte matrix is one wavefront (its 8 row addresses
    cover all 32 banks once)."""
    for row0 in range(0, BM, 16):
        for j in range(4):
            addr = frag_addresses(BM, kcont, row0, j)
            if kcont:
                for i in range(4):
                    rows = {addr[lane][i] - 4 * (lane % 4) for lane in range(32)}
                    words = [r // 4 + w for r in rows for w in range(4)]
                    assert len(rows) == 8 and _wavefronts(words) == 1
            else:
                for q in range(4):
                    assert _wavefronts([addr[lane][q] // 4 for lane in range(32)]) == 1


def test_m_major_without_swizzle_conflicts():
    """Negative control: with plain M-major rows (no XOR) the four k rows a
    warp reads for one register land on the same banks: 4-way."""
    BM = 128
    words = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        words.append(t * BM + g)
    assert _wavefronts(words) == 4


@pytest.mark.parametrize("BM", [64, 128])
@pytest.mark.parametrize("kcont", [True, False])
def test_copies_are_conflict_free(BM, kcont):
    """Each warp's cp.async (16 bytes per lane) fills whole 128-byte rows or
    one 512-byte k-row: 4 wavefronts, the minimum for 512 bytes."""
    chunks = copy_a_chunks(BM, kcont)
    per_warp_iter: dict = {}
    for n, (tid, d, _) in enumerate(chunks):
        i = n % (BM // 16)
        per_warp_iter.setdefault((tid // 32, i), []).append(d)
    for ds in per_warp_iter.values():
        assert len(ds) == 32
        assert _wavefronts([d // 4 + w for d in ds for w in range(4)]) == 4


def test_rs_spec_registered():
    s = KERNELS["tf32x3_wgmma_rs"]
    assert s.precision == "tf32x3" and s.archs == ("sm_90a",) and s.min_cc == 90
    for cname, p in s.configs.items():
        assert not s.can_implement(p), (cname, s.can_implement(p))
    big = s.configs["large"]
    assert s.can_implement(big.replace(TM=2))           # no PROMO > 1 with RS
    assert s.can_implement(big.replace(threads=384))    # 2 producers + 2 consumers
    assert s.can_implement(big.replace(TN=5))           # PIPE is 1..4


def test_every_lane_that_reads_a_stage_releases_it():
    """racecheck, 2026-11-22 (docs/notes/tensorcore.md): all 32 lanes of a
    consumer warp read raw A from a stage (ldmatrix / ld.shared), so every one
    of them must arrive on empty[stage] before the A producer's cp.asyncs of
    tile kt + STAGES overwrite it; one arrive per warp (lane 0, as in 21,
    where only wgmma reads the stage) left lanes 1..31 unordered: a WAR."""
    import re
    from pathlib import Path
    src = (Path(__file__).resolve().parent.parent / "sgemm" / "kernels" / "cuda" /
           "22_tf32x3_wgmma_rs.cu").read_text()
    consume = src[src.index("__device__ __forceinline__ void consume("):
                  src.index("__device__ __forceinline__ void body(")]
    arrives = [ln.strip() for ln in consume.splitlines()
               if "mbar_arrive" in ln and not ln.strip().startswith("//")]
    assert arrives == ["tc21::mbar_arrive(smem_u32(&empty_bar[s]));"], arrives
    init = re.search(r"mbar_init\(smem_u32\(&empty_bar\[s\]\), ([^)]*)\)", src).group(1)
    assert init == "128 * CW", init
    # ...and every lane does read the stage (both A layouts, every warp).
    for BM in (64, 128):
        for kcont in (True, False):
            for row0 in range(0, BM, 16):
                addr = frag_addresses(BM, kcont, row0, 0)
                assert all(addr[lane] for lane in range(32))
