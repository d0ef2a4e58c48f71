import pytest

from sgemm.bench.sizes import Shape, parse_shapes, parse_sizes, read_shapes


@pytest.mark.parametrize("text,want", [
    ("256,512", [256, 512]),
    ("256:8192:x2", [256, 512, 1024, 2048, 4096, 8192]),
    ("1024:4096:+1024", [1024, 2048, 3072, 4096]),
    ("256:1024", [256, 512, 1024]),                 # factor 2 by default
    ("100:1000:x3", [100, 300, 900]),
    ("256:1024:x2,1000,512", [256, 512, 1024, 1000]),  # duplicates dropped, order kept
    (" 64 , 128 ", [64, 128]),
])
def test_parse_sizes(text, want):
    assert parse_sizes(text) == want


@pytest.mark.parametrize("text", ["", "0", "-5", "abc", "256:128", "1:10:x1", "1:10:/2",
                                  "1:2:3:4", ","])
def test_parse_sizes_rejects(text):
    with pytest.raises(ValueError):
        parse_sizes(text)


def test_parse_shapes():
    text = """
    # M N K [transA transB] [batch]
    1024 1024 1024
    4096 512 2048   # tall-skinny
    127 129 131 T N
    64 64 64 n t 8
    32 32 32 4
    """
    got = parse_shapes(text)
    assert got == [Shape(1024, 1024, 1024), Shape(4096, 512, 2048),
                   Shape(127, 129, 131, ta=True), Shape(64, 64, 64, tb=True, batch=8),
                   Shape(32, 32, 32, batch=4)]
    assert got[0].square and not got[2].square
    assert got[3].flops == 2 * 64 ** 3 * 8
    assert got[1].min_bytes == 4 * (4096 * 2048 + 2048 * 512 + 4096 * 512)


@pytest.mark.parametrize("text,msg", [
    ("1 2", "expected"), ("1 2 x", "integer"), ("1 2 3 Q N", "transpose"),
    ("# only a comment\n", "no shapes"), ("1 2 0", "positive")])
def test_parse_shapes_rejects(text, msg):
    with pytest.raises(ValueError, match=msg):
        parse_shapes(text, "f.txt")


def test_read_shapes_file(tmp_path):
    f = tmp_path / "shapes.txt"
    f.write_text("512 256 128 N T 2\n")
    assert read_shapes(f) == [Shape(512, 256, 128, tb=True, batch=2)]
    with pytest.raises(ValueError, match="cannot read"):
        read_shapes(tmp_path / "missing.txt")


def test_shape_json_roundtrip():
    s = Shape(3, 5, 7, True, False, 2)
    assert Shape.from_json(s.to_json()) == s
    assert s.label == "3x5x7 TN b2"
