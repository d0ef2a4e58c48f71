"""The kernel cache under concurrency and damage, across *processes* (CPU).

tests/test_cache.py covers keying, reuse, simple corruption and threads of
one process.  Here:

* several processes (spawned, fresh interpreters) call
  ``compiler.compile_kernel`` on the same key at the same moment with a
  fresh ``SGEMM_CACHE_DIR``: NVRTC runs exactly once over all of them, every
  process gets the same cubin, one valid cache file is left and no temporary;
* a damaged entry (truncated, a flipped bit in the cubin or in the JSON
  header, an entry of another key, an empty file, trailing garbage) is
  detected and rebuilt -- also when several processes find it at once (one
  rebuild);
* entries are replaced atomically: a reader polling the file while another
  process rewrites it never sees a torn entry;
* a process killed while it holds the per-key lock does not block the others
  (flock is released by the kernel).

Compiling needs NVRTC, not a GPU.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from sgemm.kernels.registry import KERNELS
from sgemm.runtime import compiler

ARCH = "sm_90a"
SPEC = KERNELS["naive"]
SRC = SPEC.source
EXPR = SPEC.name_expression(next(iter(SPEC.configs.values())), False, True)
NPROC = 6
CTX = mp.get_context("spawn")


# -- children (module level so that spawn can import them) --------------------------
def _child_compile(cache_dir: str, log_path: str, barrier, queue, src: str, expr: str):
    os.environ["SGEMM_CACHE_DIR"] = cache_dir
    from sgemm.runtime import compiler as comp
    real = comp.nvrtc_compile

    def counting(*a, **k):
        with open(log_path, "a") as f:
            f.write(f"{os.getpid()}\n")
        return real(*a, **k)

    comp.nvrtc_compile = counting
    comp.sources_digest()            # hash the sources before the start line
    barrier.wait(timeout=120)
    c = comp.compile_kernel(src, expr, ARCH)
    queue.put((os.getpid(), hashlib.sha256(c.cubin).hexdigest(), c.key))


def _child_rewrite(path: str, key: str, rounds: int, started):
    from sgemm.runtime import compiler as comp
    blob = os.urandom(1 << 21)       # a 2 MiB "cubin": writes take a while
    c = comp.Compiled(key, blob, {"x": "y"}, "log", ARCH, "expr")
    started.set()
    for i in range(rounds):
        comp._write_entry(Path(path), c)


def _child_hold_lock(lock_path: str, held):
    from sgemm.runtime import compiler as comp
    with comp._FileLock(Path(lock_path)):
        held.set()
        time.sleep(600)              # killed long before


# -- helpers ------------------------------------------------------------------------
@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(d))
    compiler._memory.clear()
    yield d
    compiler._memory.clear()


def _race(cache_dir: Path, tmp: Path, n: int = NPROC):
    """n processes compile SRC/EXPR at once; returns (compiles, results)."""
    log = tmp / f"compiles-{time.monotonic_ns()}.log"
    log.touch()
    barrier = CTX.Barrier(n)
    q = CTX.Queue()
    procs = [CTX.Process(target=_child_compile, args=(str(cache_dir), str(log), barrier, q,
                                                      SRC, EXPR)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [q.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0, f"child exit code {p.exitcode}"
    compiles = [x for x in log.read_text().split() if x]
    return compiles, results


def _entries(d: Path):
    return sorted(p for p in d.glob("*.cubin") if not p.name.startswith(".tmp-"))


def _assert_one_valid_entry(d: Path, key: str, sha: str):
    files = _entries(d)
    assert [f.name for f in files] == [f"{key}.cubin"], files
    entry = compiler._read_entry(files[0], key)
    assert entry is not None, "cache entry fails its checksum"
    assert hashlib.sha256(entry.cubin).hexdigest() == sha
    assert not list(d.glob(".tmp-*")), "temporary file left behind"


# -- tests --------------------------------------------------------------------------
def test_processes_racing_on_first_use_compile_once(cache, tmp_path):
    compiles, results = _race(cache, tmp_path)
    assert len(compiles) == 1, f"NVRTC ran {len(compiles)} times: {compiles}"
    shas = {sha for _, sha, _ in results}
    keys = {key for _, _, key in results}
    assert len(results) == NPROC and len(shas) == 1 and len(keys) == 1
    _assert_one_valid_entry(cache, keys.pop(), shas.pop())


def _damage(path: Path, how: str, other: Path | None = None):
    raw = bytearray(path.read_bytes())
    head_len = raw.index(b"\n")
    if how == "truncate":
        raw = raw[: head_len + 1 + (len(raw) - head_len) // 3]
    elif how == "flip-cubin":
        raw[head_len + 1 + (len(raw) - head_len) // 2] ^= 0x10
    elif how == "flip-header":
        raw[0] ^= 0x01                        # '{' -> 'z': not JSON any more
    elif how == "flip-symbols":
        meta = json.loads(raw[:head_len])
        ((_, mangled),) = meta["symbols"]      # [["s:<expr>", "b:<mangled>"]]
        mangled = mangled[2:]
        i = raw.index(mangled.encode(), 0, head_len)
        raw[i + len(mangled) // 2] ^= 0x01    # still JSON, names another symbol
    elif how == "empty":
        raw = bytearray()
    elif how == "trailing-garbage":
        raw += b"\0garbage"
    elif how == "other-key":
        meta = json.loads(raw[:head_len])
        meta["key"] = "0" * 32               # a valid entry, but for another key
        raw = bytearray(json.dumps(meta).encode()) + raw[head_len:]
    elif how == "header-only":
        raw = raw[:head_len]
    else:
        raise ValueError(how)
    path.write_bytes(bytes(raw))


DAMAGE = ["truncate", "flip-cubin", "flip-header", "empty", "trailing-garbage", "other-key",
          "header-only", "flip-symbols"]


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_entry_detected_and_rebuilt(cache, monkeypatch, how):
    good = compiler.compile_kernel(SRC, EXPR, ARCH)
    (path,) = _entries(cache)
    _damage(path, how)
    assert compiler._read_entry(path, good.key) is None, "damage went unnoticed"
    compiler._memory.clear()
    real, calls = compiler.nvrtc_compile, []
    monkeypatch.setattr(compiler, "nvrtc_compile",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    again = compiler.compile_kernel(SRC, EXPR, ARCH)
    assert calls == [1], "a damaged entry must be recompiled (once)"
    assert again.cubin == good.cubin
    _assert_one_valid_entry(cache, good.key, hashlib.sha256(good.cubin).hexdigest())


@pytest.mark.parametrize("how", ["truncate", "flip-cubin"])
def test_damaged_entry_found_by_racing_processes_rebuilt_once(cache, tmp_path, how):
    good = compiler.compile_kernel(SRC, EXPR, ARCH)
    (path,) = _entries(cache)
    _damage(path, how)
    compiles, results = _race(cache, tmp_path, n=4)
    assert len(compiles) == 1, f"NVRTC ran {len(compiles)} times"
    assert {sha for _, sha, _ in results} == {hashlib.sha256(good.cubin).hexdigest()}
    _assert_one_valid_entry(cache, good.key, hashlib.sha256(good.cubin).hexdigest())


def test_replacement_is_atomic_for_readers(tmp_path):
    """A reader polling an entry that another process keeps rewriting sees a
    complete, valid entry every time the file exists (never a torn one)."""
    path = tmp_path / "k.cubin"
    key = "f" * 32
    started = CTX.Event()
    w = CTX.Process(target=_child_rewrite, args=(str(path), key, 150, started))
    w.start()
    assert started.wait(60)
    reads = torn = 0
    while w.is_alive() or reads == 0:
        if path.exists():
            reads += 1
            if compiler._read_entry(path, key) is None:
                torn += 1
    w.join(60)
    assert w.exitcode == 0
    assert reads > 10, f"only {reads} reads overlapped the writer"
    assert torn == 0, f"{torn} of {reads} reads saw a torn entry"
    assert not list(tmp_path.glob(".tmp-*"))


def test_killed_lock_holder_does_not_block(cache, tmp_path):
    """A process that dies holding the per-key lock (crash, kill -9) leaves
    a lock file behind; the next compile must not wait for it."""
    key = compiler.cache_key(SRC, EXPR, ARCH)
    held = CTX.Event()
    holder = CTX.Process(target=_child_hold_lock, args=(str(cache / f"{key}.lock"), held))
    holder.start()
    assert held.wait(60)
    holder.kill()
    holder.join(30)
    assert (cache / f"{key}.lock").exists()
    t0 = time.monotonic()
    c = compiler.compile_kernel(SRC, EXPR, ARCH)
    assert time.monotonic() - t0 < 60
    _assert_one_valid_entry(cache, key, hashlib.sha256(c.cubin).hexdigest())


def test_unusable_cache_dir_still_compiles(monkeypatch, tmp_path):
    """A cache directory that cannot be created (a path under a regular
    file) must not make kernels impossible to build: compile without the
    disk cache."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(blocker / "cache"))
    compiler._memory.clear()
    monkeypatch.setattr(compiler, "_warned", [False])
    try:
        with pytest.warns(UserWarning, match="kernel cache .* is unusable"):
            c = compiler.compile_kernel(SRC, EXPR, ARCH)
    finally:
        compiler._memory.clear()
    assert c.cubin
