"""The command line without a GPU: clear one-sentence errors, no tracebacks."""
import os
import subprocess
import sys

import pytest

from sgemm.runtime.device import has_gpu

no_gpu = pytest.mark.skipif(has_gpu(), reason="checks the no-GPU message")


def _run(*args):
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "sgemm.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120)


@no_gpu
@pytest.mark.parametrize("cmd", [["bench"], ["info"], ["profile", "smem", "--size", "64", "64",
                                                        "64"]])
def test_no_gpu_one_sentence(cmd):
    r = _run(*cmd)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no CUDA GPU" in lines[0] and lines[0].endswith(".")


def test_bad_sizes_fail_fast():
    r = _run("bench", "--sizes", "256:oops")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().startswith("sgemm bench:")


def test_unknown_kernel():
    r = _run("bench", "--kernels", "no_such_kernel")
    assert r.returncode == 2 and "not registered" in r.stderr and "Traceback" not in r.stderr


def test_help_lists_commands():
    r = _run("--help")
    assert r.returncode == 0
    for c in ("bench", "info", "profile", "plot", "tune"):
        assert c in r.stdout


def test_tune_delegates_or_explains(monkeypatch):
    import importlib.util

    from sgemm import cli
    if importlib.util.find_spec("sgemm.tune") is None:
        assert cli.main(["tune"]) != 0
    else:
        seen = {}
        mod = importlib.import_module("sgemm.tune")
        monkeypatch.setattr(mod, "main", lambda argv: seen.setdefault("argv", argv) and 0)
        cli.main(["tune", "--x", "1"])
        assert seen["argv"] == ["--x", "1"]
