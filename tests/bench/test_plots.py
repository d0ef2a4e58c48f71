from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from sgemm.bench import plots  # noqa: E402
from sgemm.cli import main  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def test_plot_all_writes_pngs(doc, tmp_path):
    paths = plots.plot_all(doc, tmp_path, "small")
    assert [p.name for p in paths] == ["small-tflops.png", "small-ratio.png",
                                       "small-roofline.png"]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000


def test_non_square_shapes_plot(doc, tmp_path):
    for r in doc["results"]:
        r["shape"]["n"] = r["shape"]["m"] // 2
    assert len(plots.plot_all(doc, tmp_path, "rect")) == 3


def test_nothing_ok_no_plots(doc, tmp_path):
    for r in doc["results"]:
        r["status"], r["error"] = "skipped", "test"
    assert plots.plot_all(doc, tmp_path, "none") == []


def test_sgemm_plot_command(tmp_path, capsys):
    FIXTURE = Path(__file__).with_name("fixtures") / "results-small.json"
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- sgemm:ladder-table:start -->\n<!-- sgemm:ladder-table:end -->\n")
    rc = main(["plot", str(FIXTURE), "--out", str(tmp_path), "--readme", str(readme),
               "--no-docs"])
    assert rc == 0
    assert len(list(tmp_path.glob("results-small-*.png"))) == 3
    assert "| 5 | `tile2d` |" in readme.read_text()
    out = capsys.readouterr().out
    assert "rewrote ladder" in out


def test_sgemm_plot_bad_json(tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_text('{"schema": "sgemm-bench"}')
    assert main(["plot", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sgemm plot: invalid sgemm-bench results") and err.count("\n") == 1


def test_suite_plot_from_a_committed_run(tmp_path):
    """bench/suite.py's JSON (a committed H100 run) draws one bar per timed
    shape; rows without a ratio (failed or skipped) are left out."""
    import json
    from sgemm.bench.claims import SUITE      # the run the README cites
    src = Path(__file__).parents[2] / "bench" / "results" / SUITE
    doc = json.loads(src.read_text())
    doc["rows"].append({"shape": "1x1x1", "error": "test"})
    out = plots.plot_suite(doc, tmp_path / "suite-ratio.png")
    data = out.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000
