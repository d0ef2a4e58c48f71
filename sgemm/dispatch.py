"""Kernel, tile and scheme choice for kernel="auto", and split-K's launches.

Order of authority, first match wins:

1. **Tuned table** for this GPU (``sgemm tune`` writes it): the user's table
   ``cache_dir()/tuned/<gpu-key>.json`` (or ``$SGEMM_TUNED_TABLE``), else the
   one shipped in ``sgemm/data/tuned-<gpu-key>.json``, else a shipped table
   of a GPU with the same SM count and arch.  Keyed by *shape class*: m, n, k
   in half octaves (exact up to 16), batch in octaves, the transposes,
   float4-aligned or not, whole tiles or not.  An entry is used only if its
   kernel is registered, has the requested precision and ``can_implement``
   its params on this device.  ``SGEMM_TUNED=0`` turns tables off.
2. **Measured choices** (measure.py): on a shape's first call, the cost
   model's close candidates timed on the caller's stream; the fastest is
   kept for the process and in the user's cache directory.
3. **The cost model** (planner.py, cost.py): every candidate plan with its
   predicted time; the fastest wins.  docs/dispatch.md states the model.
4. The precision's own kernel with its size rule, where the model has no
   candidate (a precision with no calibrated kernel on this GPU).

A full search runs only when asked (``sgemm tune``, ``tune.autotune``).
``choose(prob, dev, kernel, precision) -> (spec, params)`` also serves
explicit kernels; ``select`` adds the scheme name, and ``scheme_launches``
builds the two launches (and the workspace) of split-K.
"""
from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

from .errors import ArgumentError
from .launches import (allocate_workspace, fused_launches, scheme_for,  # noqa: F401 (re-exported)
                       scheme_launches, splitk_geometry)
from .planner import (auto_spec, cluster_capacity, db_tall_config,  # noqa: F401 (re-exported)
                      spec_params)
from .runtime.device import gpu_key  # noqa: F401 (re-exported)
from . import planner
from .kernels import registry
from .kernels.params import TileParams
from .kernels.spec import KernelSpec
from .problem import Problem
from .records import Record
from .runtime.device import DeviceInfo

TABLE_FORMAT = 2
DATA_DIR = Path(__file__).resolve().parent / "data"


# ---- keys -----------------------------------------------------------------------------
def _bucket(x: int) -> int:
    """Exact up to 16 (gemv territory), else the nearest half octave
    (..., 2048, 2896, 4096, ...), 17..22 labelled 23 to stay apart from 16."""
    if x <= 16:
        return int(x)
    return max(23, int(round(2 ** (round(2 * math.log2(x)) / 2))))


def _bbucket(b: int) -> int:
    return 1 if b <= 1 else int(2 ** round(math.log2(b)))


def shape_class(prob: Problem) -> str:
    """'m4096-n4096-k4096-b1-NN-a-f': half-octave buckets of m, n, k (exact up
    to 16), octave of the batch, transposes, a/u (float4-aligned operands or
    not) and f/p (m and n multiples of 128 and k of 32 -- whole tiles -- or
    not: 1000 and 1024 share a bucket but not their best kernel)."""
    fit = prob.m % 128 == 0 and prob.n % 128 == 0 and prob.k % 32 == 0
    return (f"m{_bucket(prob.m)}-n{_bucket(prob.n)}-k{_bucket(prob.k)}-b{_bbucket(prob.batch)}"
            f"-{prob.transposes}-{'a' if prob.aligned else 'u'}-{'f' if fit else 'p'}")


# ---- tuned tables ----------------------------------------------------------------------
def user_table_path(dev: DeviceInfo) -> Path:
    from .runtime.compiler import cache_dir
    return cache_dir() / "tuned" / f"{gpu_key(dev)}.json"


def shipped_table_path(dev: DeviceInfo) -> Path:
    return DATA_DIR / f"tuned-{gpu_key(dev)}.json"


def tables_enabled() -> bool:
    return os.environ.get("SGEMM_TUNED", "1") not in ("0", "off", "no", "")


