from sgemm.bench import report
from sgemm.bench.sizes import Shape


def test_percentages(doc):
    r = report.find(doc, "tile2d", Shape(4096, 4096, 4096))
    cub = report.find(doc, "cublas", Shape(4096, 4096, 4096))
    assert abs(report.pct_of_baseline(doc, r) - 100 * r["tflops"] / cub["tflops"]) < 1e-9
    assert abs(report.pct_of_peak(doc, r) - 100 * r["tflops"] / 66.908) < 1e-9
    failed = report.find(doc, "smem", Shape(4096, 4096, 4096))
    assert report.pct_of_baseline(doc, failed) is None


def test_runner_order_ladder_first(doc):
    names = [d["runner"] for d in report.runners(doc)]
    assert names == ["naive", "smem", "tile2d", "cublas", "triton", "numpy"]


def test_text_tables(doc):
    t = report.text_table(doc)
    assert "FAILED: check failed" in t and "SKIPPED: CPU BLAS" in t
    assert "% cuBLAS" in t and "rel err" in t
    s = report.summary_table(doc).splitlines()
    assert s[0].split() == ["kernel", "256", "1024", "4096"]


def test_markdown_tables(doc):
    md = report.md_ladder(doc)
    assert md.startswith("| # | kernel |")
    assert "% of cuBLAS at 4096" in md
    sp = report.md_speedup_numpy(doc)
    assert "| 1024 |" in sp and "x |" in sp
    assert "4096" not in sp.split("\n\n")[0]      # NumPy skipped above 2048
    acc = report.md_accuracy(doc)
    assert "3.1e-01" in acc
