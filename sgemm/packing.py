"""The pack scheme: unaligned operands are copied into aligned panels first.

Why: the fast FFMA kernels read 16 bytes per load only when every column of
an operand starts on a 16-byte boundary (``Problem.aligned``).  A call with
an odd leading dimension (1023 x 1021 row-major, 4097 x 4093, any view with an
odd row pitch) gets their scalar instantiations, which measured 0.80x cuBLAS
at 1023x1025x1021 against 1.21x for 1024^3 (H200, public suite,
2026-11-22; `python bench/suite.py`).  Copying A and B costs one read and one
write of each, which is small next to the GEMM when m, n and k are all large.

How (all in one plan, stream-ordered, PDL between the launches):

1. ``pack_operands`` (kernels/cuda/37_pack.cu) copies the operands that need
   it into one workspace, leading dimension rounded up to a multiple of 4 and
   zero padding.  An operand whose base and leading dimension are aligned is
   used in place, whatever its m or n: the kernels guard the edges of a
   tile element by element, so an odd extent costs no copy.  An x @ W^T
   layer onto a 50257-wide vocabulary has A and B aligned and only C's
   pitch odd: it copies nothing and pays for C' alone.
2. The aligned problem m x n x k goes through the ordinary dispatcher
   (tuned table, heuristic) with alpha = 1, beta = 0, into a workspace C'
   (leading dimension ceil4(m)).  When its own scheme is split-K, the
   reduction launch is redirected to the real C instead (the slices are
   already in a workspace), so there is no C'.
3. Otherwise ``splitk_reduce`` with one slice applies C = alpha*C' + beta*C
   (and the epilogue: bias, activation) to the real m x n block (beta == 0
   never reads C, as everywhere).

When: ``wants_pack`` -- FP32 auto dispatch, one problem (no batch), operands
not float4-aligned, and at least PACK_MIN_INTENSITY flops per byte of extra
traffic (the copies plus C' written and read), so that the copies stay a
small part of the GEMM.  ``SGEMM_PACK=0`` turns the scheme off;
``SGEMM_PACK=always`` drops the intensity test (for measuring where it pays).
"""
from __future__ import annotations

import math
import os
import numpy as np

from .problem import Problem

# Flops per extra byte above which packing pays.  The copies move bytes at
# ~3 TB/s while the GEMM runs at ~40 TFLOPS, so at 48 flop/B they cost about
# a quarter of the GEMM's time, which is what the scalar loads lose at
# 1023x1025x1021 (0.80x against 1.0-1.2x aligned); set from the pack on/off
# sweep in docs/notes/dispatch.md.
PACK_MIN_INTENSITY = 48.0


