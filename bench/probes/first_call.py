"""Probe: a fresh process's first sgemm call, with sgemm's bytecode present
(as a wheel install has it) and absent (a fresh checkout), measured apart.

    python bench/probes/first_call.py --out first-call.json         # GPU, after python -m sgemm.build
    python bench/probes/first_call.py --stand-in                    # CPU: no GPU, no real cubins

The tree measured is the probe's own, or $SGEMM_ROOT (another checkout).
Each number comes from its own fresh interpreter (``--runs`` of them per
mode); the parent reports min and median.  A child creates the CUDA context
first (excluded, as issue #20's target says), then times ``import sgemm``
and the first ``sgemm.gemm`` at 4096^3 up to a device synchronize, then a
second call and the first calls of new shapes and of tf32x3.  The kernel
cache is an empty directory: bundled kernels must come from the bundle.

Bytecode present: ``python -m compileall`` over the package first (into
``__pycache__``, or $PYTHONPYCACHEPREFIX when set).  Absent: the child loads
sgemm's modules from source, never reading or writing bytecode for them
(other packages keep theirs), which is what a fresh checkout pays once.

``--stand-in`` runs on a CPU: tests/runtime/fake_driver.py answers as an
H100, cubins are made up (a first child fills a cache and builds a bundle
of them with sgemm.build), launches do nothing, operands are
__cuda_array_interface__ objects, importing CuPy and PyTorch fails and
cuda.core is a stand-in with Device.allocate alone (split-K's workspace,
tests/runtime/fake_driver.py).  NumPy is imported before the timing; the stand-in libcuda is
installed right after ``import sgemm`` (inside the timing: its setup is a
few ctypes callbacks).  Stand-in numbers are host CPU work only, not GPU
numbers.

``--modules`` adds ``--runs`` children (bytecode present) that time each
module the import and the first call load, its own imports excluded, and
prints each module's minimum.  ``--index-entries N`` pads the stand-in
bundle's index to N entries (made-up keys), as large as the shipped
bundle's (2393 kernels), whose reading a first call pays.

``--profile`` adds one more child (bytecode present) whose first call runs
under cProfile, printed by cumulative time and by internal time (with
``--array torch`` too: the H100's torch first call, 139 ms against CuPy's
57, is unexplained).  Each child also reports the modules its first call
imported, counted by top-level package.  Not part of the package.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# the tree measured: the children run there, so `python -c` finds its sgemm first
TREE = os.environ.get("SGEMM_ROOT") or ROOT

# the calls each child makes, in order: (label, m, n, k, precision)
CALLS = [("gemm 4096^3 first", 4096, 4096, 4096, None),
         ("gemm 4096^3 second", 4096, 4096, 4096, None),
         ("gemm 1000x333x777 first", 1000, 333, 777, None),
         ("tf32x3 4096^3 first", 4096, 4096, 4096, "tf32x3"),
         ("deep-k 37x91x50001 first", 37, 91, 50001, None)]

CHILD = r'''
import importlib.machinery, importlib.util, json, os, sys, time
mode, array, phase = sys.argv[1], sys.argv[2], sys.argv[3]
CALLS = json.loads(sys.argv[4])

class SourceOnly(importlib.machinery.SourceFileLoader):
    def path_stats(self, path):          # no mtime: SourceLoader neither reads nor writes .pyc
        raise OSError("bytecode ignored by the probe")

class NoBytecode:
    """sgemm's modules from source only; every other package as usual."""
    def find_spec(self, name, path=None, target=None):
        if name != "sgemm" and not name.startswith("sgemm."):
            return None
        for f in sys.meta_path:
            spec = None if f is self else getattr(f, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                if type(spec.loader) is importlib.machinery.SourceFileLoader:
                    spec.loader = SourceOnly(spec.loader.name, spec.loader.path)
                return spec
        return None

out = {}
if array == "stand-in":
    sys.path.insert(0, os.path.join(os.environ["SGEMM_PROBE_ROOT"], "tests", "runtime"))
    import fake_driver as F
    sys.meta_path.insert(0, F.Blocker("cuda.core", "cupy", "torch"))     # submodules too
    sys.meta_path.insert(0, F.CoreStandIn())   # Device.allocate: split-K workspaces
    import numpy  # noqa: F401  (what CuPy or PyTorch would have brought)
    base = [1 << 40]
    def make(shape):
        base[0] += 1 << 36
        return F.CudaArray(shape, base[0])
    sync = lambda: None
elif array == "torch":
    import torch
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()      # the context exists from here on
    make = lambda shape: torch.randn(*shape, device="cuda")
    sync = torch.cuda.synchronize
else:
    import cupy as cp
    cp.zeros(1); cp.cuda.Device().synchronize()
    make = lambda shape: cp.random.standard_normal(shape, dtype=cp.float32)
    sync = cp.cuda.Device().synchronize
ops = {}
for label, m, n, k, prec in CALLS:
    if (m, n, k) not in ops:
        ops[(m, n, k)] = (make((m, k)), make((k, n)), make((m, n)))
sync()
if mode == "absent":
    sys.meta_path.insert(0, NoBytecode())
if phase == "modules":      # each module's own import time, its imports' excluded
    import importlib._bootstrap as _bs
    _load, _stack, module_ms = _bs._load_unlocked, [[0.0]], {}
    def _timed_load(spec):
        _stack.append([0.0])
        t = time.perf_counter()
        try:
            return _load(spec)
        finally:
            d, inner = time.perf_counter() - t, _stack.pop()[0]
            module_ms[spec.name] = 1e3 * (d - inner)
            _stack[-1][0] += d
    _bs._load_unlocked = _timed_load
    out["module_ms"] = module_ms
before = set(sys.modules)
t0, c0 = time.perf_counter(), time.process_time()
import sgemm
out["import_sgemm_ms"] = 1e3 * (time.perf_counter() - t0)
if array == "stand-in":     # after import sgemm, which loads no driver layer
    F.install()
if phase == "fill":
    import hashlib
    from sgemm.runtime import compiler
    made = []
    def fake_nvrtc(source, expr, arch, extra=(), debug=None):
        key = compiler.cache_key(source, expr, arch, extra, debug)
        made.append((source, expr, arch))
        return compiler.Compiled(key, b"fake cubin " + key.encode() * 1000,    # ~32 KiB
                                 {expr: "_Zfake" + hashlib.sha1(expr.encode()).hexdigest()},
                                 "", arch, expr)
    compiler.nvrtc_compile = fake_nvrtc
prof = None
if phase == "profile":
    import cProfile
    prof = cProfile.Profile()
for i, (label, m, n, k, prec) in enumerate(CALLS):
    a, b, c = ops[(m, n, k)]
    if i == 0 and prof:
        prof.enable()
    t = time.perf_counter()
    sgemm.gemm(a, b, c, precision=prec)
    sync()
    out[label] = 1e3 * (time.perf_counter() - t)
    if i == 0:
        if prof:
            prof.disable()
        out["first_total_ms"] = 1e3 * (time.perf_counter() - t0)    # import sgemm + first call
        out["first_cpu_ms"] = 1e3 * (time.process_time() - c0)
        new = set(sys.modules) - before
        out["modules_imported"] = len(new)
        out["imported_cuda_bindings_driver"] = "cuda.bindings.driver" in new
        out["imported_cuda_bindings"] = any(x.startswith("cuda.bindings") for x in new)
        out["imported_cuda_pathfinder"] = any(x.startswith("cuda.pathfinder") for x in new)
        out["imported_cuda_core"] = any(x.startswith("cuda.core") for x in new)
        out["imported_cupy"] = any(x.startswith("cupy") for x in new)
        # modules the first call imported, by top-level package (torch's first call
        # imported 36 more than CuPy's on the H100: cuda.pathfinder's, it turned out)
        tops = {}
        for x in new:
            tops[x.split(".")[0]] = tops.get(x.split(".")[0], 0) + 1
        out["new_modules_by_package"] = dict(sorted(tops.items(), key=lambda kv: -kv[1]))
from sgemm.runtime import compiler as _c
out["bundle_kernels"] = len(_c.bundle_keys())      # 0: no usable bundle (the calls compiled)
api = sys.modules["sgemm.api"]
out["sgemm_code_from"] = ("source" if type(api.__loader__) is SourceOnly else "bytecode"
                          if os.path.exists(importlib.util.cache_from_source(api.__file__))
                          else "source")
if phase == "fill" and sys.argv[5]:
    from sgemm import build
    build.build(sys.argv[5], items=[build.Item(a_, s, e, "?") for s, e, a_ in made],
                use_cache=True, progress=False)
if prof:
    import io, pstats
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
    print("\n".join(s.getvalue().splitlines()[:45]), file=sys.stderr)
    s = io.StringIO()       # self time: a slow C call (a driver or torch call) shows here
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(20)
    print("\n".join(s.getvalue().splitlines()[:35]), file=sys.stderr)
    print("new modules by package:", out.get("new_modules_by_package"), file=sys.stderr)
print(json.dumps(out))
'''


def _pad_index(path: str, n: int) -> None:
    """Made-up entries up to n, after the real ones, in build.py's layout."""
    import hashlib
    with open(path) as f:
        index = json.load(f)
    entries, i = index["entries"], 0
    while len(entries) < n:
        key = hashlib.sha256(b"padding %d" % i).hexdigest()[:32]
        entries[key] = ["sm_90a", "20_double_buffer.cu",
                        f"sgemm_double_buffer<128, 128, 8, 64, 32, 8, 8, 256, 2, {i % 9}, "
                        "false, true, true>"]
        i += 1
    with open(path, "w") as f:
        json.dump(index, f, indent=1)


def _child(mode, array, phase, env, bundle_out="") -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, mode, array, phase, json.dumps(CALLS),
                        bundle_out], capture_output=True, text=True, env=env, timeout=600,
                       cwd=TREE)
    if r.returncode != 0:
        raise SystemExit(f"child ({mode}, {phase}) failed:\n{r.stderr[-3000:]}")
    if phase == "profile":
        print(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _summary(rows: list[dict]) -> dict:
    out = {}
    for key, v in rows[0].items():
        if isinstance(v, float) and key != "bundle_kernels":
            vals = [r[key] for r in rows]
            out[key] = {"min": min(vals), "median": statistics.median(vals)}
        else:
            out[key] = sorted({json.dumps(r[key]) for r in rows})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stand-in", action="store_true", help="CPU: the stand-in driver, made-up cubins")
    p.add_argument("--array", choices=("cupy", "torch"), default="cupy",
                   help="the package whose context and arrays the child uses (GPU)")
    p.add_argument("--runs", type=int, default=5, help="fresh processes per mode")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--modules", action="store_true", help="each module's own import time")
    p.add_argument("--index-entries", type=int, default=0,
                   help="stand-in: pad the bundle's index to this many entries")
    p.add_argument("--out", help="write the results as JSON here")
    a = p.parse_args(argv)
    array = "stand-in" if a.stand_in else a.array
    pkg = os.path.join(TREE, "sgemm")
    env = dict(os.environ, SGEMM_PROBE_ROOT=ROOT)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [TREE,
                                                      env.get("PYTHONPATH")]))
    tmp = tempfile.mkdtemp(prefix="sgemm-first-call-")
    env["SGEMM_CACHE_DIR"] = os.path.join(tmp, "empty-cache")     # the user cache: empty
    if a.stand_in:
        for var in ("SGEMM_LAUNCH", "SGEMM_DEFINES", "SGEMM_DEBUG"):
            env.pop(var, None)
        fill = dict(env, SGEMM_CACHE_DIR=os.path.join(tmp, "fill-cache"), SGEMM_BUNDLE="0")
        _child("present", array, "fill", fill, os.path.join(tmp, "bundle"))
        env["SGEMM_BUNDLE_DIR"] = os.path.join(tmp, "bundle")
        if a.index_entries:
            _pad_index(os.path.join(tmp, "bundle", "index.json"), a.index_entries)
        # NumPy's OpenBLAS threads spin in the background after its import on
        # the CPU machine: the children's CPU time counted them (first_cpu_ms
        # twice the wall time there)
        env["OPENBLAS_NUM_THREADS"] = "1"
    subprocess.run([sys.executable, "-m", "compileall", "-q", pkg], check=True, env=env)
    doc = {"array": array, "runs": a.runs, "python": sys.version.split()[0], "modes": {}}
    for mode in ("present", "absent"):
        rows = [_child(mode, array, "time", env) for _ in range(a.runs)]
        doc["modes"][mode] = {"summary": _summary(rows), "runs": rows}
    if a.modules:
        doc["module_ms"] = [_child("present", array, "modules", env)["module_ms"]
                            for _ in range(a.runs)]
    if a.profile:
        _child("present", array, "profile", env)
    print(f"first call, {array}, {a.runs} fresh processes per mode (ms: min / median)")
    keys = ["import_sgemm_ms", "first_total_ms", "first_cpu_ms"] + [c[0] for c in CALLS]
    print(f"{'':28s}{'bytecode present':>20s}{'bytecode absent':>20s}")
    for k in keys:
        cells = [doc["modes"][m]["summary"][k] for m in ("present", "absent")]
        print(f"{k:28s}" + "".join(f"{c['min']:>9.1f} / {c['median']:<8.1f}" for c in cells))
    print("new modules by package (first run, bytecode present):",
          doc["modes"]["present"]["runs"][0].get("new_modules_by_package"))
    for k in ("modules_imported", "imported_cuda_bindings_driver", "imported_cuda_bindings",
              "imported_cuda_pathfinder", "imported_cuda_core",
              "imported_cupy", "sgemm_code_from", "bundle_kernels"):
        print(f"{k:28s}" + "".join(f"{', '.join(doc['modes'][m]['summary'][k]):>20s}"
                                   for m in ("present", "absent")))
    if a.modules:
        runs = doc["module_ms"]
        print(f"each module's own import time, ms (min of {len(runs)} processes), "
              "in import order:")
        total = 0.0
        for name in runs[0]:
            ms = min(r.get(name, float("inf")) for r in runs)
            total += ms
            print(f"  {name:34s}{ms:7.2f}")
        print(f"  {'sum':34s}{total:7.2f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
