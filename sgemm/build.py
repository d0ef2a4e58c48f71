"""Prebuilt kernels: the manifest of every instantiation the library may
launch on its own, and the build that compiles it, without a GPU, into a
bundle that ships in the wheel.

    python -m sgemm.build                      # every arch in ARCHS, into sgemm/_bundle
    python -m sgemm.build --arch sm_90a        # one arch
    python -m sgemm.build --list               # print the manifest, compile nothing
    python -m sgemm.build --out DIR --jobs 16  # elsewhere, 16 processes

The manifest (``manifest(archs)``) is a pure function of the registry, the
schemes' size rules and the shipped tuned tables: no compiling, no GPU.  It
holds, for each arch,

* every named config of every registered kernel (what ``kernel=NAME`` and
  the planner's tile lists use);
* the params the schemes' size rules make beyond the named configs:
  db_cluster's "k4" tile in clusters of 1-8 and
  its tall/wide plans (``schemes.choose_db_cluster``, ``planner.db_tall_config``);
* every entry of a shipped tuned table for that arch;
* the utility kernels the schemes launch: split-K reduction (both), the pack
  copy, the beta-scale;

each in every layout (trans_a, trans_b) and, for kernels with float4
variants, aligned and not.  tests/test_bundle.py checks that it covers every
kernel the planner weighs and every launch ``plan.prepare`` builds over a
dense grid of problems, on a device model of each arch.

The build compiles each item with NVRTC in parallel processes (as
``runtime.compiler.nvrtc_compile``: the least-local-memory draw of ptxas)
and writes one cache entry per kernel (the disk cache's format, verified on
read) plus ``index.json`` (the NVRTC version, the sources' digest and the
keys).  It is incremental: entries already in the output directory or in
the kernel cache (``SGEMM_CACHE_DIR``) are reused, so a second build with
the same NVRTC and sources compiles nothing; entries of old builds are
removed.  ``runtime.compiler`` consults the bundle before the disk cache and
NVRTC, and ignores it when it was built by another NVRTC or from other
sources.  See docs/first-call.md.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .runtime.compiler import INDEX
from .runtime.device import DeviceInfo
from .tune import DEVICE_MODELS

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90a")
BUNDLE_FORMAT = 1

# One device model per arch, for the manifest's shared-memory checks and the
# tests' planner sweeps: A100 SXM and H100 SXM (sgemm.tune's), A10 and L4
# (datasheet numbers).
MODELS = {
    "sm_80": DEVICE_MODELS["a100"],
    "sm_86": DeviceInfo(0, "NVIDIA A10", (8, 6), 72, 101376, 102400, 6291456,
                        1695000, 6251000, 384, 24 << 30),
    "sm_89": DeviceInfo(0, "NVIDIA L4", (8, 9), 58, 101376, 102400, 50331648,
                        2040000, 6251000, 192, 24 << 30),
    "sm_90a": DEVICE_MODELS["h100"],
}


@dataclass(frozen=True, order=True)
class Item:
    """One compiled kernel: what runtime.compiler.compile_kernel is asked for."""
    arch: str
    source: str
    expr: str          # NVRTC name expression
    kernel: str        # registered name (for reports)


def default_out() -> Path:
    from .runtime.compiler import BUNDLE_DIR
    return BUNDLE_DIR


# ---- the manifest ---------------------------------------------------------------------------
def _cc(arch: str) -> int:
    """'sm_90a' -> 90, 'sm_100a' -> 100."""
    return int("".join(ch for ch in arch[3:] if ch.isdigit()))


def _scheme_params(spec):
    """Params the schemes' size rules give beyond the spec's named configs."""
    from .kernels import schemes as S
    if spec.name == "db_cluster":
        D = S.DB_CLUSTER_CONFIGS
        for cs in S.DB_CLUSTER_SIZES:  # choose_db_cluster, the occupancy query, db_tall_config
            yield D["k4"].replace(split_k=cs)
            for name in ("wide", "tall"):
                yield D[name].replace(threads=2 * S.db_group_threads(D[name]), split_k=cs)
        gt = S.db_group_threads(D["k2"])
        yield D["k2"].replace(threads=2 * gt, split_k=2)
        yield D["k2"].replace(threads=4 * gt, split_k=1)


def _tuned_params(arch: str):
    """(kernel name, params) of every shipped tuned table for this arch."""
    from .dispatch import DATA_DIR, TunedTable, entry_params
    for path in sorted(DATA_DIR.glob(f"tuned-*-{arch}.json")):
        t = TunedTable.load(path)
        for e in (t.entries.values() if t else ()):
            try:
                yield e["kernel"], entry_params(e)
            except (KeyError, TypeError, ValueError):
                continue


def kernel_params(arch: str) -> list[tuple]:
    """(spec, params) pairs the library may launch on this arch (with
    repeats: ``manifest`` keeps one item per name expression)."""
    from .kernels import registry, schemes, utility
    from .kernels.spec import SMEM_LIMIT
    cc = _cc(arch)
    smem = MODELS[arch].smem_optin if arch in MODELS else SMEM_LIMIT.get(cc)
    out = []
    for spec in registry.KERNELS.values():
        if cc < spec.min_cc:
            continue
        for p in itertools.chain(spec.configs.values(), _scheme_params(spec)):
            out.append((spec, p))
    for name, p in _tuned_params(arch):
        spec = registry.KERNELS.get(name)
        if spec is not None and cc >= spec.min_cc:
            out.append((spec, p))
    for spec in schemes.UTILITY_SPECS + utility.UTILITY:
        # a kernel built for arch-specific targets only (wgmma) runs on those alone
        if arch in spec.archs or not all(a.endswith("a") for a in spec.archs):
            out.append((spec, spec.configs["default"]))
    return [(s, p) for s, p in out if s.plain or not s.can_implement(p, smem)]


def layouts(spec):
    """(ta, tb, aligned) of every instantiation of a spec's params."""
    if spec.plain:
        return [(False, False, False)]
    return list(itertools.product((False, True), (False, True),
                                  (False, True) if spec.vector_loads else (False,)))


