"""Which algorithm, process grid and panel width: a cost model over candidate plans.

For C (m x n) = alpha op(A) (m x k) op(B) (k x n) + beta C on p ranks, every
candidate plan is timed for its busiest rank and the fastest one is run.

Candidates:

* ``summa``: every factorisation p = P x Q (P grid rows, Q grid columns) and
  every panel width kb = K/s (s = 1, 2, 3, 4, 6, 8, ... 128; above 256 rounded
  up to a multiple of 32, above 2048 to 256) whose two double-buffered panels
  fit ``panel_bytes_max``.
* ``ksplit`` (p >= 2): each rank multiplies a K slice (K/p deep) of the whole
  m x n product, C row chunk by row chunk (p mb rows each); each chunk's
  partial sums are reduce-scattered, so rank r ends with mb rows of each chunk
  (ksplit.py).  Chunks: 1, 2, 3, 4, 6, 8, ... 64, within ``panel_bytes_max``.

Per step, for the rank with the largest block (m_l x n_l of C; a word is 4
bytes; B = link bandwidth, the bytes per second one rank moves in a
collective (NCCL's bus bandwidth); L = latency of one collective; M = local
memory bandwidth; local(m, n, k) = one local GEMM's time, see below):

    summa, step t (panel kb_t):
      comm_t    = L + 4 kb_t (m_l [Q > 1] + n_l [P > 1]) / B
                  (+ 8 m_l kb_t / M, the root's copy of a non-contiguous panel)
      compute_t = local(m_l, n_l, kb_t) + 8 m_l n_l / M  (C read and written, beta = 1,
                  every step after the first)
    ksplit, chunk j (h_j rows of C):
      compute_j = local(h_j, n, K/p)
      comm_j    = L + 4 h n (p - 1) / p / B          (ring reduce-scatter of the chunk)
      add_j     = 8 mb n / M  (12 with beta != 0)    (received rows into C, compute stream)

The steps run the way the code issues them (communication on its own stream,
overlapped): SUMMA broadcasts panel t+1 before the GEMM of panel t and
refills a buffer after the GEMM two steps back; the K split reduce-scatters
chunk j during the GEMM of chunk j+1.  ``*_pipeline`` below replay that
order, so the predicted time is max(compute, communication) per step plus
what cannot overlap: the first panel's broadcast (SUMMA), the last chunk's
reduction (K split), and a latency per step.  Predicted exposed
communication = predicted time - the sum of compute.

local(m, n, k): on a GPU, the planner's predicted time for that GEMM in the
requested precision (sgemm/planner.py, the same model that picks the local
kernel); on the CPU backend 2 m n k / F plus a fixed cost per call.

Bytes each rank receives over the run (the communication volume):
summa 4 K (m_l [Q > 1] + n_l [P > 1]); ksplit 4 m n (p - 1) / p.  For square
problems a 2-D grid wins (m/P + n/Q is smallest for P ~ Q); for a tall C
(m >> n) P x 1 (B's panels are small), for a wide C 1 x P, and for a deep
product (k >> m, n) the K split, whose volume does not grow with K.

Choice: the K split only where it is predicted at least ``KSPLIT_MARGIN``
(10 %) faster than the best SUMMA plan (its GPU path has not been measured;
SUMMA's has, at 96.6 % strong-scaling efficiency on 4 GPUs).  Then, among
that algorithm's plans, those within ``TIE`` (3 %) of its fastest count as
equal: the squarer grid wins (nprow <= npcol on a tie), then the fastest
panel width on that grid.  At p = 4 and square shapes every grid moves the
same volume per rank (m/P + n/Q = m for 1x4, 2x2, 4x1) and the K split a
little less (3m/4); the margins keep the measured configuration (SUMMA on
2 x 2) where the model cannot tell plans apart.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace

from ..errors import ArgumentError
from .grid import ProcessGrid, _factor_pairs
from .layout import AxisCyclic, _cdiv, gemm_layout, ksplit_layout

TIE = 0.03
KSPLIT_MARGIN = 0.10
ALGORITHMS = ("auto", "summa", "ksplit")
PANEL_SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
CHUNKS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
LINK_ENV, LATENCY_ENV = "SGEMM_DIST_LINK_GBS", "SGEMM_DIST_LATENCY_US"

# NCCL broadcast bus bandwidth measured over 4 H200s on NVLink (2026-11-22,
# bench/results/distributed-h200x4-2026-11-22.json: 285 GB/s over 4, 335 over 2).
GPU_LINK_GBS = 285.0
GPU_LATENCY_S = 20e-6        # assumed: one NCCL collective step on NVLink (not measured here)
# CPU backend (MPI over shared memory): round figures, they only rank plans.
CPU_LINK_GBS = 2.0
CPU_LATENCY_S = 10e-6
CPU_FLOPS = 20e9
CPU_MEM_GBS = 8.0
CPU_CALL_S = 20e-6


@dataclass(frozen=True)
class DistMachine:
    """What the model knows about the machine (see the module docstring)."""
    name: str
    link_gbs: float                 # B: bytes per second (1e9) one rank moves in a collective
    latency_s: float                # L: one collective step
    mem_gbs: float                  # M: local memory bandwidth
    panel_bytes_max: int            # panel / chunk buffers per rank
    flops: float | None = None      # CPU: local GEMM rate; None: the planner's prediction
    call_s: float = 0.0             # CPU: fixed cost per local GEMM call
    device: object = None           # GPU: sgemm.runtime.device.DeviceInfo
    precision: str = "ieee"
    _memo: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def local_s(self, m: int, n: int, k: int, ta: bool = False, tb: bool = False) -> float:
        """Predicted seconds of one local GEMM (beta = 0)."""
        if m <= 0 or n <= 0:
            return 0.0
        key = (m, n, k, ta, tb)
        t = self._memo.get(key)
        if t is None:
            t = self._local_s(m, n, k, ta, tb)
            self._memo[key] = t
        return t

    def _local_s(self, m, n, k, ta, tb) -> float:
        if self.flops is not None:
            return 2.0 * m * n * k / self.flops + self.call_s
        if k <= 0:
            return 4.0 * m * n / (self.mem_gbs * 1e9)
        from .. import planner
        from ..problem import Problem
        base = 1 << 30
        prob = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=base, lda=(m if ta else k),
                       b=2 * base, ldb=(k if tb else n), c=3 * base, ldc=n)
        t = planner.best_time(prob, self.device, self.precision)
        return t if t is not None else 2.0 * m * n * k / (0.5e12 * self.device.sm_count)

    def describe(self) -> str:
        how = (f"{self.flops / 1e9:.0f} GFLOP/s per rank" if self.flops is not None
               else f"local GEMMs from the planner ({self.precision})")
        return (f"{self.name}: link {self.link_gbs:g} GB/s, latency "
                f"{self.latency_s * 1e6:g} us, {how}")


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return default


def cpu_machine(link_gbs: float | None = None, latency_us: float | None = None) -> DistMachine:
    """The CPU backend (NumPy + MPI): round figures; they rank plans, they
    do not predict this machine's seconds."""
    link = link_gbs if link_gbs is not None else _env_float(LINK_ENV, CPU_LINK_GBS)
    lat = (latency_us if latency_us is not None
           else _env_float(LATENCY_ENV, CPU_LATENCY_S * 1e6)) * 1e-6
    return DistMachine("cpu (numpy + MPI)", link, lat, CPU_MEM_GBS, 256 << 20,
                       flops=CPU_FLOPS, call_s=CPU_CALL_S)


