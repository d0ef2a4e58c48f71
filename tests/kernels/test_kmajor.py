"""Rung 13's parameter rules and shared memory (sgemm/kernels/ladder.py), on
the CPU: a config is rejected with the reason, before NVRTC sees it."""
from sgemm.kernels.params import TileParams
from sgemm.kernels.registry import KERNELS

KM = KERNELS["kmajor"]


def test_named_configs_pass_their_rules():
    for name, p in KM.configs.items():
        assert KM.can_implement(p) == [], name


def test_copies_that_do_not_split_over_the_threads_are_rejected():
    # 32 x 8 floats are 64 16-byte copies: fewer than 128 threads
    p = TileParams(BM=32, BN=128, BK=8, WM=32, WN=32, TM=8, TN=4, threads=128, stages=3)
    why = KM.can_implement(p)
    assert any(w.startswith("A: the 32x8 tile has 64 16-byte copies") for w in why), why


def test_tiles_off_powers_of_two_are_rejected():
    p = KM.configs["k128x64"].replace(BN=96, WN=48, TN=12)
    assert any("powers of two" in w for w in KM.can_implement(p))


def test_a_pipeline_needs_two_stages():
    p = KM.configs["k128x64"].replace(stages=1)
    assert any("stages=1" in w for w in KM.can_implement(p))


def test_shared_memory_holds_either_layout_of_each_operand():
    # 128 x 16 stored along k: 128 rows of 20 floats; along m: 16 rows of 132
    p = KM.configs["k128x64"]
    per_stage = max(128 * 20, 16 * 132) + max(64 * 20, 16 * 68)
    assert KM.dynamic_smem(p) == 3 * per_stage * 4
