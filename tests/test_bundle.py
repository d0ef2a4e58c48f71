"""The prebuilt kernel bundle (sgemm/build.py) and ``sgemm warmup`` (CPU).

* the manifest is a pure function, and covers every kernel the planner
  weighs (``planner.candidates``) and every launch ``plan.prepare`` builds
  (schemes: split-K and its reduction, pack copies, peel strips, the scale
  kernel) over a dense grid of shapes, layouts, alignments, batches and
  precisions, on a device model of each bundled arch -- and every explicit
  ``kernel=NAME`` with its own size rule;
* build -> lookup end to end on a tiny bundle (three kernels, compiled here
  by NVRTC): ``compile_kernel`` returns the bundled bytes without calling
  NVRTC or writing the cache; a bundle of another NVRTC or other sources, a
  damaged entry or SGEMM_BUNDLE=0 falls back to NVRTC; a second build
  compiles nothing; stale entries go;
* ``sgemm warmup`` lists and compiles only what the bundle and cache lack.

The full bundle is never built here (it is ~2000 kernels: docs/first-call.md).
"""
from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys

import pytest

from sgemm import build, dispatch, planner, warmup
from sgemm.errors import SgemmError
from sgemm.kernels import registry
from sgemm.problem import Problem
from sgemm.runtime import compiler
from test_dispatch import prob  # noqa: E402  (tests/ is on sys.path, rootdir-style)

ARCHS = build.ARCHS
PRECISIONS = ("ieee", "tf32x3", "tf32")


@pytest.fixture(scope="module")
def manifest():
    return {(i.arch, i.source, i.expr) for i in build.manifest()}


@pytest.fixture(autouse=True)
def _clean(monkeypatch, tmp_path):
    """No user table, no user calibration, an empty cache; shipped tables on."""
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(tmp_path / "cache"))
    for env in ("SGEMM_TUNED_TABLE", "SGEMM_TUNED", "SGEMM_PACK", "SGEMM_PEEL",
                "SGEMM_DEFINES", "SGEMM_DEBUG", "SGEMM_BUNDLE", "SGEMM_BUNDLE_DIR"):
        monkeypatch.delenv(env, raising=False)
    dispatch.forget_tables()
    compiler.forget_bundle()
    compiler._memory.clear()
    yield
    dispatch.forget_tables()
    compiler.forget_bundle()
    compiler._memory.clear()


# ---- problems ---------------------------------------------------------------------------------
MN = (1, 5, 16, 33, 64, 100, 513, 1024, 2049, 8192)
K = (1, 40, 256, 1000, 4097, 65536)
COMBOS = list(itertools.product((False, True), (False, True), (True, False), (1, 1, 4)))


def grid() -> list[Problem]:
    """Every (m, n, k) of MN x MN x K, each with the next (ta, tb, aligned,
    batch) of COMBOS in turn (all combos recur across the grid), plus a
    seeded sample of log-uniform shapes with random flags."""
    out = []
    for i, (m, n, k) in enumerate(itertools.product(MN, MN, K)):
        ta, tb, al, b = COMBOS[i % len(COMBOS)]
        out.append(prob(m, n, k, ta, tb, b, al))
    r = random.Random(20)
    for _ in range(100):
        d = [max(1, int(2 ** r.uniform(0, 14))) for _ in range(3)]
        out.append(prob(*d, r.random() < .5, r.random() < .5,
                        1 if r.random() < .8 else r.randint(2, 64), r.random() < .6))
    return out


def launch_items(found, arch) -> set:
    return {(arch, s.source, s.name_expression(p, ta, tb, al)) for s, p, ta, tb, al in found}


# ---- coverage ---------------------------------------------------------------------------------
def test_manifest_is_pure(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the manifest compiled something")
    monkeypatch.setattr(compiler, "nvrtc_compile", boom)
    a, b = build.manifest(), build.manifest()
    assert a == b and len(a) == len(set(a))
    assert {i.arch for i in a} == set(ARCHS)
    kinds = {i.kernel for i in a}
    for util in ("splitk_reduce", "splitk_reduce_vec", "pack", "scale"):
        assert util in kinds


@pytest.mark.parametrize("arch", ARCHS)
def test_manifest_covers_the_planner(arch, manifest):
    """Every candidate the planner weighs, and every kernel the launches of
    the chosen plan load, on the dense grid, for every precision."""
    dev = build.MODELS[arch]
    weighed: set = set()
    real = planner.candidates

    def recording(p, d, precision="ieee", cal=None):
        out = real(p, d, precision, cal)
        for c in out:
            al = True if c.pack else c.spec.aligned_for(p)
            weighed.add((d.arch, c.spec.source,
                         c.spec.name_expression(c.params, p.ta, p.tb, al)))
        calls.append(p)
        return out

    launched, cannot, calls = set(), [], []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planner, "candidates", recording)
        for p in grid():
            for prec in PRECISIONS:
                n = len(calls)
                try:
                    launched |= launch_items(warmup.launched([p], dev, prec), arch)
                except SgemmError as e:
                    cannot.append((p, prec, str(e)))
                if len(calls) == n:      # a tuned-table hit: what would the planner weigh?
                    planner.candidates(p, dev, prec)
    assert weighed
    missing = sorted((weighed | launched) - manifest)
    assert not missing, f"{len(missing)} kernels the planner may use are not bundled: {missing[:5]}"
    assert not cannot, cannot[:3]             # every call of the grid can be planned


