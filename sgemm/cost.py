"""The planner's cost model: predicted seconds for one candidate plan.

A candidate is a kernel spec, its tile parameters (split_k included) and the
canonical problem.  Its predicted time, as a user calling back to back sees
it, is

    max(GPU time, host time)
    GPU time  = max(compute, memory) + launches x launch gap + reduction
    compute   = sum over waves of (q x w / (F x min(1, q / q_sat)) + t0)
    memory    = DRAM bytes (A and B once, C written, read when beta != 0,
                split-K's partial slices written) / bandwidth
    reduction = split-K's second launch: slices read and C written / bandwidth
    host time = host_base + host_per_launch x (launches - 1)

where a wave puts q blocks on the busiest SM (q <= the blocks resident per
SM), w = 2 BM BN K_slice is one block's work, F is the config's sustained
FP32 rate per SM (flop/s) once q_sat blocks share the SM, and t0 its fixed
cost per wave (prologue, epilogue, the first k-tile's latency).  Where a
config has a measured one-block rate for unaligned operands (``occ_u1``, a
fraction of F), unaligned problems take a line from it at q = 1 to F at
the blocks resident per SM instead of min(1, q / q_sat).  Rung 9's 128x64
tile's line is 0.75 x F with one block and 0.87 with two (of three), where
min(1, q / 1.25) says 0.8 and 1: under the knee its one-wave plans of two
blocks an SM ran 1.14-1.35x slower than predicted (docs/notes/dispatch.md,
tenth session).  Operands
that forbid float4 loads run at ``unaligned`` x F, and each of the four
storage layouts (op(A) and op(B) transposed or not) at ``layout[2 ta + tb]``
x F: an operand stored along k is transposed on its way into shared memory,
at a cost that differs by tile (the shipped H100 calibration has the 128x32
tile at 0.90 x F with A transposed and 1.07 x F with neither, the 256x64
tile within 4 % of F in all four).

Each config's (F, q_sat, t0, unaligned) comes from a calibration on this GPU
(``sgemm tune --calibrate``, sgemm/calibrate.py), else from the shipped
calibration of a GPU with the same arch, scaled by SM clock, else from
defaults: F as a fraction of the SM's FP32 peak.  Nothing here touches CUDA.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator

from .kernels.params import TileParams
from .kernels.schemes import gemv_strip64, split_slices, x_rows_contiguous
from .kernels.spec import KernelSpec
from .problem import Problem
from .records import Record
from .runtime.device import DeviceInfo

DATA_DIR = Path(__file__).resolve().parent / "data"
CALIBRATION_FORMAT = 2          # 2: gemv rates per inner loop (config_key)
WORKSPACE_MAX_BYTES = 512 << 20     # split-K and pack workspaces: never more than this
NEUTRAL_LAYOUT = (1.0, 1.0, 1.0, 1.0)   # a rate's layout factors where none were measured


class Rate(Record):
    """One config's measured behaviour (see the module docstring).  A Record
    (records.py)."""

    __slots__ = ("peak_frac", "q_sat", "t0", "unaligned", "store", "mem", "layout", "occ_u1")

    def __init__(
            self,
            peak_frac: float,           # F as a fraction of one SM's FP32 peak
            q_sat: float = 1,           # blocks per SM at which F is reached
            t0: float = 3e-6,           # seconds per wave
            unaligned: float = 0.85,    # F factor for scalar (unaligned) loads
            store: float = 1.0,         # C's share of bandwidth with unaligned (scalar) stores
            mem: float = 1.0,           # A's and B's share of bandwidth (reads the kernel makes)
            layout: tuple = NEUTRAL_LAYOUT,  # F factor per layout, index 2 ta + tb
            occ_u1: float = 0.0):       # unaligned: the rate at one block an SM, x F (0: q_sat)
        self.peak_frac, self.q_sat, self.t0, self.unaligned = peak_frac, q_sat, t0, unaligned
        self.store, self.mem, self.layout, self.occ_u1 = store, mem, layout, occ_u1

    def occupancy_u(self, q: int, per_sm: int) -> float:
        """The fraction of F an unaligned wave with q blocks on the busiest SM
        runs at, on the line occ_u1 draws (per_sm: the blocks resident per SM)."""
        if q >= per_sm:
            return 1.0
        return self.occ_u1 + (1.0 - self.occ_u1) * (q - 1) / (per_sm - 1)


class Machine(Record):
    """Device-wide constants.  A Record (records.py)."""

    __slots__ = ("bw_frac", "launch_gap", "host_base", "host_per_launch", "sm_stream")

    def __init__(
            self,
            bw_frac: float = 0.8,           # DRAM bandwidth a GEMM sustains / the datasheet's
            launch_gap: float = 1.5e-6,     # GPU time between two dependent launches
            host_base: float = 9e-6,        # host seconds of a cached call (one launch)
            host_per_launch: float = 4.5e-6,
            # DRAM bandwidth one gemv block's SM streams at most, in shares of bw / SMs,
            # so a grid on few SMs cannot reach bw: 34 blocks of 1x1066x13617 NT read 58
            # MB in 70 us on the H100 (24 GB/s an SM, 1.2 shares; small-output-deepk-
            # h100-2026-11-26.json) where bw alone said 22 us
            sm_stream: float = 1.2):
        self.bw_frac, self.launch_gap, self.host_base = bw_frac, launch_gap, host_base
        self.host_per_launch, self.sm_stream = host_per_launch, sm_stream


# The rate of a config no calibration knows; the planner weighs such a
# config only when it is the precision's own kernel.
DEFAULT_RATE = Rate(0.5, 1, 4e-6, 0.85)


def config_key(spec: KernelSpec, p: TileParams, prob: Problem) -> str:
    """Which measured rate a candidate uses: the spec and its tile shape
    (split_k and cluster size excluded; they change the grid, not the loop).
    gemv blocks share one rate per inner loop, k- or row-contiguous big
    operand: the same block streams 2.8 TB/s in one (1x32000x2560 NT, 116
    us) and 1 TB/s in the other (16x4096x12288 NN, 203 us; H100,
    bench/results/skinny-probe-*.json), so one rate for both fits neither.
    Where each block holds a whole product of a batch (its wide side within
    the block's strip of 32-128 rows) the blocks have a rate of their own
    (``:b``): a single product's blocks stream long rows, and the rate of
    those put gemv_wide 1.25-1.48x fast on the narrow sweeps' batches
    (docs/notes/dispatch.md, twelfth session).  gemv's 64-row strip for
    S = 8 along k (``ka``: the float4 loop with four rows a warp) has a rate
    of its own, fitted on products with a side of 5-8 (bench/results/
    gemv-strip-sweep-h200-2026-11-29*.json): it ran 1.5-2x the 32-row
    strip's speed on x @ W.T layers of 50 MB or more (bench/results/
    dot-decode-h200-2026-11-29.json)."""
    if spec.extra.get("scheme") == "gemv":
        whole = prob.batch > 1 and max(prob.m, prob.n) <= max(p.BM, p.BN)
        kind = "r" if x_rows_contiguous(prob) else "k"
        if kind == "k" and not whole and gemv_strip64(p):
            kind = "ka"
        return f"{spec.name}:{kind}{':b' if whole else ''}"
    return f"{spec.name}:{p.BM}x{p.BN}x{p.BK}:{p.threads}"


def layout_index(prob: Problem) -> int:
    """Which of a rate's four layout factors a problem uses."""
    return 2 * bool(prob.ta) + bool(prob.tb)


