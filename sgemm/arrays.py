"""Array interop: describe any array the API accepts, allocate results in the
caller's package.

Accepted: NumPy (host; copied to the GPU), CuPy, PyTorch CUDA tensors, and
anything exposing ``__cuda_array_interface__`` or ``__dlpack__``.  A
description is a plain record (pointer, shape, strides in elements, dtype,
device) so that validation and layout logic stay pure Python and testable
without a GPU.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ArgumentError, ArgumentTypeError
from .records import Record

HOST = None  # device id of host (NumPy) arrays


class ArrayDesc(Record):
    """One operand: name (for messages), kind ("numpy", "cupy", "torch",
    "cai"), pointer, shape, strides in elements, dtype, device (None: host
    memory), read-only flag and the object itself.  Read-only by convention.

    A Record (records.py), not a frozen dataclass: creating a dataclass
    execs its generated methods (0.6-1.4 ms at a first call's import,
    measured on the CPU machine) and a frozen one's __init__ pays
    object.__setattr__ per field on every uncached call.  Equality and
    hashing compare the fields, as the dataclass did."""

    __slots__ = ("name", "kind", "ptr", "shape", "strides", "dtype", "device", "readonly",
                 "obj")

    def __init__(self, name: str, kind: str, ptr: int, shape: tuple[int, ...],
                 strides: tuple[int, ...], dtype: np.dtype, device: int | None,
                 readonly: bool = False, obj: Any = None):
        self.name, self.kind, self.ptr, self.shape, self.strides = name, kind, ptr, shape, strides
        self.dtype, self.device, self.readonly, self.obj = dtype, device, readonly, obj

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def byte_span(self) -> tuple[int, int]:
        """[lo, hi) bytes this view can touch (strides are non-negative)."""
        if self.size == 0:
            return (self.ptr, self.ptr)
        isz = self.dtype.itemsize
        last = sum((n - 1) * s for n, s in zip(self.shape, self.strides))
        return (self.ptr, self.ptr + (last + 1) * isz)

    @property
    def where(self) -> str:
        return "host" if self.device is None else f"cuda:{self.device}"


def _elem_strides(name: str, byte_strides, itemsize: int) -> tuple[int, ...]:
    out = []
    for s in byte_strides:
        if s % itemsize:
            raise ArgumentError(f"{name} has a byte stride of {s}, not a multiple of its "
                                f"element size {itemsize}")
        out.append(s // itemsize)
    return tuple(out)


def _c_strides(shape) -> tuple[int, ...]:
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


def _pointer_device(ptr: int) -> int:
    from .runtime import cu
    dev = cu.pointer_device(ptr)
    return 0 if dev is None else dev




def describe(x, name: str) -> ArrayDesc:
    """Describe ``x`` or raise an error that names ``name``."""
    mod = type(x).__module__.split(".")[0]
    if isinstance(x, np.ndarray):
        return ArrayDesc(name, "numpy", x.ctypes.data, x.shape,
                         _elem_strides(name, x.strides, x.itemsize), x.dtype, HOST,
                         not x.flags.writeable, x)
    if mod == "torch":
        import torch
        if not x.is_cuda:
            raise ArgumentError(f"{name} is a PyTorch tensor on {x.device}; pass a CUDA tensor "
                                f"({name}.cuda()) or a NumPy array")
        if x.dtype != torch.float32:
            raise ArgumentTypeError(f"{name} has dtype {x.dtype}; sgemm computes in float32 "
                                    f"(convert with {name}.float())")
        dt = np.dtype(np.float32)
        return ArrayDesc(name, "torch", x.data_ptr(), tuple(x.shape), tuple(x.stride()), dt,
                         x.device.index or 0, False, x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dt = np.dtype(cai["typestr"])
        ptr, ro = cai["data"]
        st = cai.get("strides")
        strides = _c_strides(shape) if st is None else _elem_strides(name, st, dt.itemsize)
        kind = "cupy" if mod == "cupy" else "cai"
        dev = x.device.id if kind == "cupy" else (_pointer_device(ptr) if ptr else 0)
        return ArrayDesc(name, kind, int(ptr), shape, strides, dt, dev, bool(ro), x)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        dev_type, _ = x.__dlpack_device__()
        if int(dev_type) == 1:  # kDLCPU
            return describe(np.from_dlpack(x), name)
        import cupy
        return describe(cupy.from_dlpack(x), name)
    raise ArgumentTypeError(
        f"{name} must be an array (NumPy, CuPy, PyTorch, or an object with "
        f"__cuda_array_interface__ or __dlpack__), got {type(x).__name__}")


def to_device(d: ArrayDesc, device: int) -> ArrayDesc:
    """Copy a host (NumPy) array to the GPU, keeping its shape (CuPy array)."""
    import cupy
    with cupy.cuda.Device(device):
        g = cupy.asarray(d.obj)
    return describe(g, d.name)


def empty_like_package(kind: str, like, shape: tuple[int, ...], device: int):
    """Uninitialized float32 C-order array in the package of ``like``."""
    if kind == "torch":
        import torch
        return torch.empty(shape, dtype=torch.float32, device=like.device)
    import cupy
    with cupy.cuda.Device(device):
        return cupy.empty(shape, dtype=np.float32)


def current_stream(kind: str, device: int) -> int:
    """The caller's current stream handle in its own package (0: legacy default)."""
    if kind == "torch":
        import torch
        return torch.cuda.current_stream(device).cuda_stream
    try:
        import cupy
    except ImportError:
        return 0
    with cupy.cuda.Device(device):
        return cupy.cuda.get_current_stream().ptr
