"""Layout normalization: every accepted call becomes one canonical problem.

Kernels compute column-major C = alpha*op(A)*op(B) + beta*C (problem.py).  A
row-major C is handled by computing its transpose instead,

    C^T = op(B)^T * op(A)^T,

so A and B swap roles and transposes become flags; a matrix with a unit
stride along either dimension is "column-major with ld" or "transposed
column-major with ld".  This module is pure Python (no GPU) so that it is
tested against a NumPy model in CI.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import epilogue
from .errors import ArgumentError
from .problem import Problem


@dataclass(frozen=True)
class Mat:
    """A logical matrix view: X(i, j) = mem[ptr + (i*rs + j*cs) * 4 bytes]."""
    ptr: int
    rows: int
    cols: int
    rs: int   # stride between rows, in elements
    cs: int   # stride between columns, in elements

    @property
    def T(self) -> "Mat":
        return Mat(self.ptr, self.cols, self.rows, self.cs, self.rs)


def storage(x: Mat, name: str) -> tuple[bool, int]:
    """(transposed, ld) such that X(i, j) = base[i + j*ld] when not transposed
    and base[j + i*ld] when transposed.  Dimensions of extent 1 impose no
    stride, so a vector is accepted whatever its stride."""
    if x.rows <= 1 and x.cols <= 1:
        return False, 1
    if x.rows <= 1 or x.rs == 1:
        return False, (x.cs if x.cols > 1 else x.rows)
    if x.cols <= 1 or x.cs == 1:
        return True, (x.rs if x.rows > 1 else x.cols)
    raise ArgumentError(
        f"{name} has strides ({x.rs}, {x.cs}) elements: one dimension must have unit "
        f"stride (C- or F-order, a transposed view, or a row pitch larger than the row); "
        f"pass a contiguous copy instead")


def check_output(c: Mat, name: str = "c") -> None:
    """C must not overlap itself: the non-unit stride must step past a whole
    row/column (a broadcast or overlapping view would make writes collide)."""
    t, ld = storage(c, name)
    inner, outer = (c.cols, c.rows) if t else (c.rows, c.cols)
    if outer > 1 and ld < inner:
        raise ArgumentError(
            f"{name} has strides ({c.rs}, {c.cs}) elements, so its elements overlap "
            f"(leading dimension {ld} < {inner}); the output must not alias itself")


def normalize(a: Mat, b: Mat, c: Mat, trans_a: bool, trans_b: bool,
              alpha: float, beta: float, batch: int = 1,
              strides: tuple[int, int, int] = (0, 0, 0), bias: int | None = None,
              act: int = 0) -> Problem:
    """The canonical problem for c = act(alpha*op(a)@op(b) + beta*c + bias).

    ``strides`` are the batch strides of (a, b, c) in elements; they do not
    change under transposition, only the A/B roles swap with the layout.
    ``bias`` (a pointer, or None) has one entry per column of c: the
    canonical columns, or the canonical rows when c is row-major and the
    problem is its transpose (epilogue.code).  ``act``: the activation code."""
    op_a = a.T if trans_a else a
    op_b = b.T if trans_b else b
    m, k = op_a.rows, op_a.cols
    n = op_b.cols
    c_t, _ = storage(c, "c")
    sa, sb, sc = strides
    if c_t:  # row-major C: compute C^T = op(B)^T op(A)^T
        c_l, a_l, b_l = c.T, op_b.T, op_a.T
        m, n = n, m
        sa, sb = sb, sa
    else:
        c_l, a_l, b_l = c, op_a, op_b
    name_a, name_b = ("b", "a") if c_t else ("a", "b")
    ta, lda = storage(a_l, name_a)
    tb, ldb = storage(b_l, name_b)
    tc, ldc = storage(c_l, "c")
    assert not tc, "c_l is column-major by construction"
    return Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=a_l.ptr, lda=lda, b=b_l.ptr, ldb=ldb,
                   c=c_l.ptr, ldc=ldc, alpha=alpha, beta=beta, batch=batch,
                   stride_a=sa, stride_b=sb, stride_c=sc,
                   bias=bias or 0, epi=epilogue.code(act, bias is not None, c_t))


def reference(prob: Problem, mem) -> None:
    """Pure-NumPy model of the canonical problem on a flat float64 buffer
    ``mem`` indexed in elements (pointers are element offsets here, the
    bias's too).  Used by the CPU tests to check that normalize() computes
    what the user asked."""
    import numpy as np
    for z in range(prob.batch):
        A = np.empty((prob.m, prob.k))
        B = np.empty((prob.k, prob.n))
        for i in range(prob.m):
            for p in range(prob.k):
                A[i, p] = mem[prob.a + z * prob.stride_a +
                              (p + i * prob.lda if prob.ta else i + p * prob.lda)]
        for p in range(prob.k):
            for j in range(prob.n):
                B[p, j] = mem[prob.b + z * prob.stride_b +
                              (j + p * prob.ldb if prob.tb else p + j * prob.ldb)]
        AB = A @ B
        for i in range(prob.m):
            for j in range(prob.n):
                off = prob.c + z * prob.stride_c + i + j * prob.ldc
                v = prob.alpha * AB[i, j] + (prob.beta * mem[off] if prob.beta else 0.0)
                if prob.epi & epilogue.BIAS_M:
                    v += mem[prob.bias + i]
                elif prob.epi & epilogue.BIAS_N:
                    v += mem[prob.bias + j]
                mem[off] = float(epilogue.activate(v, epilogue.name_of(prob.epi)))
