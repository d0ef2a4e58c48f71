"""Launches: what a chosen (spec, params) becomes on the GPU.

A launch list is built once per plan and replayed by ``Plan.execute`` and
the plan cache.  Direct launches cut problems whose grid passes the y/z
limit into pieces; split-K runs the spec as a strided batch over K slices
into a workspace, then the ordered reduction (32_splitk_reduce.cu) applies
alpha/beta; fused specs (``extra["fused"]``) split K inside one launch with
a workspace of partial tiles and per-tile counters.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np

from . import epilogue
from .cost import WORKSPACE_MAX_BYTES
from .errors import OutOfMemoryError
from .kernels.params import TileParams
from .kernels.spec import KernelSpec
from .problem import Problem
from .records import Record
from .runtime import launcher
from .runtime.device import DeviceInfo

GRID_YZ_MAX = 65535


class Launch(Record):
    """One kernel launch of a plan: the loaded kernel, grid, threads a block,
    dynamic shared memory, arguments, and its role: "gemm", "copy" (the pack
    scheme's copies) or "epilogue".  A Record (records.py)."""

    __slots__ = ("kernel", "grid", "block", "smem", "args", "role")

    def __init__(self, kernel: object, grid: tuple[int, int, int], block: int, smem: int,
                 args: tuple, role: str = "gemm"):
        self.kernel, self.grid, self.block, self.smem, self.args, self.role = (
            kernel, grid, block, smem, args, role)


def split_for_grid(prob: Problem, spec: KernelSpec, p: TileParams) -> list[Problem]:
    """Cut a problem whose grid would pass the y/z limits (65535) into pieces:
    column blocks of C along n, then batch chunks."""
    out = []
    bn = p.BN if not spec.plain else 1
    n_chunk = GRID_YZ_MAX * bn
    # a cluster kernel's grid z is batch * cluster size
    z_max = GRID_YZ_MAX // p.split_k if spec.extra.get("cluster") else GRID_YZ_MAX
    for j0 in range(0, prob.n, n_chunk):
        nj = min(n_chunk, prob.n - j0)
        b_off = j0 if prob.tb else j0 * prob.ldb
        for z0 in range(0, prob.batch, z_max):
            nz = min(z_max, prob.batch - z0)
            out.append(Problem(
                m=prob.m, n=nj, k=prob.k, ta=prob.ta, tb=prob.tb,
                a=prob.a + 4 * z0 * prob.stride_a, lda=prob.lda,
                b=prob.b + 4 * (b_off + z0 * prob.stride_b), ldb=prob.ldb,
                c=prob.c + 4 * (j0 * prob.ldc + z0 * prob.stride_c), ldc=prob.ldc,
                alpha=prob.alpha, beta=prob.beta, batch=nz,
                stride_a=prob.stride_a, stride_b=prob.stride_b, stride_c=prob.stride_c,
                bias=epilogue.shift(prob.epi, prob.bias, 0, j0), epi=prob.epi))
    return out

class WorkspaceLaunch(Launch):
    """A launch that keeps its workspace alive as long as the plan holds it."""

    __slots__ = ("workspace",)

    def __init__(self, kernel: object, grid: tuple[int, int, int], block: int, smem: int,
                 args: tuple, role: str = "gemm", workspace: object = None):
        super().__init__(kernel, grid, block, smem, args, role)
        self.workspace = workspace


def scheme_for(spec: KernelSpec, params: TileParams, prob: Problem | None = None) -> str:
    """'splitk' when the params split K (two launches), else the spec's scheme
    name ('direct', 'small', 'gemv'): all of those are one launch.  A fused
    spec (``extra["fused"]``) splits K inside its one launch: 'splitk_fused'
    for the tile kernel, 'gemv' for gemv_wide (plan.direct_launches builds it)."""
    if (params.split_k > 1 and spec.plain is False and (prob is None or prob.k > 1)
            and not spec.extra.get("cluster")):
        if spec.extra.get("fused"):
            return "gemv" if spec.extra.get("scheme", "direct") == "gemv" else "splitk_fused"
        return "splitk"
    s = spec.extra.get("scheme", "direct")
    return "direct" if s == "splitk" else s


def direct_launches(problems: list[Problem], spec: KernelSpec, p: TileParams,
                    dev) -> list[Launch]:
    """One launch per grid-sized piece of each problem (no workspace).  A
    fused split-K spec (``extra["fused"]``) with split_k > 1 is one launch
    too, with a workspace: fused_launches builds it (here, so the
    tuner, which times what this returns, gets the same launches)."""
    if spec.extra.get("fused") and p.split_k > 1:
        return fused_launches(problems, spec, p, dev)
    out = []
    for prob in problems:
        for piece in split_for_grid(prob, spec, p):
            aligned = spec.aligned_for(piece)
            k = launcher.get_kernel(spec, p, piece.ta, piece.tb, aligned, dev)
            out.append(Launch(k, spec.grid(piece, p), spec.block(p),
                              spec.dynamic_smem(p), spec.args(piece)))
    return out


# The array package whose allocator serves split-K / pack workspaces, per thread:
# set by the entry points that know their operands (plan_cache.gemm_uncached,
# api.matmul, api.plan) for the Plan they build.  "torch": PyTorch's caching
# allocator, so a PyTorch program neither imports CuPy (0.6-1.4 s on the GPU
# machine; a deep-K first call with torch operands took 112 ms with the CuPy
# workspace, 15-18 with torch's: docs/notes/first-call.md) nor keeps a second
# memory pool beside torch's.
_ws = threading.local()


@contextmanager
def workspace_package(kind):
    """Within: allocate_workspace uses ``kind``'s allocator ("torch"; anything
    else keeps the default order, CuPy then cuda.core)."""
    prev = getattr(_ws, "kind", None)
    _ws.kind = kind
    try:
        yield
    finally:
        _ws.kind = prev


def _torch_workspace(nfloats: int, device_id: int, zero_floats: int, nbytes: int):
    """(tensor, pointer) from torch's caching allocator on the current torch
    stream of the device; the zeros complete before returning, as CuPy's do."""
    import torch
    dev = torch.device("cuda", device_id)
    try:
        buf = torch.empty(max(nfloats, 4), dtype=torch.float32, device=dev)
    except torch.OutOfMemoryError as e:
        raise OutOfMemoryError(f"split-K workspace of {nbytes} B: {e}") from None
    if zero_floats:
        buf[:zero_floats].zero_()
        torch.cuda.current_stream(dev).synchronize()
    return buf, int(buf.data_ptr())


def allocate_workspace(nfloats: int, device_id: int, zero_floats: int = 0):
    """(owner, pointer) of nfloats float32 on the device: through torch's
    caching allocator inside ``workspace_package("torch")`` (PyTorch
    operands), else CuPy's pool (cuda.core's allocator where CuPy is
    missing).  The first zero_floats are zeroed (the fused schemes'
    counters) and the zeros are complete when this returns, whatever stream
    the plan later runs on.  torch's block belongs to the stream current at
    allocation, which is the stream the plan runs on unless ``stream=`` names
    another (the plan cache keeps a workspace plan per stream)."""
    nbytes = max(4 * nfloats, 16)
    if nbytes > WORKSPACE_MAX_BYTES:
        raise OutOfMemoryError(f"split-K workspace of {nbytes} B exceeds the "
                               f"{WORKSPACE_MAX_BYTES} B cap")
    if getattr(_ws, "kind", None) == "torch":
        return _torch_workspace(nfloats, device_id, zero_floats, nbytes)
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
    d = Device(device_id)
    d.set_current()     # cuda.core allocates only on its current device; the context the
    buf = d.allocate(nbytes)   # driver-API path made current is not one it knows of
    if zero_floats:
        from .runtime import cu
        cu.memset_d32(int(buf.handle), 0, zero_floats)      # DeviceError names the call
        cu.ctx_synchronize()
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
    beta=0), a shorter last slice as the launch's last batch entry where the
    spec takes its depth (``extra["ragged"]``: k_last, the last argument),
    else as one more launch; then the ordered
    reduction applies alpha/beta and the epilogue (bias, activation) into C,
    once, on the sum: the slices carry none of it.  Batched problems split each batch
    entry in turn (the workspace is reused; launches are stream-ordered)."""
    if scheme != "splitk":
        raise ValueError(f"scheme {scheme!r} has no special launches")
    from .kernels.schemes import REDUCE_SCALAR, REDUCE_VEC, reduce_grid
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
            # the short slice in the full slices' launch: its blocks fill their
            # waves (a launch of its own ran after them on a few SMs)
            ragged = bool(spec.extra.get("ragged") and full and rem
                          and full + 1 <= GRID_YZ_MAX)
            if full:
                parts.append(Problem(m=prob.m, n=prob.n, k=kc, ta=prob.ta, tb=prob.tb,
                                     a=a0, lda=prob.lda, b=b0, ldb=prob.ldb, c=ws, ldc=ldw,
                                     alpha=1.0, beta=0.0, batch=full + ragged,
                                     stride_a=sa_slice, stride_b=sb_slice, stride_c=sw))
            if rem and not ragged:
                parts.append(Problem(m=prob.m, n=prob.n, k=rem, ta=prob.ta, tb=prob.tb,
                                     a=a0 + 4 * full * sa_slice, lda=prob.lda,
                                     b=b0 + 4 * full * sb_slice, ldb=prob.ldb,
                                     c=ws + 4 * full * sw, ldc=ldw, alpha=1.0, beta=0.0,
                                     batch=1))
            for part in parts:
                for piece in split_for_grid(part, spec, base_params):
                    aligned = spec.aligned_for(piece)
                    k = launcher.get_kernel(spec, base_params, piece.ta, piece.tb, aligned, dev)
                    cls = WorkspaceLaunch if first else Launch
                    kw = {"workspace": owner} if first else {}
                    args = spec.args(piece)
                    if ragged:      # pieces split n only (z <= GRID_YZ_MAX): each ends short
                        args = args[:-1] + (np.int32(rem),)
                    out.append(cls(k, spec.grid(piece, base_params), spec.block(base_params),
                                   spec.dynamic_smem(base_params), args, **kw))
                    first = False
            vec = c0 % 16 == 0 and prob.ldc % 4 == 0
            rspec = REDUCE_VEC if vec else REDUCE_SCALAR
            rp = rspec.configs["default"]
            kr = launcher.get_kernel(rspec, rp, False, False, False, dev)
            grid = reduce_grid(prob.m, prob.n, g["slices"], vec)
            args = reduce_args(prob.m, prob.n, g["slices"], ws, ldw, sw, prob.alpha,
                               prob.beta, c0, prob.ldc, prob)
            out.append(Launch(kr, grid, 256, 0, args, role="epilogue"))
    return out


def reduce_args(m, n, slices, w, ldw, sw, alpha, beta, c, ldc, prob: Problem,
                stride_c: int = 0) -> tuple:
    """32_splitk_reduce.cu's arguments; the epilogue is ``prob``'s."""
    return (np.int32(m), np.int32(n), np.int32(slices), w, ldw, sw, np.float32(alpha),
            np.float32(beta), c, ldc, stride_c, prob.bias, np.int32(prob.epi))


def epilogue_launches(problems: list[Problem], dev: DeviceInfo) -> list:
    """C = act(beta * C + bias) where alpha == 0 or k == 0 (A and B unread):
    the reduction with no slices (32_splitk_reduce.cu, S = 0), grid z over
    batch entries.  Without an epilogue the scale kernel does this."""
    from .kernels.schemes import REDUCE_SCALAR, REDUCE_VEC, reduce_grid
    out = []
    for prob in problems:
        vec = (prob.c % 16 == 0 and prob.ldc % 4 == 0
               and (prob.batch == 1 or prob.stride_c % 4 == 0))
        rspec = REDUCE_VEC if vec else REDUCE_SCALAR
        kr = launcher.get_kernel(rspec, rspec.configs["default"], False, False, False, dev)
        gx = reduce_grid(prob.m, prob.n, 0, vec)[0]
        for z0 in range(0, prob.batch, GRID_YZ_MAX):
            nz = min(GRID_YZ_MAX, prob.batch - z0)
            args = reduce_args(prob.m, prob.n, 0, 0, 0, 0, 0.0, prob.beta,
                               prob.c + 4 * z0 * prob.stride_c, prob.ldc, prob, prob.stride_c)
            out.append(Launch(kr, (gx, 1, nz), 256, 0, args, role="epilogue"))
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
    from .kernels.schemes import fused_direct_args, fused_slices
    from .kernels.spec import sgemm_args
    fz = spec.extra["fused"]
    base = params.replace(split_k=1)
    unit, slot = fz["unit"](params), fz["slot"](params)
    cap = WORKSPACE_MAX_BYTES // 4
    jobs, need_ws, need_cnt = [], 0, 0
    for prob in problems:
        for piece in split_for_grid(prob, spec, base):
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
        if nsl > 1 and owner is not None and not any(isinstance(l, WorkspaceLaunch) for l in out):
            out.append(WorkspaceLaunch(k, grid, spec.block(base), spec.dynamic_smem(base), args,
                           workspace=owner))
        else:
            out.append(Launch(k, grid, spec.block(base), spec.dynamic_smem(base), args))
    return out
