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
2. **The cost model** (planner.py, cost.py): every candidate plan with its
   predicted time; the fastest wins.  docs/dispatch.md states the model.
3. The precision's own kernel with its size rule, where the model has no
   candidate (a precision with no calibrated kernel on this GPU).

Nothing is tuned at call time unless asked (``sgemm tune``, ``tune.autotune``).
``choose(prob, dev, kernel, precision) -> (spec, params)`` also serves
explicit kernels; ``select`` adds the scheme name, and ``scheme_launches``
builds the two launches (and the workspace) of split-K.
"""
from __future__ import annotations

import json
import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cost import WORKSPACE_MAX_BYTES
from .errors import ArgumentError, OutOfMemoryError
from .kernels import registry
from .kernels.params import TileParams
from .kernels.spec import KernelSpec
from .problem import Problem
from .runtime.device import DeviceInfo

TABLE_FORMAT = 2
DATA_DIR = Path(__file__).resolve().parent / "data"


# ---- keys -----------------------------------------------------------------------------
def gpu_key(dev: DeviceInfo) -> str:
    """'nvidia-h100-80gb-hbm3-sm132-sm_90a': name, SM count, arch."""
    name = re.sub(r"[^a-z0-9]+", "-", dev.name.lower()).strip("-")
    return f"{name}-sm{dev.sm_count}-{dev.arch}"


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


@dataclass
class TunedTable:
    gpu: str
    entries: dict            # shape class -> {"kernel", "params", "time_ms", ...}
    path: Path | None = None

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


# ---- heuristic ----------------------------------------------------------------------------
def candidates(precision: str, dev: DeviceInfo) -> list[KernelSpec]:
    return [s for s in registry.KERNELS.values()
            if s.precision == precision and dev.cc_int >= s.min_cc and s.id >= 1]


def scheme_name(spec: KernelSpec) -> str:
    return spec.extra.get("scheme", "direct")


def auto_spec(precision: str, dev: DeviceInfo) -> KernelSpec:
    """The best direct (single-launch, general-shape) kernel by declared
    priority ``extra["auto"]``; without priorities, the highest rung <= 11."""
    cands = candidates(precision, dev)
    if not cands:
        raise ArgumentError(f"precision={precision!r}: no registered kernel runs on "
                            f"{dev.name} (sm_{dev.cc_int})")
    direct = [s for s in cands if scheme_name(s) == "direct"] or cands
    ranked = [s for s in direct if "auto" in s.extra]
    if ranked:
        return max(ranked, key=lambda s: (s.extra["auto"], s.id))
    ladder = [s for s in direct if s.id <= 11] or direct
    return max(ladder, key=lambda s: s.id)


def spec_params(spec: KernelSpec, prob: Problem, dev: DeviceInfo) -> TileParams:
    """A spec's own size rule: ``extra["choose"]`` if it has one, else the
    generic large/small rule of KernelSpec.choose."""
    fn = spec.extra.get("choose")
    if fn is not None:
        return fn(prob, dev.sm_count)
    return spec.choose(prob, dev.sm_count)


def _named_spec(name: str, dev: DeviceInfo) -> KernelSpec | None:
    s = registry.KERNELS.get(name)
    return s if s is not None and dev.cc_int >= s.min_cc else None


# Per-SM rates of db_cluster's tiles at one block per SM, relative to the
# 16x8 "wide"/"tall" tile in two k-groups (~308 GFLOP/s per SM on the H200:
# 16384x64x4096 in 218 us on 128 SMs): the 64x64 "k2" tile 274 with two
# k-groups, 285 with four (kdepth-sweep-*: 0.955 / 1.84 us per k-tile step).
DB_TALL_RATES = {"wide": 1.0, "k2x2": 274 / 308, "k2x4": 285 / 308}


def db_tall_config(prob: Problem, dev: DeviceInfo) -> TileParams | None:
    """Rule c''': tall-skinny outputs (the small side 33 .. 64) with 16 .. SMs/2
    tiles of 64 x 256 along the long side.  Three db_cluster plans, whichever
    a wave model says ends first (whole waves of blocks, at one block per SM,
    each taking its tile x K-slice work at DB_TALL_RATES): the 16x8 tile 64
    wide along the small side ("wide" for small m, else "tall") in two
    k-groups with as many cluster blocks per tile as one wave holds; the 64x64
    "k2" tile in two k-groups and clusters of 2; "k2" in four k-groups alone.
    Each k-group's slice >= 256 deep.  Measured (H200, tuner, bench/results/
    tune-tall-*): 16384x64x4096 218 us on "wide" x 2 (k2 x 2: 245);
    12288x64x4096 187 us on k2 x 2 ("wide" x 2, 96 blocks: 216);
    8192x64x8192 233 us on k2 in four groups ("wide" x 3: 289).  None where
    the rule does not apply."""
    from .kernels import schemes as S
    small = min(prob.m, prob.n)
    if prob.batch != 1 or not 32 < small <= 64:
        return None
    base = S.DB_CLUSTER_CONFIGS["wide" if prob.m <= prob.n else "tall"]
    wide = base.replace(threads=2 * S.db_group_threads(base))
    if not 16 <= S.db_tiles(prob, wide) <= dev.sm_count // 2:
        return None
    at_once = cluster_capacity(dev)
    k2 = S.DB_CLUSTER_CONFIGS["k2"]
    plans = [(wide, S.db_cluster_split(prob, wide, dev.sm_count, at_once), "wide"),
             (k2.replace(threads=2 * S.db_group_threads(k2)), 2, "k2x2"),
             (k2.replace(threads=4 * S.db_group_threads(k2)), 1, "k2x4")]
    best = None
    for p, cs, rate in plans:
        if cs < 1 or prob.k < 256 * S.db_kgroups(p) * cs:
            continue
        per_wave = (at_once(cs) * cs if at_once is not None and cs > 1 else dev.sm_count)
        waves = math.ceil(S.db_tiles(prob, p) * cs / per_wave)
        t = waves * p.BM * p.BN * math.ceil(prob.k / cs) / DB_TALL_RATES[rate]
        if best is None or t < best[0]:
            best = (t, p.replace(split_k=cs))
    return None if best is None else best[1]


def cluster_capacity(dev: DeviceInfo):
    """``cs -> clusters of cs blocks at once`` for the GPU that ``dev``
    describes (the driver's count, see schemes.db_cluster_split), or None
    where ``dev`` is not this machine's device (a described one, as in the
    CPU tests; the split then assumes SMs / cs)."""
    from .runtime import device
    try:
        if not device.has_gpu() or device.info(dev.id) != dev:
            return None
    except Exception:  # noqa: BLE001 -- no driver, no such device: no query
        return None
    from .runtime.launcher import clusters_at_once
    return lambda cs: clusters_at_once(dev, cs)


def heuristic(prob: Problem, dev: DeviceInfo, precision: str = "ieee"
              ) -> tuple[KernelSpec, TileParams]:
    """The cost model's choice (planner.py), else the precision's own
    kernel with its size rule."""
    from . import planner
    hit = planner.choose(prob, dev, precision)
    if hit is not None:
        return hit
    spec = auto_spec(precision, dev)
    return spec, spec_params(spec, prob, dev)


# ---- the public entry points ---------------------------------------------------------------
def choose(prob: Problem, dev: DeviceInfo, kernel, precision: str | None
           ) -> tuple[KernelSpec, TileParams]:
    if kernel is None or kernel == "auto":
        prec = precision or "ieee"
        mk = (prob.m, prob.n, prob.k, prob.batch, prob.ta, prob.tb, prob.aligned, prec,
              dev.name, dev.sm_count, dev.cc, tables_enabled(),
              os.environ.get("SGEMM_TUNED_TABLE"), os.environ.get("SGEMM_CACHE_DIR"))
        hit = _memo.get(mk)
        if hit is None:
            hit = lookup(prob, dev, prec) or heuristic(prob, dev, prec)
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


def scheme_for(spec: KernelSpec, params: TileParams, prob: Problem | None = None) -> str:
    """'splitk' when the params split K (two launches), else the spec's scheme
    name ('direct', 'small', 'gemv'): all of those are one launch.  A fused
    spec (``extra["fused"]``) splits K inside its one launch: 'splitk_fused'
    for the tile kernel, 'gemv' for gemv_wide (plan.direct_launches builds it)."""
    if (params.split_k > 1 and spec.plain is False and (prob is None or prob.k > 1)
            and not spec.extra.get("cluster")):
        if spec.extra.get("fused"):
            return "gemv" if scheme_name(spec) == "gemv" else "splitk_fused"
        return "splitk"
    s = scheme_name(spec)
    return "direct" if s == "splitk" else s


def select(prob: Problem, dev: DeviceInfo, kernel="auto", precision: str | None = None
           ) -> tuple[KernelSpec, TileParams, str]:
    spec, params = choose(prob, dev, kernel, precision)
    return spec, params, scheme_for(spec, params, prob)


# ---- split-K launches ---------------------------------------------------------------------
def _launch_cls():
    from .plan import Launch

    @dataclass(frozen=True)
    class WorkspaceLaunch(Launch):
        """A launch that keeps its workspace alive as long as the plan holds it."""
        workspace: object = None

    return WorkspaceLaunch


_WL = None


def allocate_workspace(nfloats: int, device_id: int, zero_floats: int = 0):
    """(owner, pointer) of nfloats float32 on the device, through CuPy's pool
    (cuda.core's allocator where CuPy is missing).  The first zero_floats
    are zeroed (the fused schemes' counters) and the zeros are complete
    when this returns, whatever stream the plan later runs on."""
    nbytes = max(4 * nfloats, 16)
    if nbytes > WORKSPACE_MAX_BYTES:
        raise OutOfMemoryError(f"split-K workspace of {nbytes} B exceeds the "
                               f"{WORKSPACE_MAX_BYTES} B cap")
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        try:
            with cupy.cuda.Device(device_id):
                buf = cupy.empty(max(nfloats, 4), dtype=cupy.float32)
                if zero_floats:
                    buf[:zero_floats] = 0
                    cupy.cuda.get_current_stream().synchronize()
        except cupy.cuda.memory.OutOfMemoryError as e:
            raise OutOfMemoryError(f"split-K workspace of {nbytes} B: {e}") from None
        return buf, int(buf.data.ptr)
    from cuda.core import Device
    buf = Device(device_id).allocate(nbytes)
    if zero_floats:
        from cuda.bindings import driver
        (err,) = driver.cuMemsetD32(int(buf.handle), 0, zero_floats)
        if int(err) == 0:
            (err,) = driver.cuCtxSynchronize()
        if int(err) != 0:
            raise RuntimeError(f"zeroing the split-K counters failed: {err}")
    return buf, int(buf.handle)


def splitk_geometry(prob: Problem, params: TileParams) -> dict:
    from .kernels.schemes import split_slices
    kc, full, rem = split_slices(prob.k, params.split_k, params.BK)
    slices = full + (1 if rem else 0)
    mpad = -(-prob.m // 4) * 4
    return {"kc": kc, "full": full, "rem": rem, "slices": slices, "ldw": mpad,
            "stride_w": mpad * prob.n, "floats": slices * mpad * prob.n}


def scheme_launches(problems: list[Problem], spec: KernelSpec, params: TileParams,
                    scheme: str, dev: DeviceInfo) -> list:
    """Launches for a two-launch scheme (today: 'splitk').  Slice s of the
    K range goes to workspace slot s by running ``spec`` as a strided batch
    (K' = slice depth, A/B advanced by one slice per batch entry, alpha=1,
    beta=0), a shorter last slice as one more launch; then the ordered
    reduction applies alpha/beta into C.  Batched problems split each batch
    entry in turn (the workspace is reused; launches are stream-ordered)."""
    global _WL
    if scheme != "splitk":
        raise ValueError(f"scheme {scheme!r} has no special launches")
    from .kernels.schemes import REDUCE_SCALAR, REDUCE_VEC
    from .plan import Launch, _split_for_grid
    from .runtime import launcher
    if _WL is None:
        _WL = _launch_cls()
    geo = [splitk_geometry(p, params) for p in problems]
    need_floats = max(g["floats"] for g in geo)
    owner, ws = allocate_workspace(need_floats, dev.id)
    base_params = params.replace(split_k=1)
    out: list = []
    first = True
    for prob, g in zip(problems, geo):
        kc, full, rem, ldw, sw = g["kc"], g["full"], g["rem"], g["ldw"], g["stride_w"]
        sa_slice = kc if prob.ta else kc * prob.lda
        sb_slice = kc * prob.ldb if prob.tb else kc
        for z in range(prob.batch):
            a0 = prob.a + 4 * z * prob.stride_a
            b0 = prob.b + 4 * z * prob.stride_b
            c0 = prob.c + 4 * z * prob.stride_c
            parts = []
            if full:
                parts.append(Problem(m=prob.m, n=prob.n, k=kc, ta=prob.ta, tb=prob.tb,
                                     a=a0, lda=prob.lda, b=b0, ldb=prob.ldb, c=ws, ldc=ldw,
                                     alpha=1.0, beta=0.0, batch=full, stride_a=sa_slice,
                                     stride_b=sb_slice, stride_c=sw))
            if rem:
                parts.append(Problem(m=prob.m, n=prob.n, k=rem, ta=prob.ta, tb=prob.tb,
                                     a=a0 + 4 * full * sa_slice, lda=prob.lda,
                                     b=b0 + 4 * full * sb_slice, ldb=prob.ldb,
                                     c=ws + 4 * full * sw, ldc=ldw, alpha=1.0, beta=0.0,
                                     batch=1))
            for part in parts:
                for piece in _split_for_grid(part, spec, base_params):
                    aligned = spec.aligned_for(piece)
                    k = launcher.get_kernel(spec, base_params, piece.ta, piece.tb, aligned, dev)
                    cls = _WL if first else Launch
                    kw = {"workspace": owner} if first else {}
                    out.append(cls(k, spec.grid(piece, base_params), spec.block(base_params),
                                   spec.dynamic_smem(base_params), spec.args(piece), **kw))
                    first = False
            vec = c0 % 16 == 0 and prob.ldc % 4 == 0
            rspec = REDUCE_VEC if vec else REDUCE_SCALAR
            rp = rspec.configs["default"]
            kr = launcher.get_kernel(rspec, rp, False, False, False, dev)
            v = 4 if vec else 1
            grid = (math.ceil(prob.m / (256 * v)), min(prob.n, 65535), 1)
            args = (np.int32(prob.m), np.int32(prob.n), np.int32(g["slices"]), ws, ldw, sw,
                    np.float32(prob.alpha), np.float32(prob.beta), c0, prob.ldc)
            out.append(Launch(kr, grid, 256, 0, args, role="epilogue"))
    return out


def fused_launches(problems: list[Problem], spec: KernelSpec, params: TileParams,
                   dev: DeviceInfo) -> list:
    """The one launch per piece of a fused split-K spec (``extra["fused"]``:
    34_splitk_fused.cu, gemv_wide): grid z = entries * S, and one workspace
    for the plan -- S partial slots per output tile, then nothing else --
    with a zeroed counter per tile in front of it.  The kernels reset their
    counters, so every execution (and every graph replay) starts from zeros;
    launches of one plan are stream-ordered, so they share the workspace.
    Two plans never share one (each allocates its own); one plan must not
    run on two streams at once (the plan cache keys workspace plans by
    stream).  Batches are chunked so that z <= 65535 and the workspace
    stays under WORKSPACE_MAX_BYTES."""
    global _WL
    from .kernels.schemes import fused_direct_args, fused_slices, sgemm_args
    from .plan import Launch, _split_for_grid
    from .runtime import launcher
    if _WL is None:
        _WL = _launch_cls()
    fz = spec.extra["fused"]
    base = params.replace(split_k=1)
    unit, slot = fz["unit"](params), fz["slot"](params)
    cap = WORKSPACE_MAX_BYTES // 4
    jobs, need_ws, need_cnt = [], 0, 0
    for prob in problems:
        for piece in _split_for_grid(prob, spec, base):
            kc, nsl = fused_slices(piece.k, params.split_k, unit)
            gx, gy, _ = spec.grid(piece, base)
            if nsl == 1:
                jobs.append((piece, kc, 1))
                continue
            per_entry = gx * gy * nsl * slot
            nb = max(1, min(piece.batch, 65535 // nsl, cap // max(per_entry, 1)))
            for z0 in range(0, piece.batch, nb):
                nz = min(nb, piece.batch - z0)
                sub = Problem(**{**piece.__dict__, "batch": nz,
                                 "a": piece.a + 4 * z0 * piece.stride_a,
                                 "b": piece.b + 4 * z0 * piece.stride_b,
                                 "c": piece.c + 4 * z0 * piece.stride_c})
                jobs.append((sub, kc, nsl))
                need_ws = max(need_ws, nz * per_entry)
                need_cnt = max(need_cnt, gx * gy * nz)
    owner = ws = cnt = 0
    if need_ws:
        head = -(-need_cnt // 4) * 4            # counters, padded: slots stay 16-byte aligned
        owner, cnt = allocate_workspace(head + need_ws, dev.id, zero_floats=head)
        ws = cnt + 4 * head
    out: list = []
    for sub, kc, nsl in jobs:
        aligned = spec.aligned_for(sub)
        k = launcher.get_kernel(spec, base, sub.ta, sub.tb, aligned, dev)
        gx, gy, _ = spec.grid(sub, base)
        if nsl == 1:
            args = fused_direct_args(sub)
        else:
            args = sgemm_args(sub) + (ws, cnt, np.int32(kc), np.int32(nsl))
        grid = (gx, gy, sub.batch * nsl)
        if nsl > 1 and owner is not None and not any(isinstance(l, _WL) for l in out):
            out.append(_WL(k, grid, spec.block(base), spec.dynamic_smem(base), args,
                           workspace=owner))
        else:
            out.append(Launch(k, grid, spec.block(base), spec.dynamic_smem(base), args))
    return out


# ---- introspection helpers ---------------------------------------------------------------
def explain(prob: Problem, dev: DeviceInfo, precision: str = "ieee", top: int = 8) -> dict:
    """Why auto picks what it picks: the source of the choice (a tuned
    entry or the model), and the model's ``top`` candidates with their
    predicted times and the parts of each prediction."""
    from . import cost, planner
    hit = lookup(prob, dev, precision)
    spec, params = hit if hit is not None else heuristic(prob, dev, precision)
    return {"shape_class": shape_class(prob), "gpu": gpu_key(dev),
            "source": "tuned" if hit is not None else "model",
            "calibration": cost.calibration(dev).source,
            "kernel": spec.name, "params": params.as_dict(),
            "scheme": scheme_for(spec, params, prob),
            "grid": spec.grid(prob, params.replace(split_k=1)),
            "candidates": [c.describe() for c in planner.candidates(prob, dev, precision)[:top]]}
