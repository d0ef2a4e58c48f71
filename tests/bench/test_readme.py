from sgemm.bench import readme, report

TEXT = """# Title

Intro stays.

<!-- sgemm:ladder-table:start -->
old ladder
<!-- sgemm:ladder-table:end -->

Middle stays.

<!-- sgemm:table:speedup-numpy:start -->
<!-- sgemm:table:speedup-numpy:end -->

<!-- sgemm:table:rung-5:start -->
old
<!-- sgemm:table:rung-5:end -->

<!-- sgemm:table:no-such-table:start -->
keep me
<!-- sgemm:table:no-such-table:end -->
Outro stays.
"""


def test_rewrite_between_markers(doc, tmp_path):
    f = tmp_path / "README.md"
    f.write_text(TEXT)
    done, unknown = readme.update_file(f, doc)
    assert done == ["ladder", "speedup-numpy", "rung-5"]
    assert unknown == ["no-such-table"]
    out = f.read_text()
    for keep in ("Intro stays.", "Middle stays.", "Outro stays.", "keep me"):
        assert keep in out
    assert "old ladder" not in out and "\nold\n" not in out
    assert report.md_ladder(doc).splitlines()[0] in out
    assert "| 5 | `tile2d` |" in out            # the ladder row of rung 5
    assert "Test fixture, not a measurement" in out
    # idempotent: a second rewrite changes nothing
    assert readme.rewrite(out, lambda n: report.markdown(doc, n))[0] == out


def test_markers_listed():
    assert readme.markers(TEXT) == ["ladder", "speedup-numpy", "rung-5", "no-such-table"]


def test_unterminated_marker_left_alone(doc):
    t = "<!-- sgemm:table:ladder:start -->\nno end marker\n"
    new, done, _ = readme.rewrite(t, lambda n: report.markdown(doc, n))
    assert new == t and done == []


def test_rung_by_name_and_missing(doc):
    assert report.markdown(doc, "rung-tile2d") == report.markdown(doc, "rung-5")
    assert "no measurements" in report.markdown(doc, "rung-99")
    assert report.markdown(doc, "nonsense") is None
