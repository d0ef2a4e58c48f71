"""The INT8 GEMM's registration (sgemm/kernels/utility.py, INT8X_GEMM) and
the host arithmetic around it, on the CPU: the rules that reject configs
with reasons, launch geometry, shared memory, workspace, and the import of
sgemm.int8x.device touching no CUDA."""
from __future__ import annotations

import pytest

from sgemm.kernels import utility as U
from sgemm.kernels.spec import SMEM_LIMIT

GOOD = U.INT8X_GEMM.configs["default"]


def test_registered_configs_pass_their_rules_on_every_arch():
    for name, p in U.INT8X_GEMM.configs.items():
        assert not U.int8_gemm_rules(p), (name, U.int8_gemm_rules(p))
        for cc in (80, 86, 89, 90):
            assert not U.INT8X_GEMM.can_implement(p, SMEM_LIMIT[cc]), (name, cc)
    assert U.INT8X_GEMM in U.UTILITY
    assert set(U.INT8X_GEMM.archs) == {"sm_80", "sm_86", "sm_89", "sm_90a"}


@pytest.mark.parametrize("change,reason", [
    (dict(BK=48), "BK=48: the k-tile must be 32, 64 or 128"),
    (dict(BK=256), "BK=256"),
    (dict(WM=24), "WM=24: warp rows must be a multiple of 16"),
    (dict(WN=8), "WN=8: warp columns must be a multiple of 16"),
    (dict(BM=96), "BM=96 is not a multiple of WM=64"),
    (dict(BN=80, WN=32), "BN=80 is not a multiple of WN=32"),
    (dict(threads=128), "threads=128: a 128x128 tile of 64x32 warp tiles has 8 warps"),
    (dict(BM=32, WM=16, BN=256, WN=32, threads=512), "A tile: 128 16-byte chunks do not "
     "split evenly over 512 threads"),
    (dict(stages=1), "stages=1: the cp.async pipeline needs at least 2"),
    (dict(WM=128, WN=64, threads=64), "holds 256 INT32 accumulators a thread"),
    (dict(split_k=2), "does not split K"),
])
def test_rules_say_why_a_config_is_rejected(change, reason):
    p = GOOD.replace(**change)
    why = U.INT8X_GEMM.can_implement(p)
    assert why and any(reason in w for w in why), why


def test_too_much_shared_memory_is_named_per_arch():
    p = GOOD.replace(stages=7)                 # 7 x 16 KiB = 112 KiB
    assert not U.INT8X_GEMM.can_implement(p, SMEM_LIMIT[90])
    why = U.INT8X_GEMM.can_implement(p, SMEM_LIMIT[86])
    assert any("shared memory 114688 B exceeds" in w for w in why), why


def test_a_spec_with_a_bad_config_is_refused_when_built():
    with pytest.raises(ValueError, match="config 'bad'.*BK=48"):
        U._int8_gemm({"bad": GOOD.replace(BK=48)})


def test_name_expression_smem_and_grid():
    spec = U.INT8X_GEMM
    assert spec.name_expression(GOOD) == "int8_mma<128, 128, 64, 64, 32, 4>"
    assert spec.name_expression(spec.configs["large"]) == "int8_mma<128, 256, 64, 64, 64, 3>"
    assert spec.dynamic_smem(GOOD) == 4 * 256 * 64
    assert spec.block(GOOD) == 256
    assert spec.grid_for(1, 1, 8, GOOD) == (1, 1, 8)
    assert spec.grid_for(129, 255, 8, GOOD) == (4, 1, 8)
    assert spec.grid_for(16384, 16384, 8, GOOD) == (128 * 128, 1, 8)
    # one instantiation per config, no TA/TB variants
    assert [c for c, *_ in spec.instantiations()] == list(spec.configs)


def test_fold_interval():
    assert U.int8_fold_tiles(64) * 64 == 131008
    assert U.int8_fold_tiles(32) * 32 == 131040


def test_padding_and_workspace():
    from sgemm.int8x import device as D
    assert [D.padded_k(k) for k in (0, 1, 16, 17, 4096, 4097)] == [16, 16, 16, 32, 4096, 4112]
    assert [D.padded_rows(m) for m in (0, 1, 16, 17, 4097)] == [16, 16, 16, 32, 4112]
    # 8 moduli at 4096^3: residue planes 8 * 8192 * 4096 B, byte planes of C'
    # 8 * 4096^2 B (a quarter of the INT32 planes' 32 * 4096^2)
    w = D.workspace_bytes(4096, 4096, 4096)
    assert w == 8 * 8192 * 4096 + 8 * 4096 ** 2 + 4 * 8192
    # rows padded to 16 bytes: a 17 x 3 product keeps 3 columns of 32 bytes a plane
    assert D.workspace_bytes(17, 3, 5) == 8 * (20 * 16 + 3 * 32) + 4 * 20
    assert w < 1 << 30