class TunedTable(Record):
    """One GPU's tuned choices by shape class, and the file they came from
    or go to.  A Record (records.py), not hashable (its entries are a dict)."""

    __slots__ = ("gpu", "entries", "path")
    __hash__ = None

    def __init__(self, gpu: str, entries: dict, path: Path | None = None):
        self.gpu = gpu
        self.entries = entries          # shape class -> {"kernel", "params", "time_ms", ...}
        self.path = path

    @classmethod
    def empty(cls, gpu: str, path: Path | None = None) -> "TunedTable":
        return cls(gpu, {}, path)

    @classmethod
    def load(cls, path: Path) -> "TunedTable | None":
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != TABLE_FORMAT:
            return None
        return cls(data.get("gpu", ""), dict(data.get("entries", {})), Path(path))

    def save(self, path: Path | None = None) -> Path:
        import tempfile
        path = Path(path or self.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": TABLE_FORMAT, "gpu": self.gpu,
                "entries": dict(sorted(self.entries.items()))}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
        self.path = path
        return path

    def put(self, cls_key: str, spec: KernelSpec, params: TileParams, **info) -> None:
        e = {"kernel": spec.name, "params": params.as_dict()}
        e.update(info)
        self.entries[cls_key] = e

    def get(self, cls_key: str):
        return self.entries.get(cls_key)


_tables: dict[tuple, list] = {}
_memo: dict[tuple, tuple] = {}          # auto choices, cleared with the tables
_measured: dict[tuple, dict] = {}       # per device: shape_key -> measured (spec, params)
_session: dict[str, TunedTable] = {}     # in-memory entries (autotune without saving)
_tables_lock = threading.Lock()


def sibling_table_path(dev: DeviceInfo) -> Path | None:
    """A shipped table of another GPU with the same SM count and arch (an H100
    SXM uses the H200's: same SMs and clocks, only the memory differs)."""
    same = sorted(DATA_DIR.glob(f"tuned-*-sm{dev.sm_count}-{dev.arch}.json"))
    return same[0] if same else None


def load_tables(dev: DeviceInfo) -> list[TunedTable]:
    """Tables in order of authority: this process's (autotune), the user's
    (``sgemm tune``; or $SGEMM_TUNED_TABLE), the shipped one for this GPU,
    else a shipped sibling (same SM count and arch)."""
    key = gpu_key(dev)
    out = []
    if key in _session:
        out.append(_session[key])
    ck = (key, "files", os.environ.get("SGEMM_TUNED_TABLE"), os.environ.get("SGEMM_CACHE_DIR"))
    with _tables_lock:
        files = _tables.get(ck)
        if files is None:
            files = []
            shipped = shipped_table_path(dev)
            if not shipped.exists():
                shipped = sibling_table_path(dev) or shipped
            for path in (_override_path() or user_table_path(dev), shipped):
                t = TunedTable.load(path) if path.exists() else None
                if t is not None:
                    files.append(t)
            _tables[ck] = files
    return out + files


def _override_path() -> Path | None:
    p = os.environ.get("SGEMM_TUNED_TABLE")
    return Path(p) if p else None


def forget_tables() -> None:
    """Drop cached tables and memoized choices (after a table changed)."""
    with _tables_lock:
        _tables.clear()
        _memo.clear()


def forget_memo() -> None:
    """Drop memoized choices (after a measured choice was recorded)."""
    with _tables_lock:
        _memo.clear()


def session_table(dev: DeviceInfo) -> TunedTable:
    """This process's table (autotune without saving); call forget_tables()
    after changing it."""
    key = gpu_key(dev)
    if key not in _session:
        _session[key] = TunedTable.empty(key)
    return _session[key]


def entry_params(entry: dict) -> TileParams:
    fields = TileParams().as_dict()
    return TileParams(**{k: int(v) for k, v in entry["params"].items() if k in fields})


def lookup(prob: Problem, dev: DeviceInfo, precision: str = "ieee"
           ) -> tuple[KernelSpec, TileParams] | None:
    """The tuned choice for this problem's shape class, if a usable one exists."""
    if not tables_enabled():
        return None
    cls_key = shape_class(prob)
    for table in load_tables(dev):
        e = table.get(cls_key)
        if not e:
            continue
        try:
            spec = registry.get(e["kernel"])
            params = entry_params(e)
        except (ValueError, KeyError, TypeError):
            continue
        if spec.precision != precision or dev.cc_int < spec.min_cc:
            continue
        if spec.can_implement(params, dev.smem_optin):
            continue
        if params.split_k > 1 and prob.batch != 1 and e.get("batched_split") is not True:
            continue
        return spec, params
    return None