class Calibration(Record):
    """A GPU's cost-model constants: the machine's and each config's rate
    (config_key -> Rate), the SM clock the rates were measured under, and
    where they came from.  A Record (records.py), not hashable (its rates
    are a dict)."""

    __slots__ = ("gpu", "machine", "rates", "clock_khz", "source")
    __hash__ = None

    def __init__(self, gpu: str, machine: Machine, rates: dict, clock_khz: int = 0,
                 source: str = "defaults"):
        self.gpu, self.machine, self.rates = gpu, machine, rates
        self.clock_khz, self.source = clock_khz, source

    def rate(self, key: str) -> Rate:
        return self.rates.get(key, DEFAULT_RATE)

    def to_json(self) -> dict:
        return {"format": CALIBRATION_FORMAT, "gpu": self.gpu, "clock_khz": self.clock_khz,
                "machine": self.machine.as_dict(),
                "rates": {k: _rate_json(v) for k, v in sorted(self.rates.items())}}

    @classmethod
    def from_json(cls, data: dict, source: str) -> "Calibration | None":
        if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
            return None
        try:
            return cls(data["gpu"], Machine(**data["machine"]),
                       {k: Rate(**{**v, "layout": tuple(v.get("layout", NEUTRAL_LAYOUT))})
                        for k, v in data["rates"].items()},
                       int(data.get("clock_khz", 0)), source)
        except (KeyError, TypeError):
            return None