@pytest.mark.parametrize("arch", ["sm_86", "sm_89"])
def test_tf32_large_tile_on_99k_archs(arch):
    """sm_86/sm_89 blocks get 99 KiB of shared memory: the planner must weigh
    their candidates (it once weighed none there and fell back to the 108 KiB
    tf32x3_mma 'large' tile, which raised)."""
    found = warmup.launched([prob(4096, 4096, 4096)], build.MODELS[arch], "tf32x3")
    assert found and all(not s.can_implement(p, build.MODELS[arch].smem_optin)
                         for s, p, *_ in found)


@pytest.mark.parametrize("arch", ARCHS)
def test_manifest_covers_explicit_kernels(arch, manifest):
    """kernel=NAME takes the spec's own size rule: every result is bundled."""
    dev = build.MODELS[arch]
    shapes = [prob(m, n, k, ta, tb, b) for m, n, k in ((1, 4096, 4096), (4096, 7, 512),
                                                       (64, 64, 64), (384, 384, 384),
                                                       (1000, 1000, 1000), (4096, 4096, 4096),
                                                       (64, 16384, 4096), (256, 256, 65536))
              for ta, tb in ((False, False), (True, True)) for b in (1, 3)]
    missing = set()
    for spec in registry.KERNELS.values():
        if dev.cc_int < spec.min_cc:
            continue
        for p in shapes:
            s, params = dispatch.choose(p, dev, spec.name, None)
            if s.can_implement(params, dev.smem_optin):
                continue                 # the call raises; nothing to load
            for al in (False, True) if s.vector_loads else (False,):
                item = (arch, s.source, s.name_expression(params, p.ta, p.tb, al))
                if item not in manifest:
                    missing.add(item)
    assert not missing, sorted(missing)[:5]


