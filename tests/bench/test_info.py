import pytest

from sgemm.bench import info


def test_peak_arithmetic():
    # H100 SXM / H200: 132 SMs x 128 lanes x 2 flop x 1980 MHz
    assert info.fp32_peak_tflops(132, 1980) == pytest.approx(66.908, abs=1e-3)
    # A100: 108 SMs x 64 lanes x 2 x 1410 MHz = 19.5 TFLOP/s (datasheet)
    assert info.fp32_peak_tflops(108, 1410, info.lanes_per_sm((8, 0))) == \
        pytest.approx(19.49, abs=0.01)
    assert info.lanes_per_sm((9, 0)) == 128 and info.lanes_per_sm((8, 6)) == 128


def test_peak_formula_shows_terms():
    s = info.peak_formula(132, 1980)
    assert s == "132 SMs x 128 FP32 lanes x 2 flop/FMA x 1980 MHz = 66.9 TFLOP/s"


def test_format_info_without_measurements():
    i = {"device": {"name": "GPU X", "cc": "9.0", "sm_count": 132, "l2_bytes": 50 << 20,
                    "memory_bytes": 80 << 30},
         "clocks": {"sm_mhz": None, "max_sm_mhz": 1980.0, "source": "driver (maximum only)"},
         "fp32_peak_formula": info.peak_formula(132, 1980),
         "dram_bandwidth_datasheet_gbs": 3352.0,
         "versions": {"driver": "580", "nvrtc": "13.0", "cuda.core": "1.2", "cupy": None,
                      "triton": None, "sgemm": "0.1.0"},
         "kernel_cache": "/tmp/c"}
    text = info.format_info(i)
    assert "66.9 TFLOP/s" in text and "unknown now" in text and "not installed" in text
    assert "50 MiB" in text and "/tmp/c" in text