def _rate_json(r: Rate) -> dict:
    """A rate's fields as JSON takes them, without an unmeasured one-block rate."""
    d = r.as_dict()
    if not d["occ_u1"]:
        del d["occ_u1"]
    return d


def default_calibration(dev: DeviceInfo) -> Calibration:
    """Device properties only."""
    return Calibration(dev.name, Machine(), {}, dev.clock_khz, "defaults")


def _load(path: Path) -> "Calibration | None":
    try:
        return Calibration.from_json(json.loads(path.read_text()), str(path))
    except (OSError, ValueError):  # missing or unreadable: the next source
        return None


_cache: dict = {}


def calibration_paths(dev: DeviceInfo, user_dir: Path | None) -> Iterator[Path]:
    """In order of authority: the user's calibration for this GPU, the
    shipped one for this GPU, a shipped one of the same arch, any shipped
    one.  A generator: the data directory is listed only where neither of
    the first two loads."""
    from .runtime.device import gpu_key
    key = gpu_key(dev)
    if user_dir is not None:
        yield user_dir / f"cost-{key}.json"
    yield DATA_DIR / f"cost-{key}.json"
    yield from sorted(DATA_DIR.glob(f"cost-*-{dev.arch}.json"))
    # rates are fractions of peak: any GPU's carry over
    yield from sorted(DATA_DIR.glob("cost-*.json"))


def calibration(dev: DeviceInfo, user_dir: Path | None = None) -> Calibration:
    if user_dir is None:
        from .runtime.compiler import cache_dir
        user_dir = cache_dir()
    return _calibration(dev, user_dir)


def user_path(dev: DeviceInfo) -> Path:
    """Where ``sgemm tune --calibrate`` writes this GPU's calibration."""
    from .runtime.device import gpu_key
    from .runtime.compiler import cache_dir
    return cache_dir() / f"cost-{gpu_key(dev)}.json"


def _calibration(dev: DeviceInfo, user_dir: Path) -> Calibration:
    """This GPU's calibration (cached per device and directory).  Rates are
    fractions of the SM's peak and the bandwidth a fraction of the datasheet's,
    so a sibling GPU's calibration (same arch) carries over."""
    ck = (dev, str(user_dir))
    hit = _cache.get(ck)
    if hit is None:
        hit = next((c for c in map(_load, calibration_paths(dev, user_dir)) if c is not None),
                   None) or default_calibration(dev)
        _cache[ck] = hit
    return hit


def forget() -> None:
    _cache.clear()


# ---- the model ------------------------------------------------------------------------
def split_of(spec: KernelSpec, p: TileParams) -> int:
    return max(1, p.split_k)


def two_launch_split(spec: KernelSpec, p: TileParams) -> bool:
    """Split-K through a workspace and a second (reduction) launch."""
    return (p.split_k > 1 and not spec.plain and not spec.extra.get("cluster")
            and not spec.extra.get("fused"))


def slicing(spec: KernelSpec, p: TileParams, k: int) -> tuple[int, int]:
    """(K slice depth, slices in the first launch): for a two-launch split,
    the full slices (predict adds the shorter last one)."""
    s = split_of(spec, p)
    if two_launch_split(spec, p):
        kslice, full, rem = split_slices(k, s, p.BK)
        return (kslice, full) if full else (rem, 1)   # K shallower than one slice: the short one
    return math.ceil(k / s), s


def geometry(spec: KernelSpec, p: TileParams, prob: Problem) -> tuple[int, int, float]:
    """(blocks, K slice depth, flops per block).  For a two-launch split, its
    first launch: the full slices (predict adds the shorter last one)."""
    # the grid of one slice (the default grid does not read split_k)
    one = (p.split_k == 1 or spec.grid_fn is None or spec.extra.get("cluster"))
    gx, gy, gz = spec.grid(prob, p if one else p.replace(split_k=1))
    blocks = gx * gy * gz
    kslice, full = slicing(spec, p, prob.k)
    if not spec.extra.get("cluster"):
        blocks *= full
    if spec.extra.get("scheme") == "gemv":
        flops = 2.0 * prob.m * prob.n * prob.k * prob.batch / max(blocks, 1)
    else:
        flops = 2.0 * p.BM * p.BN * kslice
    return blocks, kslice, flops