def _ceil4(x: int) -> int:
    return -(-x // 4) * 4


def enabled() -> bool:
    return os.environ.get("SGEMM_PACK", "1") not in ("0", "off", "no", "")


def _operand_ok(ptr: int, ld: int) -> bool:
    """Usable in place: a 16-byte base and ld a multiple of 4."""
    return ptr % 16 == 0 and ld % 4 == 0


def _c_in_place(prob: Problem) -> bool:
    return _operand_ok(prob.c, prob.ldc)


def extra_bytes(prob: Problem) -> int:
    """Bytes the scheme adds: read + write of each copied operand, and C'
    written by the GEMM and read by the epilogue when C is not usable."""
    n = sum(8 * j[0] * j[1] for j in _jobs(prob) if j is not None)
    return n if _c_in_place(prob) else n + 8 * prob.m * prob.n


def wants_pack(prob: Problem, precision: str = "ieee", spec=None, params=None) -> bool:
    """Whether to pack this problem (for the chosen spec, if given: only a
    kernel with an ALIGNED instantiation gains anything from the copies; and
    for the chosen params: a tuned entry with pack=0 measured it slower)."""
    if not enabled() or precision != "ieee" or prob.batch != 1 or prob.aligned:
        return False
    if params is not None and params.pack == 0:
        return False
    if spec is not None and (not spec.vector_loads or spec.precision != "ieee"
                             or spec.extra.get("scheme") in ("gemv", "cluster")):
        return False
    if min(prob.m, prob.n) < 64:       # gemv and thin outputs: never worth it
        return False
    from .cost import WORKSPACE_MAX_BYTES
    nbytes = extra_bytes(prob)
    need = 0.0 if os.environ.get("SGEMM_PACK") == "always" else PACK_MIN_INTENSITY
    return (nbytes > 0 and prob.flops >= need * nbytes
            and 4 * workspace_floats(prob) <= WORKSPACE_MAX_BYTES)


def _panel(ta: bool, dim: int, k: int) -> tuple[int, int, int, int]:
    """(rows, cols, ld, cols_pad) of an operand's column-major panel and of
    its packed copy.  `dim` is its extent along m (A) or n (B); `ta` says it
    is k-contiguous (A with ta, B without tb): a k x dim panel, else dim x k.
    The copy's ld is rounded up to 4 and the m/n direction padded to 4."""
    if ta:
        return k, dim, _ceil4(k), _ceil4(dim)
    return dim, k, _ceil4(dim), k


def _jobs(prob: Problem) -> list[tuple]:
    """(rows, cols, src, ld, ldd, cols_pad, offset) of each copied operand,
    A first; offsets in floats into the workspace."""
    jobs, off = [], 0
    for ptr, ld, kcont, dim in ((prob.a, prob.lda, prob.ta, prob.m),
                                (prob.b, prob.ldb, not prob.tb, prob.n)):
        if _operand_ok(ptr, ld):
            jobs.append(None)
            continue
        rows, cols, ldd, cpad = _panel(kcont, dim, prob.k)
        jobs.append((rows, cols, ptr, ld, ldd, cpad, off))
        off += ldd * cpad
    return jobs


def _inner(prob: Problem, a, lda, b, ldb, c, ldc) -> Problem:
    """The aligned m x n x k problem on the copies or operands in place;
    alpha, beta stay with the epilogue unless the GEMM writes C itself."""
    direct = _c_in_place(prob)
    # the epilogue goes with alpha and beta: into the GEMM when it writes C
    # (same origin, same bias), else into the reduction
    return Problem(m=prob.m, n=prob.n, k=prob.k, ta=prob.ta, tb=prob.tb,
                   a=a, lda=lda, b=b, ldb=ldb, c=c, ldc=ldc,
                   alpha=prob.alpha if direct else 1.0, beta=prob.beta if direct else 0.0,
                   bias=prob.bias if direct else 0, epi=prob.epi if direct else 0)


def _copies_floats(jobs: list) -> int:
    """Workspace floats the copies take (the last one's offset plus size)."""
    last = next((j for j in reversed(jobs) if j is not None), None)
    return last[6] + last[4] * last[5] if last else 0


def workspace_floats(prob: Problem) -> int:
    """Upper bound of pack_launches' workspace (C' counted even where split-K
    makes it unnecessary)."""
    used = _copies_floats(_jobs(prob))
    return used if _c_in_place(prob) else used + _ceil4(prob.m) * prob.n


def pack_launches(prob: Problem, dev, spec, params):
    """(spec, params, scheme, launches) of the pack scheme for one problem:
    the copies, then `spec` with `params` (the dispatcher's choice for the
    original problem, whose m x n it keeps) on the aligned operands, then
    the epilogue."""
    from .launches import (WorkspaceLaunch, allocate_workspace, direct_launches,
                           reduce_args, scheme_for, scheme_launches)
    from .kernels.schemes import REDUCE_SCALAR, REDUCE_VEC, reduce_grid
    from .kernels.utility import PACK
    from .runtime import launcher

    m4 = _ceil4(prob.m)         # the leading dimension of C', the GEMM's own output
    ja, jb = _jobs(prob)
    jobs = [j for j in (ja, jb) if j is not None]
    used = _copies_floats(jobs)
    c_direct = _c_in_place(prob)
    scheme = scheme_for(spec, params, prob)
    # split-K sums its slices straight into C: no C' then
    need_cp = not c_direct and scheme != "splitk"
    owner, ws = allocate_workspace(used + (m4 * prob.n if need_cp else 0), dev.id)
    a = ws + 4 * ja[6] if ja else prob.a
    b = ws + 4 * jb[6] if jb else prob.b
    if c_direct:
        c, ldc = prob.c, prob.ldc
    else:   # C' (for split-K a placeholder the reduction below no longer writes)
        c, ldc = ws + 4 * used, m4
    inner = _inner(prob, a, ja[4] if ja else prob.lda, b, jb[4] if jb else prob.ldb, c, ldc)
    if scheme == "splitk":
        gemm = scheme_launches([inner], spec, params, scheme, dev)
    else:
        gemm = direct_launches([inner], spec, params, dev)
    WL = WorkspaceLaunch

    # 1. the copies: one launch, z = operand (a second operand's slot repeats the first)
    out = []
    if jobs:
        args = []
        for rows, cols, src, ld, ldd, cpad, off in jobs + jobs[:1] * (2 - len(jobs)):
            args += [np.int32(rows), np.int32(cols), src, ld, ws + 4 * off, ldd,
                     np.int32(cpad)]
        # blocks stride over each panel's float4 groups: two waves of 8 blocks an SM at most
        groups = max(j[4] // 4 * j[5] for j in jobs)
        grid = (max(1, min(math.ceil(groups / 256), 16 * dev.sm_count)), 1, len(jobs))
        kp = launcher.get_kernel(PACK, PACK.configs["default"], False, False, False, dev)
        out.append(WL(kp, grid, 256, 0, tuple(args), role="copy", workspace=owner))
    if c_direct:
        return spec, params, "pack+" + scheme, out + gemm

    # 2-3. the GEMM, then the epilogue into the real m x n block of C: for
    # split-K the reduction of the slices itself, redirected from C' to C
    if scheme == "splitk":
        w, ldw, sw = gemm[-1].args[3:6]
        slices, gemm = gemm[-1].args[2], gemm[:-1]
    else:
        slices, w, ldw, sw = np.int32(1), c, m4, m4 * prob.n
    vec = prob.c % 16 == 0 and prob.ldc % 4 == 0
    rspec = REDUCE_VEC if vec else REDUCE_SCALAR
    kr = launcher.get_kernel(rspec, rspec.configs["default"], False, False, False, dev)
    grid = reduce_grid(prob.m, prob.n, int(slices), vec)
    args = reduce_args(prob.m, prob.n, int(slices), w, ldw, sw, prob.alpha, prob.beta,
                       prob.c, prob.ldc, prob)
    # the last launch holds the workspace too (there may be no copy launch)
    tail = WL(kr, grid, 256, 0, args, role="epilogue", workspace=owner)
    return spec, params, "pack+" + scheme, out + gemm + [tail]