def described_h100():
    """The GPU the shipped planner calibration was measured on (used where no
    device can be queried: CPU tests, fake GPUs)."""
    from ..runtime.device import DeviceInfo
    return DeviceInfo(0, "NVIDIA H100 80GB HBM3", (9, 0), 132, 232448, 233472, 52428800,
                      1980000, 2619000, 5120, 85 << 30)


def gpu_machine(device=None, precision: str | None = None, link_gbs: float | None = None,
                latency_us: float | None = None) -> DistMachine:
    """A GPU (``DeviceInfo``; None: the described H100) with NCCL over NVLink.
    link_gbs / latency_us (or $SGEMM_DIST_LINK_GBS / $SGEMM_DIST_LATENCY_US)
    override the defaults: pass the network's figure when ranks span nodes."""
    dev = device if device is not None else described_h100()
    link = link_gbs if link_gbs is not None else _env_float(LINK_ENV, GPU_LINK_GBS)
    lat = (latency_us if latency_us is not None
           else _env_float(LATENCY_ENV, GPU_LATENCY_S * 1e6)) * 1e-6
    mem = 0.8 * dev.dram_bandwidth_gbs()
    cap = max(256 << 20, int(dev.total_memory) // 20)
    return DistMachine(dev.name, link, lat, mem, cap, device=dev,
                       precision=precision or "ieee")


@dataclass(frozen=True)
class DistPlan:
    """One candidate: the algorithm, its grid and blocks, and the model's
    figures for the busiest rank (seconds, bytes received)."""
    algorithm: str                  # "summa" or "ksplit"
    m: int
    n: int
    k: int
    nprocs: int
    grid: tuple[int, int]           # (nprow, npcol); ksplit: (p, 1)
    mb: int                         # summa: C row block; ksplit: C rows per rank per chunk
    nb: int                         # summa: C column block; ksplit: n
    kb: int                         # summa: panel width; ksplit: K slice per rank
    steps: int                      # summa: panels; ksplit: chunks
    total_s: float
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    comm_bytes: float               # received per rank over the run
    trans_a: bool = False
    trans_b: bool = False
    beta: float = 0.0
    machine: str = ""
    candidates: tuple = ()          # every plan weighed, fastest first (when chosen)
    why: str = ""

    @property
    def panel(self) -> int:
        """Panel width: SUMMA's K panel, the K split's C chunk rows (p x mb)."""
        return self.kb if self.algorithm == "summa" else self.mb * self.nprocs

    def layout(self):
        """The descriptors of A, B and C this plan runs on."""
        g = ProcessGrid(*self.grid)
        if self.algorithm == "ksplit":
            return ksplit_layout(self.m, self.n, self.k, g, trans_a=self.trans_a,
                                 trans_b=self.trans_b, mb=self.mb)
        return gemm_layout(self.m, self.n, self.k, g, trans_a=self.trans_a,
                           trans_b=self.trans_b, mb=self.mb, nb=self.nb, kb=self.kb)

    def summary(self) -> str:
        g = f"{self.grid[0]}x{self.grid[1]}"
        if self.algorithm == "summa":
            blocks = f"panel kb={self.kb} ({self.steps} steps), blocks {self.mb}x{self.nb}"
        else:
            blocks = (f"K slice {self.kb}, C chunks of {self.panel} rows ({self.steps}), "
                      f"{self.mb} rows per rank each")
        return f"{self.algorithm} on {g}, {blocks}"

    def predicted(self) -> dict:
        return {"total_s": self.total_s, "compute_s": self.compute_s, "comm_s": self.comm_s,
                "exposed_comm_s": self.exposed_comm_s, "comm_bytes_per_rank": self.comm_bytes}

    def as_dict(self, candidates: bool = False) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("candidates",)}
        d["grid"] = list(self.grid)
        d["panel"] = self.panel
        if candidates:
            d["candidates"] = [c.as_dict() for c in self.candidates]
        return d

    def explain(self, top: int = 8) -> str:
        """The choice and the best ``top`` candidates, as text."""
        ms = lambda s: f"{s * 1e3:10.3f}"  # noqa: E731
        lines = [f"distributed GEMM {self.m} x {self.n} x {self.k} "
                 f"({'T' if self.trans_a else 'N'}{'T' if self.trans_b else 'N'}) on "
                 f"{self.nprocs} rank(s); {self.machine}",
                 f"chosen: {self.summary()}" + (f"  [{self.why}]" if self.why else ""),
                 f"predicted per rank: {ms(self.total_s).strip()} ms = compute "
                 f"{ms(self.compute_s).strip()} + exposed communication "
                 f"{ms(self.exposed_comm_s).strip()}; communication "
                 f"{ms(self.comm_s).strip()} ms in all, {self.comm_bytes / 1e6:.3f} MB received"]
        if self.candidates:
            lines.append(f"candidates ({min(top, len(self.candidates))} fastest of "
                         f"{len(self.candidates)}):")
            lines.append(f"  {'algorithm':9s} {'grid':>5s} {'panel':>7s} {'steps':>5s} "
                         f"{'total ms':>10s} {'compute ms':>10s} {'comm ms':>10s} "
                         f"{'exposed ms':>10s} {'MB recv':>9s}")
            for c in self.candidates[:top]:
                lines.append(f"  {c.algorithm:9s} {c.grid[0]:>2d}x{c.grid[1]:<2d} "
                             f"{c.panel:>7d} {c.steps:>5d} {ms(c.total_s)} {ms(c.compute_s)} "
                             f"{ms(c.comm_s)} {ms(c.exposed_comm_s)} {c.comm_bytes / 1e6:9.3f}")
        return "\n".join(lines)