_registers: dict | None = None     # arch -> register_key -> registers (data/registers.json)


def register_key(spec: KernelSpec, p: TileParams) -> str:
    """What names an instantiation's registers: the spec and its template
    arguments (split_k and pack only where the kernel takes them as such)."""
    return spec.name + ":" + ",".join(str(getattr(p, f)) for f in spec.template_fields)


def compiled_registers(spec: KernelSpec, p: TileParams, dev: DeviceInfo) -> int | None:
    """ptxas's registers a thread for p on dev's arch, the most over the
    layouts and alignments it is compiled for (data/registers.json, written
    with docs/kernel-resources.md by ``python -m sgemm.bench.resources``);
    sm_86 and sm_89 read sm_80's.  None where the table has no entry."""
    global _registers
    if "TM" not in spec.template_fields or "TN" not in spec.template_fields:
        return None         # see resident(): gemv and small_k keep their calibrated estimate
    if _registers is None:
        try:
            _registers = json.loads((DATA_DIR / "registers.json").read_text())
        except (OSError, ValueError):
            _registers = {}
    arch = dev.arch if dev.arch in _registers else "sm_80" if dev.arch.startswith("sm_8") else ""
    return _registers.get(arch, {}).get(register_key(spec, p))


_resident: dict = {}     # (spec name, params, device name, cc, smem per SM) -> blocks per SM


