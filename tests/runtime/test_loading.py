"""A call whose kernels come from the disk cache or the bundle loads and
launches them without importing cuda.core, cuda.bindings or cuda.pathfinder
(runtime/cu.py, runtime/launcher.py, runtime/device.py): their imports were
most of a process's first call (docs/first-call.md).  No GPU is needed: a
stand-in libcuda (tests/runtime/fake_driver.py) answers as an H100 would and
records the calls.

Each check runs fresh interpreters where importing cuda.core (and CuPy,
PyTorch) fails.  The first fills a kernel cache (NVRTC replaced by made-up
cubins, so nothing is compiled for real) and, for the bundle case, makes a
bundle of those entries with sgemm.build; then a new one runs the same
sgemm.gemm calls on __cuda_array_interface__ arrays with NVRTC as it is (a
compile would import cuda.core) and reports what it loaded and launched.
Going back to loading through cuda.core's ObjectCode, or asking cuda.core
for the device or the cluster occupancy, makes the second process fail;
going through cuda.bindings' driver module fails the modules check."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# The measured first call's shape, and one whose plan asks the driver how many
# thread-block clusters run at once (db_cluster candidates on sm_90).
SHAPES = [(4096, 4096, 4096), (300, 200, 500)]

_SCRIPT = textwrap.dedent('''
    import hashlib, json, sys
    sys.path.insert(0, {here!r})
    import fake_driver as F

    phase, bundle_out = sys.argv[1], sys.argv[2]
    blocker = F.Blocker("cuda.core", "cupy", "torch")
    sys.meta_path.insert(0, blocker)
    F.install()
    import sgemm
    from sgemm.runtime import compiler

    made = []
    if phase == "fill":
        def fake_nvrtc(source, expr, arch, extra=(), debug=None):
            key = compiler.cache_key(source, expr, arch, extra, debug)
            made.append((source, expr, arch, key))
            mangled = "_Zfake" + hashlib.sha1(expr.encode()).hexdigest()   # str: encoded on load
            return compiler.Compiled(key, b"fake cubin " + key.encode(), {{expr: mangled}},
                                     "", arch, expr)
        compiler.nvrtc_compile = fake_nvrtc

    for i, (m, n, k) in enumerate({shapes!r}):
        base = (i + 1) << 40
        a = F.CudaArray((m, k), base)
        b = F.CudaArray((k, n), base + (1 << 36))
        c = F.CudaArray((m, n), base + (2 << 36))
        sgemm.gemm(a, b, c)

    if phase == "fill" and bundle_out:
        from sgemm import build
        build.build(bundle_out, items=[build.Item(a, s, e, "?") for s, e, a, _ in made],
                    use_cache=True, progress=False)
    calls = F.calls
    print(json.dumps({{
        "cuda_core": sorted(m for m in sys.modules if m.startswith("cuda.core")),
        "cuda": sorted(m for m in sys.modules if m == "cuda" or m.startswith("cuda.")),
        "nvrtc_on_disk": compiler._nvrtc_version_on_disk() is not None,
        "blocked": blocker.attempts,
        "made": [[e, k, "_Zfake" + hashlib.sha1(e.encode()).hexdigest()] for _, e, _, k in made],
        "loaded": [c[0].decode() for c in calls.get("cuLibraryLoadData", [])],
        "names": [c[1].decode() for c in calls.get("cuLibraryGetKernel", [])],
        "launches": len(calls.get("cuLaunchKernelEx", [])),
        "cluster_queries": [c[1:] for c in calls.get("cuOccupancyMaxActiveClusters", [])],
    }}))
''')


def _run(phase: str, cache: Path, bundle: Path | None, make_bundle: Path | None = None) -> dict:
    env = dict(os.environ, SGEMM_CACHE_DIR=str(cache), SGEMM_PLAN_CACHE="0")
    for var in ("SGEMM_LAUNCH", "SGEMM_DEFINES", "SGEMM_DEBUG", "SGEMM_BUNDLE_DIR"):
        env.pop(var, None)
    env["SGEMM_BUNDLE"] = "1" if bundle else "0"
    if bundle:
        env["SGEMM_BUNDLE_DIR"] = str(bundle)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    code = _SCRIPT.format(here=str(HERE), shapes=SHAPES)
    r = subprocess.run([sys.executable, "-c", code, phase, str(make_bundle or "")],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert r.returncode == 0, f"{phase} phase failed:\n{r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("source", ["cache", "bundle"])
def test_calls_served_from_cache_or_bundle_never_import_cuda_core(tmp_path, source):
    bundle = tmp_path / "bundle" if source == "bundle" else None
    fill = _run("fill", tmp_path / "cache", None, make_bundle=bundle)
    made = {key: (expr, mangled) for expr, key, mangled in fill["made"]}
    assert made and fill["launches"] >= len(SHAPES)
    if bundle is not None:
        assert {p.stem for p in bundle.glob("*.cubin")} == set(made)

    empty = tmp_path / "empty-cache"
    hit = _run("hit", empty if bundle else tmp_path / "cache", bundle)
    assert hit["cuda_core"] == [] and not [m for m in hit["blocked"] if m.startswith("cuda.core")]
    # nor cuda.bindings nor cuda.pathfinder: nothing of cuda-python at all,
    # where NVRTC's version can be read without loading it (a wheel's NVRTC)
    assert "cuda.bindings.driver" not in hit["cuda"]
    if hit["nvrtc_on_disk"]:
        assert hit["cuda"] == []
    # every kernel came from the entries the fill wrote (a compile would have
    # needed cuda.core), and was looked up by the name NVRTC lowered it to
    loaded = [blob.removeprefix("fake cubin ") for blob in hit["loaded"]]
    assert loaded and set(loaded) <= set(made)
    assert hit["names"] == [made[key][1] for key in loaded]
    assert hit["launches"] == fill["launches"]
    # the planner's occupancy query, through the driver: a grid of cs clusters
    # of cs blocks, as cuda.core's LaunchConfig(grid=cs, cluster=cs) built it
    from sgemm.kernels import registry
    threads = registry.get("db_cluster").configs["k4"].threads
    assert hit["cluster_queries"]
    for grid, block, attrs in hit["cluster_queries"]:
        assert attrs == [["CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", [1, 1, attrs[0][1][2]]]]
        cs = attrs[0][1][2]
        assert grid == [1, 1, cs * cs] and block == threads
    if bundle is not None:
        assert not list(empty.glob("*.cubin")), "a bundle hit is not copied into the cache"


_DEVICE = textwrap.dedent('''
    import sys
    sys.path.insert(0, {here!r})
    import fake_driver as F
    sys.meta_path.insert(0, F.Blocker("cuda.core"))
    F.install({{"MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": None}} if sys.argv[1] == "no-optin" else None)
    from sgemm.runtime import device
    d = device.info(0)
    device.make_current(0)
    device.make_current(0)                      # already current: no driver call
    try:
        device.info(1)
    except ValueError as e:
        bad = str(e)
    print(repr((d.name, d.cc, d.arch, d.sm_count, d.smem_optin, device.gpu_key(d),
                len(F.calls["cuCtxSetCurrent"]), len(F.calls["cuDevicePrimaryCtxRetain"]),
                bad, sorted(m for m in sys.modules if m.startswith("cuda.")))))
''')


@pytest.mark.parametrize("case", ["h100", "no-optin"])
def test_device_queries_go_through_the_driver(case):
    """DeviceInfo from cuDeviceGetAttribute (an attribute the driver does not
    know reads 0, and the opt-in shared memory falls back to the per-block
    limit), the primary context retained once and made current once."""
    import ast
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                  os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-c", _DEVICE.format(here=str(HERE)), case],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr[-4000:]
    name, cc, arch, sms, optin, key, set_current, retained, bad, core = ast.literal_eval(
        r.stdout.strip().splitlines()[-1])
    assert (name, cc, arch, sms) == ("NVIDIA H100 80GB HBM3", (9, 0), "sm_90a", 132)
    assert optin == (232448 if case == "h100" else 49152)
    assert key == "nvidia-h100-80gb-hbm3-sm132-sm_90a"
    assert (set_current, retained) == (1, 1)
    assert bad == "device_id must be within [0, 1), got 1"
    assert core == []       # neither cuda.core nor cuda.bindings


def test_mangled_name_lookup():
    from sgemm.runtime.launcher import _mangled
    assert _mangled({"f<1>": b"_Z1fILi1EEvv"}, "f<1>") == b"_Z1fILi1EEvv"
    assert _mangled({b"f<1>": "_Z1fILi1EEvv"}, "f<1>") == b"_Z1fILi1EEvv"
    assert _mangled({}, "plain") == b"plain"         # as cuda.core's get_kernel: the name itself


def test_a_failed_driver_call_raises_device_error():
    """The CUresult by name (cuGetErrorName) and number; a code the driver
    has no name for by number alone.  The call that failed is named."""
    sys.path.insert(0, str(HERE))
    import fake_driver as F

    from sgemm.errors import DeviceError
    from sgemm.runtime import cu
    F.install()
    try:
        cu.check(0, "cuInit")
        with pytest.raises(DeviceError,
                           match=r"cuLibraryLoadData failed: CUDA_ERROR_INVALID_IMAGE \(200\)"):
            cu.check(200, "cuLibraryLoadData")
        with pytest.raises(DeviceError, match=r"cuInit failed: CUresult 9999 \(9999\)"):
            cu.check(9999, "cuInit")
        F.fail["cuLibraryLoadData"] = 200       # through a real call of the layer
        with pytest.raises(DeviceError, match=r"cuLibraryLoadData \(f<1>\) failed: "
                                              r"CUDA_ERROR_INVALID_IMAGE"):
            cu.library_load_data(b"x", " (f<1>)")
    finally:
        F.fail.clear()
        cu.use(None)