def heuristic(prob: Problem, dev: DeviceInfo, precision: str = "ieee"
              ) -> tuple[KernelSpec, TileParams]:
    """The cost model's choice (planner.py), else the precision's own
    kernel with its size rule."""
    hit = planner.choose(prob, dev, precision)
    if hit is not None:
        return hit
    spec = auto_spec(precision, dev)
    return spec, spec_params(spec, prob, dev)


# ---- the public entry points ---------------------------------------------------------------
def shape_key(prob: Problem, precision: str) -> tuple:
    """What an auto choice depends on besides the device: every problem with
    the same key gets the same (spec, params).  SGEMM_PACK is in it because
    it changes the candidates (``always`` keeps only packed ones)."""
    return (prob.m, prob.n, prob.k, prob.batch, prob.ta, prob.tb, prob.aligned, precision,
            os.environ.get("SGEMM_PACK", "1"))


def measured(dev: DeviceInfo) -> dict:
    """This device's measured choices (sgemm/measure.py fills it):
    shape_key -> (spec, params).  They rank below a tuned table's entry,
    which a full search measured, and above the cost model."""
    return _measured.setdefault((dev.name, dev.sm_count, dev.cc), {})


def choose(prob: Problem, dev: DeviceInfo, kernel, precision: str | None
           ) -> tuple[KernelSpec, TileParams]:
    if kernel is None or kernel == "auto":
        prec = precision or "ieee"
        sk = shape_key(prob, prec)
        mk = (sk, dev.name, dev.sm_count, dev.cc, tables_enabled(),
              os.environ.get("SGEMM_TUNED_TABLE"), os.environ.get("SGEMM_CACHE_DIR"))
        hit = _memo.get(mk)
        if hit is None:
            hit = (lookup(prob, dev, prec) or measured(dev).get(sk)
                   or heuristic(prob, dev, prec))
            if len(_memo) > 4096:
                _memo.clear()
            _memo[mk] = hit
        return hit
    spec = registry.get(kernel)
    if precision is not None and precision != spec.precision:
        raise ArgumentError(f"kernel={spec.name!r} computes with precision="
                            f"{spec.precision!r} but precision={precision!r} was asked for")
    if dev.cc_int < spec.min_cc:
        raise ArgumentError(f"kernel={spec.name!r} needs compute capability "
                            f"{spec.min_cc / 10:.1f} but {dev.name} is sm_{dev.cc_int}")
    return spec, spec_params(spec, prob, dev)


def select(prob: Problem, dev: DeviceInfo, kernel="auto", precision: str | None = None
           ) -> tuple[KernelSpec, TileParams, str]:
    spec, params = choose(prob, dev, kernel, precision)
    return spec, params, scheme_for(spec, params, prob)


# ---- introspection helpers ---------------------------------------------------------------
def explain(prob: Problem, dev: DeviceInfo, precision: str = "ieee", top: int = 8) -> dict:
    """Why auto picks what it picks: the source of the choice (a tuned
    entry or the model), and the model's ``top`` candidates with their
    predicted times and the parts of each prediction."""
    from . import cost
    hit = lookup(prob, dev, precision)
    source = "tuned"
    if hit is None:
        hit = measured(dev).get(shape_key(prob, precision))
        source = "measured"
    if hit is None:
        hit, source = heuristic(prob, dev, precision), "model"
    spec, params = hit
    return {"shape_class": shape_class(prob), "gpu": gpu_key(dev), "source": source,
            "calibration": cost.calibration(dev).source,
            "kernel": spec.name, "params": params.as_dict(),
            "scheme": scheme_for(spec, params, prob),
            "grid": spec.grid(prob, params.replace(split_k=1)),
            "candidates": [c.describe() for c in planner.candidates(prob, dev, precision)[:top]]}