def resident(spec: KernelSpec, p: TileParams, dev: DeviceInfo, regs: int | None = None) -> int:
    """Blocks per SM from threads, shared memory and registers: the compiled
    count (compiled_registers), else accumulators + 40.  The estimate ran
    4-7 blocks an SM for tiles that compile to 3-4 (64x64, 128x32, 128x64:
    95-168 registers at 128 threads) and 3 for the 256x64 tile that holds 2
    (221-231): the model then counted waves that do not exist
    (docs/notes/dispatch.md, 2026-11-27).  Kernels without a TM x TN thread
    tile (gemv, small_k) keep the estimate: it stands for no thread tile
    there, and their calibrated rates were fitted with it (switched to the
    compiled count, the model moved plans off them that then measured
    0.6-0.9x)."""
    # A pure function of its arguments, asked once per prediction (a few
    # hundred a problem): remembered, as the registers table is read once.
    key = (spec.name, p, dev.name, dev.cc, dev.smem_per_sm) if regs is None else None
    hit = _resident.get(key) if key else None
    if hit is not None:
        return hit
    smem = spec.static_smem(p) + spec.dynamic_smem(p)
    if regs is None:
        regs = compiled_registers(spec, p, dev)
    if regs is None:
        regs = min(255, max(p.TM * p.TN, 1) + 40)
    regs = (regs + 7) // 8 * 8
    by_regs = 65536 // (max(p.threads, 32) * regs)
    by_smem = (dev.smem_per_sm // (smem + 1024)) if smem else 32
    out = max(1, min(2048 // max(p.threads, 32), 32, by_regs, by_smem))
    if key:
        if len(_resident) >= 4096:
            _resident.clear()
        _resident[key] = out
    return out


def waves(blocks: int, per_sm: int, sms: int) -> list[tuple[int, int]]:
    """(q, count) of a grid's waves: whole waves of q = per_sm blocks on the
    busiest SM, then one that holds what is left."""
    slots = sms * per_sm
    full, rem = divmod(max(blocks, 0), slots)
    out = [(per_sm, full)] if full else []
    if rem:
        out.append((math.ceil(rem / sms), 1))
    return out


def compute_time(blocks: int, flops: float, per_sm: int, sms: int, F: float, q_sat: float,
                 t0: float, occupancy=None) -> float:
    """Whole waves of blocks (waves()).  A wave of q blocks on the busiest SM
    runs at occupancy(q) x F (default min(1, q / q_sat))."""
    t = 0.0
    for q, n in waves(blocks, per_sm, sms):
        occ = min(1.0, q / q_sat) if occupancy is None else occupancy(q)
        t += n * (q * flops / (F * occ) + t0)
    return t


def dram_bytes(prob: Problem, s: int, two_launch: bool) -> tuple[float, float]:
    """(bytes of A and B, bytes of the kernel's output: C, or split-K's
    partial slices, which the reduction reads back)."""
    mn = prob.m * prob.n * prob.batch
    ab = 4.0 * (prob.m * prob.k + prob.k * prob.n) * prob.batch
    out = 4.0 * mn * (s if two_launch else 2 if prob.beta != 0 else 1)
    return ab, out


def memory_time(prob: Problem, s: int, two_launch: bool, bw: float, store: float,
                mem: float = 1.0) -> float:
    ab, out = dram_bytes(prob, s, two_launch)
    return ab / (bw * mem) + out / (bw * store)


def reduction_time(prob: Problem, s: int, bw: float, machine: Machine) -> float:
    """Split-K's second launch: the S slices read, C read (beta != 0) and
    written, one dependent launch per batch entry."""
    return (4.0 * (s + 1 + (prob.beta != 0)) * prob.m * prob.n * prob.batch / bw
            + machine.launch_gap * prob.batch)


def predict(spec: KernelSpec, p: TileParams, prob: Problem, dev: DeviceInfo,
            cal: Calibration, regs: int | None = None) -> dict:
    """Predicted seconds (``total``) and its parts, for explain()."""
    r = cal.rate(config_key(spec, p, prob))
    bw = cal.machine.bw_frac * dev.dram_bandwidth_gbs() * 1e9
    clock = dev.clock_khz / cal.clock_khz if cal.clock_khz else 1.0
    peak_sm = dev.fp32_peak_tflops() * 1e12 / dev.sm_count
    aligned = spec.aligned_for(prob)
    F = (peak_sm * r.peak_frac * clock * (1.0 if aligned else r.unaligned)
         * r.layout[layout_index(prob)])
    blocks, kslice, flops = geometry(spec, p, prob)
    per_sm = resident(spec, p, dev, regs)
    two = two_launch_split(spec, p)
    s = split_of(spec, p)
    q_sat = min(r.q_sat, per_sm)
    occ = (lambda q: r.occupancy_u(q, per_sm)) if r.occ_u1 and not aligned else None
    comp = compute_time(blocks, flops, per_sm, dev.sm_count, F, q_sat, r.t0, occ)
    tail = 0
    if two:             # the slices written and read back: full ones and the shorter last
        _, full, tail = split_slices(prob.k, s, p.BK)
        s = full + (tail > 0)
        if not full:            # geometry already counts the one short slice
            tail = 0
    if tail and spec.extra.get("ragged"):
        # the shorter last slice in the same launch: its blocks (last in grid
        # order) take the slots the full slices' last wave leaves idle, and
        # what does not fit runs as a short wave after it
        short = blocks // full
        idle = -blocks % (dev.sm_count * per_sm)
        comp += compute_time(max(0, short - idle), flops * tail / kslice, per_sm,
                             dev.sm_count, F, q_sat, r.t0, occ)
    elif tail:          # the shorter last slice: one more launch, after the full ones
        comp += compute_time(blocks // full, flops * tail / kslice, per_sm, dev.sm_count, F,
                             q_sat, r.t0, occ) + cal.machine.launch_gap
    mem = memory_time(prob, s, two, bw, 1.0 if aligned else r.store, r.mem)
    if spec.extra.get("scheme") == "gemv":     # streaming blocks: few of them cannot reach bw
        mem /= min(1.0, cal.machine.sm_stream * min(blocks, dev.sm_count) / dev.sm_count)
    n_launch = (1 + prob.batch + (prob.batch if tail and not spec.extra.get("ragged") else 0)
                ) if two else 1
    red = reduction_time(prob, s, bw, cal.machine) if two else 0.0
    gpu = max(comp, mem) + red
    host = cal.machine.host_base + cal.machine.host_per_launch * (n_launch - 1)
    return {"total": max(gpu, host), "gpu": gpu, "compute": comp, "memory": mem,
            "reduction": red, "host": host, "blocks": blocks, "per_sm": per_sm,
            "kslice": kslice, "launches": n_launch}
