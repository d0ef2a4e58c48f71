"""The ncu CSV parser, on real output: `ncu --csv --page raw` of sgemm_smem at
2048^3 on an H200 (2026-11-21), trimmed to the columns sgemm profile asks for."""
from pathlib import Path

import pytest

from sgemm.bench import profile

CSV = Path(__file__).with_name("fixtures") / "ncu-raw-smem-h200.csv"


def test_metric_table_has_the_asked_for_names():
    names = profile.metric_names()
    for m in ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
              "launch__registers_per_thread", "gpu__time_duration.sum",
              "sm__warps_active.avg.pct_of_peak_sustained_active"):
        assert m in names
    assert len(names) == len(set(names))


@pytest.mark.parametrize("value,unit,want", [
    ("2,470,752", "ns", 2.470752e-3), ("1.5", "usecond", 1.5e-6), ("3", "ms", 3e-3),
    ("1,978,131,458.59", "hz", 1.97813145859e9), ("1.6", "cycle/nsecond", 1.6e9),
    ("12", "Mbyte", 12e6), ("90.88", "%", 90.88), ("32", "register/thread", 32),
    ("n/a", "", None)])
def test_units_to_base(value, unit, want):
    got = profile.to_base(value, unit)
    assert got == pytest.approx(want) if want is not None else got is None


def test_parse_and_summarize_real_output():
    rows = profile.parse_csv(CSV.read_text())     # ==PROF== lines are skipped
    assert len(rows) == 1
    s = profile.summarize(rows[0], 2048, 2048, 2048, peak_tflops=66.908,
                          lanes_x_sms=132 * 128)
    assert s["kernel_name"].startswith("void sgemm_smem<32")
    assert s["duration_s"] == pytest.approx(2.470752e-3)
    assert s["tflops"] == pytest.approx(2 * 2048 ** 3 / 2.470752e-3 / 1e12)
    # every FFMA counted: 2048^3 of them, so counted and nominal rates agree
    assert s["counted_tflops"] == pytest.approx(s["tflops"], rel=1e-3)
    assert s["regs"] == 32 and s["bank_st"] == 2673940 and s["bank_ld"] == 87780
    assert s["sm_mhz"] == pytest.approx(1978.1, abs=0.1)
    assert s["stalls"][0][0] == "mio_throttle"
    text = profile.format_summary(s, "title")
    assert "6.95 TFLOP/s" in text and "mio_throttle 17.95" in text and "2.471 ms" in text


def test_empty_output():
    assert profile.parse_csv("==PROF== nothing profiled\n") == []
