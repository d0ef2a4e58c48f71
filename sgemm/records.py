"""Record: the base of the small classes a first call imports (kernel specs,
launches, cost-model rates, tuned tables), with the methods a dataclass
would generate for them written once, here.

A dataclass compiles its ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``
(and, frozen, ``__setattr__`` and ``__delattr__``) from source text when
its class statement runs: 0.3-1.4 ms a class on the CPU machine, paid by
every process at its first sgemm call (docs/notes/first-call.md).  Methods
written in a module come from its bytecode instead.

A subclass names its fields in ``__slots__`` (a subclass of a subclass
adds its own) and writes its ``__init__``.  Equality compares the fields of
two records of the same class, ``__repr__`` lists them and ``as_dict``
maps them, as a dataclass's methods and ``dataclasses.asdict`` do; hashing
hashes the fields (a record with a dict among them sets ``__hash__ =
None``, as the dataclass it replaces could not hash either).  Records are
read-only by convention: enforcing it would cost every construction an
``object.__setattr__`` per field, as a frozen dataclass's does.  Classes
whose users call ``dataclasses.replace`` or ``fields`` on them (TileParams,
Problem, DeviceInfo, layout.Mat) stay dataclasses.
"""
from __future__ import annotations


class Record:
    __slots__ = ()
    _names: tuple[str, ...] = ()    # every field, base classes' first

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._names = tuple(f for c in reversed(cls.__mro__)
                           for f in c.__dict__.get("__slots__", ()))

    def _fields(self) -> tuple:
        return tuple(getattr(self, f) for f in self._names)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self):
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(
            f"{f}={getattr(self, f)!r}" for f in self._names) + ")"

    def as_dict(self) -> dict:
        """Field name -> value (``dataclasses.asdict`` of a record whose
        fields hold no records)."""
        return dict(zip(self._names, self._fields()))
