import pytest

from sgemm.bench import runners
from sgemm.kernels.registry import KERNELS


def _ladder(prec="ieee"):
    rungs = [s.name for s in sorted(KERNELS.values(), key=lambda s: s.id)
             if 1 <= s.id < runners.SCHEME_IDS and s.precision == prec]
    return rungs + ["auto" if prec == "ieee" else f"auto-{prec}"]


def test_default_is_the_registry_ladder_plus_references():
    names = [r.name for r in runners.select(None, "ieee")]
    ladder = _ladder()
    assert names[:len(ladder)] == ladder            # read from the registry, in id order
    rest = names[len(ladder):]
    assert rest[0] == "cublas" and rest[-1] == "numpy"
    assert ("triton" in rest) == runners.triton_available()


def test_explicit_list_adds_baseline():
    third = next(s.name for s in KERNELS.values() if s.id == 3)
    rs = runners.select("3,naive", "ieee")
    assert [r.name for r in rs] == [third, "naive", "cublas"]   # ids and names, in order


def test_keywords():
    rs = runners.select("cublas,triton,numpy", "ieee")
    assert [r.name for r in rs] == ["cublas", "triton", "numpy"]
    rs = runners.select("cublas-tf32,triton-tf32x3", "ieee")
    assert [r.name for r in rs] == ["cublas-tf32", "triton-tf32x3", "cublas"]


def test_tf32_baseline():
    rs = runners.select(None, "tf32")
    names = [r.name for r in rs]
    assert "cublas-tf32" in names and "numpy" not in names
    assert all(r.precision == "tf32" for r in rs)


def test_unknown_kernel():
    with pytest.raises(ValueError, match="not registered"):
        runners.select("nope", "ieee")


def test_numpy_size_limit():
    from sgemm.bench.sizes import Shape
    n = runners.numpy_runner()
    assert n.unsupported(Shape(2048, 2048, 2048)) is None
    assert "2048" in n.unsupported(Shape(4096, 4096, 4096))