def test_cli_help():
    r = subprocess.run([sys.executable, "-m", "sgemm.build", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "--arch" in r.stdout
    from sgemm import cli
    with pytest.raises(SystemExit) as e:
        cli.main(["warmup", "--help"])
    assert e.value.code == 0


def test_list_prints_the_manifest(capsys):
    assert build.main(["--list", "--arch", "sm_86"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(build.manifest(("sm_86",))) and lines[0].startswith("sm_86 ")


# ---- build -> lookup, end to end ------------------------------------------------------------
TINY = [build.Item("sm_90a", "00_scale.cu", "scale_c", "scale"),
        build.Item("sm_90a", "32_splitk_reduce.cu", "splitk_reduce<true>", "splitk_reduce_vec"),
        build.Item("sm_80", "37_pack.cu", "pack_operands", "pack")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A three-kernel bundle, compiled here by NVRTC (no GPU needed)."""
    out = tmp_path_factory.mktemp("bundle")
    index = build.build(out, items=TINY, jobs=1, use_cache=False, progress=False)
    assert index["count"] == 3 and not index["stats"]["failed"]
    return out


def _no_nvrtc(monkeypatch):
    calls = []

    def boom(*a, **k):
        calls.append(a)
        raise AssertionError(f"NVRTC was called for {a[1]}")
    monkeypatch.setattr(compiler, "nvrtc_compile", boom)
    return calls


def test_bundled_bytes_without_nvrtc(tiny, monkeypatch, tmp_path):
    monkeypatch.setenv("SGEMM_BUNDLE_DIR", str(tiny))
    _no_nvrtc(monkeypatch)
    index = json.loads((tiny / "index.json").read_text())
    assert index["nvrtc"] == "%d.%d" % compiler.nvrtc_version()
    for item in TINY:
        c = compiler.compile_kernel(item.source, item.expr, item.arch)
        entry = compiler.read_entry(tiny / f"{c.key}.cubin", c.key)
        assert c.cubin == entry.cubin and c.symbol_mapping == entry.symbol_mapping
        assert c.resources()["registers"], "the ptxas report travels with the cubin"
        assert index["entries"][c.key] == [item.arch, item.source, item.expr]
    assert not list((tmp_path / "cache").glob("*.cubin")), "bundle hits are not copied"


@pytest.mark.parametrize("entries_last", [True, False])
@pytest.mark.parametrize("indent", [None, 1])
def test_index_header_is_read_without_the_entries(entries_last, indent):
    """A lookup reads the index's header; its entries are decoded only
    where they do not come last, as build writes them."""
    head = {"format": 1, "cache_format": compiler.CACHE_FORMAT, "nvrtc": "13.0",
            "sources": "ab" * 32, "archs": ["sm_90a"], "count": 1}
    entries = {"0" * 32: ["sm_90a", "20_double_buffer.cu", "f<1, \"entries\": 2>"]}
    doc = {**head, "entries": entries} if entries_last else {"entries": entries, **head}
    got = compiler._index_header(json.dumps(doc, indent=indent).encode())
    assert got == (head if entries_last else doc)


@pytest.mark.parametrize("spoil", ["nvrtc", "sources", "format", "off", "damaged"])
def test_foreign_or_damaged_bundle_falls_back(tiny, monkeypatch, tmp_path, spoil):
    import shutil
    other = tmp_path / "bundle"
    shutil.copytree(tiny, other)
    monkeypatch.setenv("SGEMM_BUNDLE_DIR", str(other))
    idx_path = other / "index.json"
    index = json.loads(idx_path.read_text())
    key = compiler.cache_key(TINY[0].source, TINY[0].expr, TINY[0].arch)
    if spoil == "nvrtc":
        index["nvrtc"] = "11.0"
    elif spoil == "sources":
        index["sources"] = "0" * 64
    elif spoil == "format":
        index["cache_format"] = -1
    elif spoil == "off":
        monkeypatch.setenv("SGEMM_BUNDLE", "0")
    else:
        p = other / f"{key}.cubin"
        raw = bytearray(p.read_bytes())
        raw[-5] ^= 0xFF
        p.write_bytes(bytes(raw))
    idx_path.write_text(json.dumps(index))
    assert compiler.bundled(key) is None
    calls = _no_nvrtc(monkeypatch)
    with pytest.raises(AssertionError, match="NVRTC was called"):
        compiler.compile_kernel(TINY[0].source, TINY[0].expr, TINY[0].arch)
    assert calls
    # the others still come from the bundle where only one entry is damaged
    if spoil == "damaged":
        c = compiler.compile_kernel(TINY[1].source, TINY[1].expr, TINY[1].arch)
        assert c.cubin


def test_rebuild_is_incremental(tiny, monkeypatch, tmp_path):
    import shutil
    out = tmp_path / "bundle"
    shutil.copytree(tiny, out)
    (out / "0123456789abcdef0123456789abcdef.cubin").write_bytes(b"stale")
    _no_nvrtc(monkeypatch)
    index = build.build(out, items=TINY, jobs=1, use_cache=False, progress=False)
    s = index["stats"]
    assert (s["compiled"], s["already_built"], s["failed"]) == (0, 3, [])
    assert sorted(p.name for p in out.glob("*.cubin")) == sorted(f"{k}.cubin"
                                                                 for k in index["entries"])


def test_build_reuses_the_kernel_cache(tiny, monkeypatch, tmp_path):
    """An entry the cache holds is copied, not compiled (CI caches ~/.cache/sgemm)."""
    key = compiler.cache_key(TINY[0].source, TINY[0].expr, TINY[0].arch)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"{key}.cubin").write_bytes((tiny / f"{key}.cubin").read_bytes())
    _no_nvrtc(monkeypatch)
    index = build.build(tmp_path / "out", items=TINY[:1], jobs=1, progress=False)
    assert index["stats"]["reused_from_cache"] == 1 and index["count"] == 1


# ---- warmup -------------------------------------------------------------------------------------
def test_warmup_skips_bundled_and_compiles_the_rest(tiny, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SGEMM_BUNDLE_DIR", str(tiny))
    extra = build.Item("sm_90a", "01_naive.cu", "sgemm_naive<8, 8, false, false>", "naive")
    assert [warmup.status(i) for i in TINY] == ["bundled"] * 3
    assert warmup.status(extra) == "missing"
    r = warmup.warm(TINY + [extra], jobs=1, progress=False)
    assert (r["bundled"], r["compiled"], r["failed"]) == (3, 1, [])
    assert warmup.status(extra) == "cached"
    r = warmup.warm(TINY + [extra], jobs=1, progress=False)
    assert (r["cached"], r["compiled"]) == (1, 0)


def test_warmup_shapes_lists_what_the_calls_load(tmp_path, capsys):
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("4096 4096 4096\n1 4096 4096 N T\n2049 2049 2049\n64 64 64 N N 32\n")
    assert warmup.main(["--arch", "sm_90a", "--shapes", str(shapes), "--list"]) == 0
    rows = [l.split(None, 3) for l in capsys.readouterr().out.splitlines()]
    assert rows and all(r[0] == "missing" and r[1] == "sm_90a" for r in rows)
    names = {r[3].split("<")[0] for r in rows}
    assert {"sgemm_gemv_wide", "pack_operands"} & names or "sgemm_double_buffer" in names
    manifest = {(i.source, i.expr) for i in build.manifest(("sm_90a",))}
    assert all((r[2], r[3]) in manifest for r in rows)


def test_warmup_kernels_and_bad_arch(capsys):
    items = warmup.named_items(["gemv_wide"], "sm_80")
    from sgemm.kernels import schemes
    distinct = len(set(schemes.GEMV_WIDE_CONFIGS.values()))
    assert len(items) == 4 * distinct and {i.kernel for i in items} == {"gemv_wide"}   # 4 layouts
    with pytest.raises(SystemExit):
        warmup.main(["--arch", "ampere", "--list"])
