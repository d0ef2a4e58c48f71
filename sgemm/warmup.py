"""``sgemm warmup``: compile ahead of time, in parallel, what first calls would.

    sgemm warmup                          # the planner's full set for this GPU
    sgemm warmup --arch sm_89             # ... for an arch, no GPU needed
    sgemm warmup --shapes shapes.txt      # what these problems launch (bench's shapes format)
    sgemm warmup --kernels tile,gemv      # every config and layout of named kernels
    sgemm warmup --list                   # what would be compiled, and what is there already

Kernels go into the kernel cache (``SGEMM_CACHE_DIR``, default
~/.cache/sgemm), where the library's first calls find them.  Kernels the
prebuilt bundle already holds (sgemm/build.py) or the cache already has are
skipped, so on a supported GPU with the wheel's bundle the full set costs
nothing; it matters for a new arch, another NVRTC than the bundle's, an
editable install without ``python -m sgemm.build``, or ``SGEMM_DEBUG`` /
``SGEMM_DEFINES`` builds.  A container can bake the cache into an image
layer: docs/first-call.md.

``--shapes`` plans each problem as the library would (``plan.prepare``:
tuned tables, the cost model, pack, peel, split-K) on a description of the
GPU, recording the kernels the launches would load instead of loading them
(``launched``; tests/test_bundle.py uses it to check the bundle's coverage).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time

from .build import Item, MODELS, kernel_params, layouts, manifest, report, run_parallel

PRECISIONS = ("ieee", "tf32x3", "tf32")


# ---- what a problem launches, without a GPU -------------------------------------------------
@contextlib.contextmanager
def _recording(found: list):
    """plan.prepare without loading or allocating anything: every
    launcher.get_kernel call appends (spec, params, ta, tb, aligned) to
    ``found`` and returns a placeholder; workspaces are fake pointers."""
    from . import launches
    from .runtime import launcher

    def get_kernel(spec, p, ta, tb, aligned, dev):
        found.append((spec, p, ta, tb, aligned))
        return object()

    def allocate_workspace(nfloats, device_id, zero_floats=0):
        return None, 1 << 40

    saved = launcher.get_kernel, launches.allocate_workspace
    launcher.get_kernel, launches.allocate_workspace = get_kernel, allocate_workspace
    try:
        yield found
    finally:
        launcher.get_kernel, launches.allocate_workspace = saved


def described(dev):
    """``dev`` as a description: an id no device has, so no planning step
    asks the driver (cluster occupancy) and the rules' SM-count fallbacks
    apply (db_cluster's cluster sizes are all bundled either way)."""
    return dataclasses.replace(dev, id=-1)


def launched(problems, dev, precision: str = "ieee", kernel="auto") -> list:
    """[(spec, params, ta, tb, aligned)] that ``plan.prepare`` would load
    for these problems (one call's list) on ``dev``."""
    from .plan import prepare
    found: list = []
    with _recording(found):
        prepare(list(problems), described(dev), kernel, precision)
    return found


def items_of(found, arch: str) -> list[Item]:
    return sorted({Item(arch, s.source, s.name_expression(p, ta, tb, al), s.name)
                   for s, p, ta, tb, al in found})


def shape_items(shapes, dev, precisions=("ieee",)) -> list[Item]:
    """Kernels the first call of each shape loads: row-major operands as a
    user passes them, aligned and at an odd address (a view)."""
    from .tune import canonical
    from .errors import SgemmError
    found: list = []
    for shape in shapes:
        for aligned in (True, False):
            prob = canonical(shape, aligned)
            for prec in precisions:
                try:
                    found += launched([prob], dev, prec)
                except SgemmError as e:     # the call itself would fail: nothing to warm
                    print(f"sgemm warmup: {shape.key} ({prec}): {e}", file=sys.stderr)
    return items_of(found, dev.arch)


def named_items(names, arch: str) -> list[Item]:
    """Every config, scheme params and layout of the named kernels on arch
    (registered kernels by name or id; also scale, pack, splitk_reduce[_vec])."""
    from .kernels import registry, schemes, utility
    util = {s.name for s in schemes.UTILITY_SPECS + utility.UTILITY}
    specs = {n.strip() if n.strip() in util else registry.get(n.strip()).name
             for n in names if n.strip()}
    out = set()
    for spec, p in kernel_params(arch):
        if spec.name in specs:
            for ta, tb, al in layouts(spec):
                out.add(Item(arch, spec.source, spec.name_expression(p, ta, tb, al), spec.name))
    return sorted(out)


# ---- compiling into the cache ---------------------------------------------------------------
def status(item: Item) -> str:
    """'bundled', 'cached' or 'missing' for the runtime's key of this item."""
    from .runtime import compiler
    key = compiler.cache_key(item.source, item.expr, item.arch)
    if compiler.bundled(key) is not None:
        return "bundled"
    if compiler.read_entry(compiler.cache_dir() / f"{key}.cubin", key) is not None:
        return "cached"
    return "missing"


def _warm_one(item: Item):
    from .runtime.compiler import compile_kernel
    t = time.perf_counter()
    try:
        compile_kernel(item.source, item.expr, item.arch)
    except Exception as e:  # noqa: BLE001 -- reported by the parent
        return item, time.perf_counter() - t, str(e).splitlines()[0]
    return item, time.perf_counter() - t, None


def warm(items: list[Item], jobs: int | None = None, progress: bool = True) -> dict:
    """Compile the items the bundle and cache lack; counts and failures."""
    have = {i: status(i) for i in items}
    todo = [i for i in items if have[i] == "missing"]
    t0 = time.perf_counter()
    res = run_parallel(_warm_one, todo, jobs, f"sgemm warmup: {len(todo)} kernels", progress)
    return {"kernels": len(items), "bundled": sum(v == "bundled" for v in have.values()),
            "cached": sum(v == "cached" for v in have.values()), "compiled": len(todo),
            "failed": [f"{i.expr} ({i.arch}): {e}" for i, _, e in res if e],
            "seconds": round(time.perf_counter() - t0, 1)}


# ---- command line ---------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", metavar="ARCH", help="compile for this arch (sm_80, sm_86, "
                   "sm_89, sm_90a, ...) instead of this machine's GPU; needs no GPU")
    p.add_argument("--shapes", metavar="FILE", help="only what these problems launch "
                   "(one 'M N K [transA transB] [batch]' per line, as sgemm bench reads)")
    p.add_argument("--kernels", metavar="LIST", help="only these kernels (names or ids, "
                   "comma-separated): every config and layout")
    p.add_argument("--precision", default="ieee", metavar="P",
                   help="with --shapes: ieee, tf32x3, tf32 or all (default ieee)")
    p.add_argument("--jobs", "-j", type=int, help="compiler processes (default: CPU count)")
    p.add_argument("--list", action="store_true", help="print each kernel and whether it "
                   "is bundled, cached or missing; compile nothing")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line")