def test_device_module_imports_without_cuda(monkeypatch):
    """Importing the engine needs no GPU and no CuPy."""
    import importlib
    import sys
    monkeypatch.setitem(sys.modules, "cupy", None)      # import cupy would fail
    import sgemm.int8x.device as D
    importlib.reload(D)
    assert D.NonFiniteInput.__mro__[1] is ValueError


# ---- the wgmma INT8 GEMM (42_int8_wgmma.cu, INT8X_WGMMA) ----
WG = U.INT8X_WGMMA.configs["default"]


def test_wgmma_configs_pass_their_rules_and_fit_hopper():
    for name, p in U.INT8X_WGMMA.configs.items():
        assert not U.int8_wgmma_rules(p), (name, U.int8_wgmma_rules(p))
        assert not U.INT8X_WGMMA.can_implement(p, SMEM_LIMIT[90]), name
    assert U.INT8X_WGMMA in U.UTILITY
    assert U.INT8X_WGMMA.archs == ("sm_90a",) and U.INT8X_WGMMA.min_cc == 90
    # narrow runs two blocks an SM: two of its shared-memory footprints fit
    # the H100's 228 KiB (1 KiB of it reserved per block)
    narrow = U.INT8X_WGMMA.configs["narrow"]
    assert 2 * (U.INT8X_WGMMA.dynamic_smem(narrow) + 1024) <= 228 * 1024


@pytest.mark.parametrize("change,reason", [
    (dict(BK=64), "BK=64: the k-tile must be 128 bytes"),
    (dict(BM=96), "BM=96: one warpgroup per 64 rows"),
    (dict(BM=320, threads=640), "BM=320"),
    (dict(BN=192, WN=192), "BN=192: the wgmma n must be 64, 128 or 256"),
    (dict(WM=32), "WM=32, WN=256: each warpgroup computes one 64 x BN slice"),
    (dict(WN=128), "WN=BN=256"),
    (dict(threads=384), "threads=384: a 128-row tile has 2 warpgroups = 256 threads"),
    (dict(BM=256, BN=64, WN=64, threads=512, stages=3), None),       # legal: 64 rows a copy step
    (dict(stages=2), "stages=2: loads run stages-2 k-tiles ahead"),
    (dict(split_k=4), "does not split K"),
    (dict(stages=5), "shared memory 246784 B exceeds"),
])
def test_wgmma_rules_say_why_a_config_is_rejected(change, reason):
    p = WG.replace(**change)
    why = U.INT8X_WGMMA.can_implement(p, SMEM_LIMIT[90])
    if reason is None:
        assert not why, why
    else:
        assert why and any(reason in w for w in why), why


def test_a_wgmma_spec_with_a_bad_config_is_refused_when_built():
    with pytest.raises(ValueError, match="int8_wgmma config 'bad'.*BN=96"):
        U._int8_wgmma({"bad": WG.replace(BN=96, WN=96)})


def test_wgmma_name_expression_smem_and_grid():
    spec = U.INT8X_WGMMA
    assert spec.name_expression(WG) == "int8_wgmma<128, 256, 4>"
    assert spec.name_expression(spec.configs["narrow"]) == "int8_wgmma<128, 128, 3>"
    assert spec.dynamic_smem(WG) == 4 * 384 * 128 + 1024
    assert spec.block(WG) == 256
    assert spec.grid_for(1, 1, 8, WG) == (1, 1, 8)
    assert spec.grid_for(129, 257, 8, WG) == (2 * 2, 1, 8)
    assert spec.grid_for(8192, 8192, 8, WG) == (64 * 32, 1, 8)
    assert [c for c, *_ in spec.instantiations()] == list(spec.configs)


@pytest.mark.parametrize("arch,kernel,want", [
    ("sm_90a", "auto", "int8_wgmma"), ("sm_80", "auto", "int8_mma"),
    ("sm_86", "auto", "int8_mma"), ("sm_89", "auto", "int8_mma"),
    ("sm_100", "auto", "int8_mma"),                 # no wgmma past Hopper's sm_90a
    ("sm_90a", "mma", "int8_mma"), ("sm_90a", "wgmma", "int8_wgmma"),
])
def test_the_pipeline_picks_wgmma_on_sm90a_only(arch, kernel, want):
    assert U.int8_gemm_spec(arch, kernel).name == want


def test_kernel_choice_errors_name_the_argument():
    with pytest.raises(ValueError, match="kernel='wgmma' needs sm_90a"):
        U.int8_gemm_spec("sm_80", "wgmma")
    with pytest.raises(ValueError, match="kernel='tensor' must be"):
        U.int8_gemm_spec("sm_90a", "tensor")


def test_both_gemms_share_one_launch_contract():
    """device.int8_gemm passes the same arguments to either kernel; the two
    sources must declare the same parameter list."""
    import re
    from pathlib import Path
    d = Path(U.__file__).parent / "cuda"

    def params(src, name):
        m = re.search(name + r"\((.*?)\)\s*\{", src, re.S)
        return " ".join(m.group(1).split())
    assert params((d / "41_int8_mma.cu").read_text(), r"\nint8_mma") == \
        params((d / "42_int8_wgmma.cu").read_text(), r"\nint8_wgmma")
