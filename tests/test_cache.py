"""The on-disk kernel cache: keying, corruption, concurrent first use."""
import threading

import pytest

from sgemm.runtime import compiler

SRC, EXPR = "01_naive.cu", "sgemm_naive<8, 8, false, false>"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(tmp_path))
    compiler._memory.clear()
    yield tmp_path
    compiler._memory.clear()


def test_key_depends_on_everything():
    base = compiler.cache_key(SRC, EXPR, "sm_90a")
    assert base == compiler.cache_key(SRC, EXPR, "sm_90a")
    assert base != compiler.cache_key(SRC, EXPR, "sm_80")
    assert base != compiler.cache_key(SRC, "sgemm_naive<16, 16, false, false>", "sm_90a")
    assert base != compiler.cache_key(SRC, EXPR, "sm_90a", extra=("-DX",))
    assert base != compiler.cache_key(SRC, EXPR, "sm_90a", debug=True)


def test_source_change_changes_key(monkeypatch):
    base = compiler.cache_key(SRC, EXPR, "sm_90a")
    monkeypatch.setattr(compiler, "_digest", "something-else")
    assert compiler.cache_key(SRC, EXPR, "sm_90a") != base


def test_written_once_and_reused(cache, monkeypatch):
    c1 = compiler.compile_kernel(SRC, EXPR, "sm_90a")
    files = list(cache.glob("*.cubin"))
    assert len(files) == 1
    compiler._memory.clear()
    calls = []
    monkeypatch.setattr(compiler, "nvrtc_compile", lambda *a, **k: calls.append(a))
    c2 = compiler.compile_kernel(SRC, EXPR, "sm_90a")
    assert not calls and c2.cubin == c1.cubin and c2.symbol_mapping == c1.symbol_mapping


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupted_entry_is_rebuilt(cache, damage):
    c1 = compiler.compile_kernel(SRC, EXPR, "sm_90a")
    (path,) = cache.glob("*.cubin")
    raw = bytearray(path.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) // 2]
    elif damage == "flip":
        raw[-10] ^= 0xFF
    else:
        raw = b"not a cache entry"
    path.write_bytes(bytes(raw))
    compiler._memory.clear()
    c2 = compiler.compile_kernel(SRC, EXPR, "sm_90a")
    assert c2.cubin == c1.cubin
    assert compiler._read_entry(path, c1.key) is not None, "rebuilt entry is valid"


def test_concurrent_first_use_compiles_once(cache, monkeypatch):
    real = compiler.nvrtc_compile
    calls = []

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(compiler, "nvrtc_compile", counting)
    out = []
    threads = [threading.Thread(target=lambda: out.append(
        compiler.compile_kernel(SRC, EXPR, "sm_80"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(out) == 8
    assert len({o.cubin for o in out}) == 1


def test_compile_error_carries_log(cache):
    from sgemm.errors import CompileError
    with pytest.raises(CompileError) as e:
        compiler.compile_kernel(SRC, "sgemm_naive<8, 8, false>", "sm_90a", use_cache=False)
    assert "error" in e.value.log.lower()


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(tmp_path / "x"))
    assert compiler.cache_dir() == tmp_path / "x"


def test_experiment_defines_are_parsed_and_keyed(monkeypatch):
    monkeypatch.delenv(compiler.DEFINES_ENV, raising=False)
    plain = compiler.cache_key("x.cu", "k<1>", "sm_90a")
    monkeypatch.setenv(compiler.DEFINES_ENV, "SG_A=0, SG_B")
    assert compiler.experiment_defines() == (("SG_A", "0"), ("SG_B", "1"))
    assert compiler.cache_key("x.cu", "k<1>", "sm_90a") != plain   # never a stale cubin
    monkeypatch.setenv(compiler.DEFINES_ENV, "1BAD=2")
    with pytest.raises(compiler.CompileError, match="SGEMM_DEFINES"):
        compiler.experiment_defines()
