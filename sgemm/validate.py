"""Argument checks.  Every check runs before anything is launched, and every
message names the argument and the values involved."""
from __future__ import annotations

import math
import numbers

import numpy as np

from .arrays import ArrayDesc
from .errors import ArgumentError, ArgumentTypeError, DeviceError

# int8x: the integer engine (sgemm/int8x/route.py); fp32: FP32 accuracy, int8x
# or tf32x3 by their cost models (route.weigh)
PRECISIONS = ("ieee", "tf32x3", "tf32", "int8x", "fp32")
F32 = np.dtype(np.float32)


def scalar(name: str, v) -> float:
    """alpha/beta: a finite real number."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        if isinstance(v, numbers.Complex) and not isinstance(v, (bool, np.bool_)):
            raise ArgumentTypeError(f"{name}={v!r} is complex; sgemm is real FP32")
        raise ArgumentTypeError(f"{name} must be a real number, got {type(v).__name__} {v!r}")
    f = float(v)
    if not math.isfinite(f):
        raise ArgumentError(f"{name}={f} is not finite; alpha and beta must be finite")
    if f != 0.0 and not math.isfinite(float(np.float32(f))):
        raise ArgumentError(f"{name}={f} overflows float32")
    return f


def flag(name: str, v) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False, got {v!r}")
    return bool(v)


def precision(v) -> str:
    if v not in PRECISIONS:
        raise ArgumentError(f"precision={v!r}: choose one of {', '.join(PRECISIONS)}")
    return v


def kernel(name, prec: str | None) -> None:
    """kernel=: 'auto' or a registered name/id whose precision agrees."""
    if name is None or name == "auto":
        return
    from .kernels import registry
    spec = registry.get(name)
    if prec is not None and prec != spec.precision:
        raise ArgumentError(f"kernel={spec.name!r} computes with precision={spec.precision!r} "
                            f"but precision={prec!r} was asked for")


def dtype(d: ArrayDesc) -> None:
    if d.dtype != F32:
        raise ArgumentTypeError(f"{d.name} has dtype {d.dtype}; sgemm computes in float32 "
                                f"(convert with {d.name}.astype('float32'))")


def ndim(d: ArrayDesc, allowed: tuple[int, ...], what: str) -> None:
    if d.ndim not in allowed:
        raise ArgumentError(f"{d.name} has {d.ndim} dimension(s) (shape {d.shape}); "
                            f"{what} needs {' or '.join(map(str, allowed))}")


def strides(d: ArrayDesc) -> None:
    for n, s in zip(d.shape, d.strides):
        if n > 1 and s < 0:
            raise ArgumentError(f"{d.name} has a negative stride {d.strides} (a reversed view); "
                                f"pass a copy")


def same_place(descs: list[ArrayDesc]) -> None:
    first = descs[0]
    for d in descs[1:]:
        if d.device != first.device:
            raise DeviceError(f"{first.name} is on {first.where} but {d.name} is on {d.where}; "
                              f"all arrays must be on the same device (or all NumPy)")


def writeable(c: ArrayDesc) -> None:
    if c.readonly:
        raise ArgumentError(f"{c.name} is read-only; the result is written into it")


def no_overlap(c: ArrayDesc, others: list[ArrayDesc]) -> None:
    """C must not share memory with A or B: the kernels read A and B while
    they write C, so an overlap would give results that depend on timing."""
    clo, chi = c.byte_span()
    for d in others:
        lo, hi = d.byte_span()
        if clo < hi and lo < chi and chi > clo and hi > lo:
            raise ArgumentError(
                f"{c.name} overlaps {d.name} in memory ({c.name} spans bytes "
                f"[{clo:#x}, {chi:#x}), {d.name} spans [{lo:#x}, {hi:#x})); "
                f"the output must not alias an input")


def inner(op_a_shape, op_b_shape, trans_a: bool, trans_b: bool) -> None:
    if op_a_shape[1] != op_b_shape[0]:
        ta = ".T" if trans_a else ""
        tb = ".T" if trans_b else ""
        raise ArgumentError(
            f"shapes do not match: op(a) = a{ta} is {op_a_shape[0]}x{op_a_shape[1]} and "
            f"op(b) = b{tb} is {op_b_shape[0]}x{op_b_shape[1]}; the inner dimensions "
            f"{op_a_shape[1]} and {op_b_shape[0]} differ")


def activation(v) -> int:
    """activation=: None or one of epilogue.ACTIVATIONS' names; its code."""
    from .epilogue import activation_code
    return activation_code(v)


def bias(d: ArrayDesc, n: int, like: ArrayDesc) -> None:
    """bias=: a 1-D float32 vector of the output's n columns, in the
    operands' package and place.  Contiguous: the kernels read bias[j] at
    unit stride (a strided view is rejected rather than copied silently).
    That it does not overlap c is checked with c (no_overlap)."""
    if d.dtype != F32:
        raise ArgumentTypeError(f"bias has dtype {d.dtype}; sgemm adds a float32 bias "
                                f"(convert with bias.astype('float32'))")
    if d.ndim != 1:
        raise ArgumentError(f"bias has {d.ndim} dimension(s) (shape {d.shape}); it must be "
                            f"1-D: one entry per column of the result")
    if d.shape[0] != n:
        raise ArgumentError(f"bias has {d.shape[0]} entries but the result has {n} columns; "
                            f"bias[j] is added to column j")
    if n > 1 and d.strides[0] != 1:
        raise ArgumentError(f"bias has stride {d.strides[0]} elements; it must be contiguous "
                            f"(pass a contiguous copy)")
    if (d.device is None) != (like.device is None) or (
            d.kind != like.kind and "numpy" in (d.kind, like.kind)):
        raise DeviceError(f"bias is on {d.where} but {like.name} is on {like.where}; bias "
                          f"must be where the operands are")
    if d.kind != like.kind:
        raise ArgumentTypeError(f"bias is a {d.kind} array but {like.name} is a {like.kind} "
                                f"array; pass all arrays from one package")