# -- pipelines ----------------------------------------------------------------------------
def summa_pipeline(comm: list[float], comp: list[float]) -> float:
    """Finish time of SUMMA's order: broadcast t+1 is issued before GEMM t;
    broadcast t refills the buffer GEMM t-2 read; GEMM t waits for broadcast t."""
    comm_end: list[float] = []
    comp_end: list[float] = []
    for t, (cm, cp) in enumerate(zip(comm, comp)):
        start = max(comm_end[t - 1] if t else 0.0, comp_end[t - 2] if t >= 2 else 0.0)
        comm_end.append(start + cm)
        comp_end.append(max(comp_end[t - 1] if t else 0.0, comm_end[t]) + cp)
    return comp_end[-1] if comp_end else 0.0


def ksplit_pipeline(comp: list[float], comm: list[float], add: list[float]) -> float:
    """Finish time of the K split's order on the compute stream: G0, G1, A0,
    G2, A1, ..., A_last (G: chunk GEMM, A: add received rows into C, after
    that chunk's reduce-scatter); reduce-scatter j starts after G_j and the
    previous reduce-scatter."""
    t_comp = 0.0
    t_comm = 0.0
    rs_end: list[float] = []

    def add_step(j):
        nonlocal t_comp
        t_comp = max(t_comp, rs_end[j]) + add[j]

    for j, (g, r) in enumerate(zip(comp, comm)):
        t_comp += g
        t_comm = max(t_comm, t_comp) + r
        rs_end.append(t_comm)
        if j >= 1:
            add_step(j - 1)
    if rs_end:
        add_step(len(rs_end) - 1)
    return t_comp


