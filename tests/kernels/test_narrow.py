"""43_narrow.cu's config rules (schemes.narrow_rules) say why a tile the
kernel's static_asserts would refuse is rejected, before NVRTC sees it."""
from sgemm.kernels import schemes as S
from sgemm.kernels.params import TileParams

NARROW = S.NARROW


def test_named_configs_pass_their_rules():
    for name, p in S.NARROW_CONFIGS.items():
        assert NARROW.can_implement(p) == [], name


def test_eight_deep_chunks_need_enough_narrow_rows_per_copy_step():
    # 128 threads copy an 8-row narrow operand along its rows 16 k-steps at a
    # time: an 8-deep chunk does not split evenly, a 16-deep one does
    why = NARROW.can_implement(TileParams(BM=128, BN=8, BK=8, threads=128))
    assert any("multiple of 16" in w for w in why), why
    assert NARROW.can_implement(TileParams(BM=128, BN=8, BK=16, threads=128)) == []
    assert NARROW.can_implement(TileParams(BM=64, BN=8, BK=8, threads=64)) == []


def test_k_groups_are_one_two_or_four_whole_copies_of_the_wide_side():
    assert any("k-groups" in w for w in
               NARROW.can_implement(TileParams(BM=64, BN=16, BK=16, threads=192)))
    assert any("k-groups" in w for w in
               NARROW.can_implement(TileParams(BM=64, BN=16, BK=16, threads=512)))
    assert NARROW.can_implement(TileParams(BM=64, BN=16, BK=16, threads=256)) == []
    # four groups of 128 rows copy a 32-row operand along its rows 16 k-steps at a time
    assert any("multiple of 16" in w for w in
               NARROW.can_implement(TileParams(BM=128, BN=32, BK=8, threads=512)))


def test_output_tile_must_fit_the_stages():
    why = NARROW.can_implement(TileParams(BM=128, BN=32, BK=4, threads=128))
    assert any("output tile" in w for w in why), why


def test_eight_deep_chunks_halve_shared_memory():
    a, b = S.NARROW_CONFIGS["n32w128"], S.NARROW_CONFIGS["n32w128k8"]
    assert 2 * S.narrow_smem(b) == S.narrow_smem(a)