def _device(arch: str | None):
    """(DeviceInfo, arch): this GPU's, or a model of ``arch``."""
    if arch is None:
        from .runtime import device
        if not device.has_gpu():
            raise SystemExit("sgemm warmup: no CUDA GPU is visible; name the target with "
                             "--arch (e.g. --arch sm_90a)")
        dev = device.info(0)
        return dev, dev.arch
    if not (arch.startswith("sm_") and arch[3:5].isdigit()):
        raise SystemExit(f"sgemm warmup: --arch {arch!r} is not an arch like sm_90a")
    model = MODELS.get(arch)
    if model is None:                     # a new arch: the nearest model, its compute capability
        digits = "".join(ch for ch in arch[3:] if ch.isdigit())
        cc = (int(digits[:-1]), int(digits[-1]))
        model = dataclasses.replace(MODELS["sm_90a"], name=f"model {arch}", cc=cc)
    return model, arch


def select(args) -> list[Item]:
    dev, arch = _device(args.arch)
    if args.shapes:
        from .bench.sizes import read_shapes
        precs = PRECISIONS if args.precision == "all" else (args.precision,)
        bad = [p for p in precs if p not in PRECISIONS]
        if bad:
            raise SystemExit(f"sgemm warmup: --precision {bad[0]!r}: one of "
                             f"{', '.join(PRECISIONS)} or all")
        try:
            shapes = read_shapes(args.shapes)
        except ValueError as e:
            raise SystemExit(f"sgemm warmup: {e}") from None
        items = shape_items(shapes, dev, precs)
        if dev.arch != arch:
            items = [dataclasses.replace(i, arch=arch) for i in items]
        return items
    if args.kernels:
        try:
            return named_items(args.kernels.split(","), arch)
        except ValueError as e:
            raise SystemExit(f"sgemm warmup: {e}") from None
    return manifest((arch,))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="sgemm warmup", description=__doc__.split("\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


def run(args) -> int:
    items = select(args)
    if args.list:
        for i in items:
            print(f"{status(i):8s} {i.arch} {i.source} {i.expr}")
        return 0
    r = warm(items, args.jobs, not args.quiet)
    from .runtime.compiler import cache_dir
    return report("sgemm warmup", f"{r['kernels']} kernels: {r['bundled']} bundled, "
                  f"{r['cached']} already cached, {r['compiled']} compiled into {cache_dir()} "
                  f"in {r['seconds']} s", r["failed"])


if __name__ == "__main__":
    sys.exit(main())