# -- candidates -----------------------------------------------------------------------------
def _round_width(x: int) -> int:
    r = 256 if x >= 2048 else (32 if x >= 256 else 1)
    return _cdiv(x, r) * r


def panel_widths(k: int, grid: ProcessGrid, rows: int, cols: int, cap_bytes: int) -> list[int]:
    """SUMMA panel widths worth weighing (see the module docstring)."""
    if k <= 0:
        return [1]
    if grid.size == 1:
        return [k]
    top = k
    per_kb = 2 * 4 * (rows + cols)          # two panel buffers per rank
    out = set()
    for s in PANEL_SPLITS:
        kb = min(_round_width(_cdiv(k, s)), top)
        if kb >= 1 and (per_kb * kb <= cap_bytes or kb == 1):
            out.add(kb)
    if not out:
        out.add(max(1, min(top, cap_bytes // max(per_kb, 1))))
    return sorted(out, reverse=True)


def summa_plan(m, n, k, grid: ProcessGrid, machine: DistMachine, *, trans_a=False,
               trans_b=False, beta=0.0, mb=None, nb=None, kb=None) -> DistPlan:
    """The model's figures for SUMMA on ``grid`` with these blocks (defaults
    as gemm_layout: one C block per rank and axis)."""
    P, Q = grid.nprow, grid.npcol
    mb = mb if mb is not None else max(1, _cdiv(m, P))
    nb = nb if nb is not None else max(1, _cdiv(n, Q))
    m_l = AxisCyclic(m, mb, P).max_local_size()
    n_l = AxisCyclic(n, nb, Q).max_local_size()
    kb = kb if kb is not None else (k if grid.size == 1 else max(1, _cdiv(k, 8)))
    steps = _cdiv(k, kb) if k > 0 else 0
    link, mem = machine.link_gbs * 1e9, machine.mem_gbs * 1e9
    comm, comp = [], []
    for t in range(steps):
        w = min(kb, k - t * kb)
        words = w * ((m_l if Q > 1 else 0) + (n_l if P > 1 else 0))
        c = (machine.latency_s if words else 0.0) + 4.0 * words / link
        if Q > 1 and not trans_a:               # A's panel is a column block: root copies it
            c += 8.0 * m_l * w / mem
        if P > 1 and trans_b:
            c += 8.0 * n_l * w / mem
        comm.append(c)
        rmw = 8.0 * m_l * n_l / mem if (t > 0 or beta != 0.0) else 0.0
        comp.append(machine.local_s(m_l, n_l, w, trans_a, trans_b) + rmw)
    if steps == 0:
        comp = [8.0 * m_l * n_l / mem]
        comm = [0.0]
    total = summa_pipeline(comm, comp)
    nbytes = 4.0 * k * ((m_l if Q > 1 else 0) + (n_l if P > 1 else 0))
    return DistPlan("summa", m, n, k, grid.size, grid.shape, mb, nb, kb, steps, total,
                    sum(comp), sum(comm), max(0.0, total - sum(comp)), nbytes,
                    trans_a, trans_b, beta, machine.describe())


def ksplit_plan(m, n, k, nprocs: int, machine: DistMachine, *, trans_a=False, trans_b=False,
                beta=0.0, mb=None) -> DistPlan:
    """The model's figures for the K split on ``nprocs`` ranks, ``mb`` C rows
    per rank per chunk (default: one chunk)."""
    p = nprocs
    ks = max(1, _cdiv(k, p)) if k > 0 else 1
    mb = mb if mb is not None else max(1, _cdiv(m, p))
    h = p * mb
    chunks = _cdiv(m, h) if m > 0 and n > 0 else 0
    link, mem = machine.link_gbs * 1e9, machine.mem_gbs * 1e9
    comp, comm, add = [], [], []
    for j in range(chunks):
        hj = min(h, m - j * h)
        comp.append(machine.local_s(hj, n, min(ks, k), trans_a, trans_b))
        comm.append(machine.latency_s + 4.0 * h * n * (p - 1) / p / link)
        add.append((12.0 if beta != 0.0 else 8.0) * mb * n / mem)
    total = ksplit_pipeline(comp, comm, add)
    busy = sum(comp) + sum(add)
    nbytes = 4.0 * chunks * h * n * (p - 1) / p
    return DistPlan("ksplit", m, n, k, p, (p, 1), mb, max(n, 1), ks, chunks, total, busy,
                    sum(comm), max(0.0, total - busy), nbytes, trans_a, trans_b, beta,
                    machine.describe())


def chunk_rows(m: int, n: int, p: int, cap_bytes: int) -> list[int]:
    """K-split rows per rank per chunk worth weighing."""
    out = set()
    for s in CHUNKS:
        mb = _cdiv(max(m, 1), s * p)
        if mb >= 64:
            mb = _cdiv(mb, 8) * 8
        if 4 * (2 * p * mb * n + 2 * mb * n) <= cap_bytes or s == CHUNKS[-1]:
            out.add(max(1, mb))
    return sorted(out, reverse=True)


def _squareness(plan: DistPlan):
    r, c = plan.grid
    return (abs(c - r), 0 if r <= c else 1)


def plan_gemm(m: int, n: int, k: int, nprocs: int, machine: DistMachine | None = None, *,
              trans_a: bool = False, trans_b: bool = False, beta: float = 0.0,
              algorithm: str = "auto", grid=None, mb: int | None = None, nb: int | None = None,
              kb: int | None = None) -> DistPlan:
    """The plan to run (with every candidate weighed in ``.candidates``).

    algorithm: "auto" (the model chooses), "summa" or "ksplit".  grid, mb,
    nb, kb fix SUMMA's grid and blocks (any of them given with "auto" means
    SUMMA); mb is also the K split's rows per rank per chunk."""
    for name, v in (("m", m), ("n", n), ("k", k)):
        if not isinstance(v, int) or v < 0:
            raise ArgumentError(f"{name} must be an int >= 0, got {v!r}")
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ArgumentError(f"nprocs must be a positive int, got {nprocs!r}")
    if algorithm not in ALGORITHMS:
        raise ArgumentError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    machine = machine or cpu_machine()
    fixed = grid is not None or nb is not None or kb is not None or mb is not None
    if algorithm == "auto" and (fixed or nprocs == 1):
        algorithm = "summa"
    why = "forced" if algorithm != "auto" or grid is not None else ""
    kw = dict(trans_a=trans_a, trans_b=trans_b, beta=beta)
    cands: list[DistPlan] = []
    if algorithm in ("auto", "summa"):
        grids = ([ProcessGrid.create(nprocs, grid)] if grid is not None
                 else [ProcessGrid(r, c) for r, c in _factor_pairs(nprocs)])
        for g in grids:
            mb_g = mb if mb is not None else max(1, _cdiv(m, g.nprow))
            nb_g = nb if nb is not None else max(1, _cdiv(n, g.npcol))
            m_l = AxisCyclic(m, mb_g, g.nprow).max_local_size()
            n_l = AxisCyclic(n, nb_g, g.npcol).max_local_size()
            widths = [kb] if kb is not None else panel_widths(k, g, m_l, n_l,
                                                              machine.panel_bytes_max)
            for w in widths:
                cands.append(summa_plan(m, n, k, g, machine, mb=mb_g, nb=nb_g, kb=w, **kw))
    if algorithm == "ksplit" or (algorithm == "auto" and nprocs >= 2):
        rows = [mb] if mb is not None else chunk_rows(m, n, nprocs, machine.panel_bytes_max)
        for r in rows:
            cands.append(ksplit_plan(m, n, k, nprocs, machine, mb=r, **kw))
    cands.sort(key=lambda c: (c.total_s, c.steps))
    pool = [c for c in cands if c.algorithm == "summa"]
    ks = [c for c in cands if c.algorithm == "ksplit"]
    if not pool or (ks and ks[0].total_s <= (1 - KSPLIT_MARGIN) * pool[0].total_s):
        pool = ks
    best = pool[0].total_s
    tied = [c for c in pool if c.total_s <= best * (1 + TIE) + 1e-12]
    grid_pick = min(tied, key=_squareness).grid
    pick = next(c for c in pool if c.grid == grid_pick)
    if not why:
        why = ("fastest" if pick is cands[0] else
               f"K split not {KSPLIT_MARGIN:.0%} faster" if pick.algorithm == "summa"
               and ks and ks[0].total_s < pick.total_s else
               f"within {TIE:.0%} of the fastest {pick.algorithm}")
    return replace(pick, candidates=tuple(cands), why=why)
