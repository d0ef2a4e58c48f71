"""KernelSpec: everything the rest of the library needs to know about a kernel.

A spec names its CUDA source, the template it instantiates, the TileParams
fields that become template arguments, its named configurations and the rule
that picks one for a problem.  The runtime compiles ``name_expression(...)``,
the launcher uses ``grid``/``block``/``dynamic_smem``/``args``, the CI compile
test walks ``instantiations()``, and the autotuner filters candidates with
``can_implement``.  Nothing about a kernel is written down anywhere else.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable

import numpy as np

from ..problem import Problem
from ..records import Record
from .params import TileParams

# Shared-memory opt-in limit per block (bytes) by SM major version; the device
# query overrides this at run time, these values are for CPU-side checks.
SMEM_LIMIT = {80: 163 * 1024, 86: 99 * 1024, 89: 99 * 1024, 90: 227 * 1024}
STATIC_SMEM_LIMIT = 48 * 1024


def _no_rules(p: TileParams) -> list[str]:
    return []


def _no_smem(p: TileParams) -> int:
    return 0


class KernelSpec(Record):
    """One kernel: its source, template, tunable fields, named configs, the
    rules its configs obey, and how it is launched.  A Record (records.py):
    read-only by convention, compared by its fields, not hashable (its
    configs are a dict)."""

    __slots__ = ("id", "name", "source", "function", "title", "seed", "template_fields",
                 "configs", "rules", "vector_loads", "dynamic_smem", "static_smem",
                 "precision", "archs", "min_cc", "grid_fn", "args_fn", "plain", "pdl", "extra")
    __hash__ = None

    def __init__(
            self,
            id: int,
            name: str,                      # short CLI name, e.g. "naive"
            source: str,                    # file under sgemm/kernels/cuda/
            function: str,                  # template name in the source
            title: str,                     # one line for tables and plots
            seed: str,                      # where the idea comes from
            template_fields: tuple[str, ...],
            configs: dict[str, TileParams],  # named configurations; "small"/"large" by convention
            rules: Callable[[TileParams], list[str]] = _no_rules,
            vector_loads: bool = False,     # kernel takes a trailing ALIGNED template flag
            dynamic_smem: Callable[[TileParams], int] = _no_smem,  # bytes of extern __shared__
            static_smem: Callable[[TileParams], int] = _no_smem,   # bytes of __shared__ arrays
            precision: str = "ieee",        # "ieee", "tf32x3" or "tf32"
            archs: tuple[str, ...] = ("sm_80", "sm_90a"),  # targets it must compile for
            min_cc: int = 80,               # lowest compute capability it runs on
            grid_fn: Callable[[Problem, TileParams], tuple[int, int, int]] | None = None,
            args_fn: Callable[[Problem], tuple] | None = None,  # default: SGEMM_PARAMS order
            plain: bool = False,            # not a template: no TA/TB arguments
            # Programmatic dependent launch (common.cuh, pdl_wait): the kernel waits on
            # griddepcontrol before its first global access, so the launcher may start
            # it early on sm_90+.  None: yes for the FP32 kernels (every one begins with
            # SGEMM_BATCH_OFFSET or pdl_wait; tests/kernels checks the sources).
            pdl: bool | None = None,
            extra: dict | None = None):     # family-specific facts ("scheme", "cluster", ...)
        self.id, self.name, self.source, self.function = id, name, source, function
        self.title, self.seed = title, seed
        self.template_fields, self.configs, self.rules = template_fields, configs, rules
        self.vector_loads, self.dynamic_smem, self.static_smem = (vector_loads, dynamic_smem,
                                                                  static_smem)
        self.precision, self.archs, self.min_cc = precision, archs, min_cc
        self.grid_fn, self.args_fn, self.plain, self.pdl = grid_fn, args_fn, plain, pdl
        self.extra = {} if extra is None else extra

    def aligned_for(self, prob: Problem) -> bool:
        """Whether to launch the ALIGNED (float4) instantiation for this
        problem: the spec takes the flag, the operands allow 16-byte access,
        and the spec's own ``extra["aligned_ok"]`` check (if any) agrees."""
        ok = self.extra.get("aligned_ok")
        return self.vector_loads and prob.aligned and (ok is None or ok(prob))

    @property
    def uses_pdl(self) -> bool:
        return self.precision == "ieee" if self.pdl is None else self.pdl

    # -- parameters -----------------------------------------------------------
    def can_implement(self, p: TileParams, smem_limit: int | None = None) -> list[str]:
        """Reasons this config cannot be used; empty when it can."""
        why = p.basic_reasons()
        if why:
            return why
        why += self.rules(p)
        st = self.static_smem(p)
        if st > STATIC_SMEM_LIMIT:
            why.append(f"static shared memory {st} B exceeds the 48 KiB static limit")
        dyn = self.dynamic_smem(p)
        limit = smem_limit if smem_limit is not None else SMEM_LIMIT[90]
        if st + dyn > limit:
            why.append(f"shared memory {st + dyn} B exceeds the per-block limit {limit} B")
        return why

    def choose(self, prob: Problem, sm_count: int = 132) -> TileParams:
        """Size rule (seed 001, 'mixed parameters'): use the large tile when its
        grid still puts at least one block on every SM, else the small one."""
        if "large" not in self.configs or "small" not in self.configs:
            return next(iter(self.configs.values()))
        big = self.configs["large"]
        gx, gy, gz = self.grid(prob, big)
        return big if gx * gy * gz >= sm_count else self.configs["small"]

    # -- compilation ----------------------------------------------------------
    def name_expression(self, p: TileParams, ta: bool, tb: bool, aligned: bool = False) -> str:
        if self.plain:
            return self.function
        args = [str(getattr(p, f)) for f in self.template_fields]
        args += [_b(ta), _b(tb)]
        if self.vector_loads:
            args.append(_b(aligned))
        return f"{self.function}<{', '.join(args)}>"

    def instantiations(self):
        """Every (config name, params, ta, tb, aligned) the library may launch."""
        if self.plain:
            for cname, p in self.configs.items():
                yield cname, p, False, False, False
            return
        aligned_opts = (False, True) if self.vector_loads else (False,)
        layouts = self.extra.get("layouts")     # p -> the (ta, tb) p is launched in
        for (cname, p), ta, tb, al in itertools.product(
                self.configs.items(), (False, True), (False, True), aligned_opts):
            if layouts is None or (ta, tb) in layouts(p):
                yield cname, p, ta, tb, al

    # -- launch geometry ------------------------------------------------------
    def grid(self, prob: Problem, p: TileParams) -> tuple[int, int, int]:
        if self.grid_fn is not None:
            return self.grid_fn(prob, p)
        return (math.ceil(prob.m / p.BM), math.ceil(prob.n / p.BN), prob.batch)

    def block(self, p: TileParams) -> int:
        return p.threads

    def args(self, prob: Problem) -> tuple:
        """Arguments in the order of SGEMM_PARAMS (common.cuh), the epilogue's
        bias pointer and code last.  Python ints go
        to cuda.core as 64-bit (pointers, long long); int and float are typed."""
        if self.args_fn is not None:
            return self.args_fn(prob)
        return sgemm_args(prob)


def sgemm_args(prob: Problem) -> tuple:
    """SGEMM_PARAMS in order (what KernelSpec.args gives a spec without args_fn)."""
    return (np.int32(prob.m), np.int32(prob.n), np.int32(prob.k), np.float32(prob.alpha),
            prob.a, prob.lda, prob.stride_a, prob.b, prob.ldb, prob.stride_b,
            np.float32(prob.beta), prob.c, prob.ldc, prob.stride_c, prob.bias,
            np.int32(prob.epi))


def ragged_args(prob: Problem) -> tuple:
    """SGEMM_PARAMS then k_last, the depth of the grid's last z entry: K for
    a direct launch (split-K's launches pass the shorter last slice's,
    launches.scheme_launches).  Specs with ``extra["ragged"]``."""
    return sgemm_args(prob) + (np.int32(prob.k),)


def _b(x: bool) -> str:
    return "true" if x else "false"