def manifest(archs=ARCHS) -> list[Item]:
    """Every kernel the bundle holds, sorted; pure (no compiling, no GPU)."""
    seen: dict[tuple, Item] = {}
    for arch in archs:
        for spec, p in kernel_params(arch):
            for ta, tb, al in layouts(spec):
                expr = spec.name_expression(p, ta, tb, al)
                seen.setdefault((arch, spec.source, expr), Item(arch, spec.source, expr,
                                                                spec.name))
    return sorted(seen.values())


# ---- parallel compiling with a progress line ------------------------------------------------
class Progress:
    """'label [#####     ] 120/480  31 s' on stderr: redrawn in place on a
    terminal, a line every 10 % elsewhere (CI logs)."""

    def __init__(self, total: int, label: str, stream=None, width: int = 30):
        self.total, self.label, self.width = total, label, width
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done, self.t0, self._last = 0, time.perf_counter(), -1

    def step(self, n: int = 1) -> None:
        self.done += n
        tenth = 10 * self.done // max(self.total, 1)
        if self.tty or tenth != self._last or self.done == self.total:
            self._last = tenth
            self.draw()

    def draw(self) -> None:
        frac = self.done / max(self.total, 1)
        bar = "#" * int(frac * self.width)
        line = (f"{self.label} [{bar:<{self.width}}] {self.done}/{self.total} "
                f"{time.perf_counter() - self.t0:5.0f} s")
        end = "" if self.tty and self.done < self.total else "\n"
        print(("\r" if self.tty else "") + line, end=end, file=self.stream, flush=True)


def run_parallel(fn, tasks: list, jobs: int | None = None, label: str = "compiling",
                 progress: bool = True):
    """fn over tasks in ``jobs`` spawned processes (never forked: the parent
    may hold a CUDA context), results in completion order."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks) or 1))
    bar = Progress(len(tasks), label) if progress and tasks else None
    out = []
    if jobs == 1:
        for t in tasks:
            out.append(fn(t))
            bar and bar.step()
        return out
    import multiprocessing as mp
    with mp.get_context("spawn").Pool(jobs) as pool:
        for r in pool.imap_unordered(fn, tasks, chunksize=1):
            out.append(r)
            bar and bar.step()
    return out


def _cost(item: Item) -> int:
    """Rough compile-time rank, so the slow ones start first."""
    slow = ("09_", "21_", "22_", "20_", "38_", "33_")
    return next((i for i, s in enumerate(slow) if item.source.startswith(s)), len(slow))


def _build_one(task):
    """Compile one item into out_dir (and the kernel cache); (item, key,
    cubin bytes, seconds, local-memory bytes, error or None)."""
    item, out_dir, to_cache = task
    from .runtime import compiler
    key = compiler.cache_key(item.source, item.expr, item.arch, (), False)
    t = time.perf_counter()
    try:
        c = compiler.nvrtc_compile(item.source, item.expr, item.arch, (), False)
    except Exception as e:  # noqa: BLE001 -- reported by the parent
        return item, key, 0, time.perf_counter() - t, 0, f"{item.expr} ({item.arch}): {e}"
    dt = time.perf_counter() - t
    path = Path(out_dir) / f"{key}.cubin"
    compiler.write_entry(path, c)
    os.chmod(path, 0o644)           # package data: readable by every user
    if to_cache:
        try:
            compiler.write_entry(compiler.cache_dir() / f"{key}.cubin", c)
        except OSError:
            pass
    r = c.resources()
    return item, key, len(c.cubin), dt, (r["spill_stores"] or 0) + (r["stack"] or 0), None


def build(out: Path | None = None, archs=ARCHS, jobs: int | None = None,
          use_cache: bool = True, progress: bool = True, items: list[Item] | None = None
          ) -> dict:
    """Compile ``items`` (default: the manifest of ``archs``) into ``out``;
    returns the index written there."""
    from .runtime import compiler
    for env in (compiler.DEFINES_ENV, compiler.DEBUG_ENV):
        if os.environ.pop(env, None):       # they change the binaries: never bundled
            print(f"sgemm.build: ignoring ${env}", file=sys.stderr)
    out = Path(out or default_out())
    out.mkdir(parents=True, exist_ok=True)
    items = sorted(set(items if items is not None else manifest(archs)))
    keys = {compiler.cache_key(i.source, i.expr, i.arch, (), False): i for i in items}
    t0 = time.perf_counter()
    todo, reused = [], 0
    for key, item in keys.items():
        path = out / f"{key}.cubin"
        if compiler.read_entry(path, key) is not None:
            continue
        hit = compiler.read_entry(compiler.cache_dir() / f"{key}.cubin", key) if use_cache else None
        if hit is not None:
            compiler.write_entry(path, hit)
            os.chmod(path, 0o644)
            reused += 1
            continue
        todo.append(item)
    todo.sort(key=lambda i: (_cost(i), i))
    results = run_parallel(_build_one, [(i, str(out), use_cache) for i in todo], jobs,
                           f"sgemm.build: {len(todo)} kernels", progress)
    failed = [r[5] for r in results if r[5]]
    per_kernel: dict[str, list] = {}          # kernel -> [count, compile seconds, bytes]
    for item, _, nbytes, seconds, _, _ in results:
        row = per_kernel.setdefault(f"{item.kernel}:{item.arch}", [0, 0.0, 0])
        row[0] += 1
        row[1] = round(row[1] + seconds, 2)
        row[2] += nbytes
    for stale in out.glob("*.cubin"):
        if stale.stem not in keys:
            stale.unlink()
    entries = {k: [i.arch, i.source, i.expr] for k, i in sorted(keys.items())
               if (out / f"{k}.cubin").exists()}
    index = {"format": BUNDLE_FORMAT, "cache_format": compiler.CACHE_FORMAT,
             "nvrtc": "%d.%d" % compiler.nvrtc_version(), "sources": compiler.sources_digest(),
             "archs": sorted({i.arch for i in items}), "count": len(entries),
             "bytes": sum((out / f"{k}.cubin").stat().st_size for k in entries),
             "entries": entries}        # last: runtime.compiler reads only what is above it
    tmp = out / (INDEX + ".tmp")
    tmp.write_text(json.dumps(index, indent=1))
    os.replace(tmp, out / INDEX)
    compiler.forget_bundle()
    index["stats"] = {"compiled": len(results) - len(failed), "reused_from_cache": reused,
                      "already_built": len(keys) - len(todo) - reused, "failed": failed,
                      "seconds": round(time.perf_counter() - t0, 1),
                      "compile_seconds": round(sum(r[3] for r in results), 1),
                      "with_local_memory": sum(1 for r in results if r[4]),
                      "per_kernel": per_kernel}
    return index


# ---- command line ---------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m sgemm.build",
        description="Compile the kernels the library may launch into a bundle "
                    "(no GPU needed; runtime.compiler uses it before NVRTC).")
    p.add_argument("--arch", action="append", metavar="ARCH",
                   help=f"target (repeatable; default: {' '.join(ARCHS)})")
    p.add_argument("--out", metavar="DIR", help="output directory (default: the "
                   "package's _bundle directory, which the wheel ships)")
    p.add_argument("--jobs", "-j", type=int, help="compiler processes (default: CPU count)")
    p.add_argument("--no-cache", action="store_true", help="neither reuse nor fill the "
                   "kernel cache ($SGEMM_CACHE_DIR)")
    p.add_argument("--list", action="store_true", help="print the manifest and exit")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    archs = tuple(args.arch or ARCHS)
    bad = [a for a in archs if not (a.startswith("sm_") and a[3:5].isdigit())]
    if bad:
        print(f"sgemm.build: {', '.join(bad)} is not an arch like sm_90a", file=sys.stderr)
        return 2
    if args.list:
        for i in manifest(archs):
            print(i.arch, i.source, i.expr)
        return 0
    index = build(args.out, archs, args.jobs, not args.no_cache, not args.quiet)
    s = index["stats"]
    return report("sgemm.build", f"{index['count']} kernels for {', '.join(index['archs'])} "
                  f"(NVRTC {index['nvrtc']}), {index['bytes'] / 2 ** 20:.1f} MiB in "
                  f"{args.out or default_out()}; compiled {s['compiled']}, from the cache "
                  f"{s['reused_from_cache']}, already built {s['already_built']}; "
                  f"{s['seconds']} s ({s['compile_seconds']} s of compiling)", s["failed"])


def report(prog: str, summary: str, failed: list) -> int:
    """The summary line, one line per failed kernel; the exit code."""
    print(f"{prog}: {summary}")
    for f in failed:
        print(f"{prog}: FAILED {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
