"""Problem sizes for ``sgemm bench``: ``--sizes`` lists and ranges, ``--shapes`` files.

    parse_sizes("256,512")           -> [256, 512]
    parse_sizes("256:8192:x2")       -> [256, 512, ..., 8192]   (geometric)
    parse_sizes("1024:4096:+1024")   -> [1024, 2048, 3072, 4096] (arithmetic)
    parse_sizes("256:1024:x2,1000")  -> ranges and values mix in one list

A shapes file has one problem per line, ``M N K [transA transB] [batch]``;
trans flags are N/T (also n/t, 0/1, false/true); ``#`` starts a comment.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_SIZES = (256, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class Shape:
    m: int
    n: int
    k: int
    ta: bool = False
    tb: bool = False
    batch: int = 1

    @property
    def flops(self) -> int:
        """2*M*N*K per matrix (an FMA counts as two flops), the usual GEMM count."""
        return 2 * self.m * self.n * self.k * self.batch

    @property
    def min_bytes(self) -> int:
        """Fewest DRAM bytes: A and B read once, C written once (beta = 0)."""
        return 4 * self.batch * (self.m * self.k + self.k * self.n + self.m * self.n)

    @property
    def square(self) -> bool:
        return self.m == self.n == self.k and self.batch == 1 and not (self.ta or self.tb)

    @property
    def label(self) -> str:
        s = f"{self.m}" if self.m == self.n == self.k else f"{self.m}x{self.n}x{self.k}"
        if self.ta or self.tb:
            s += " " + ("T" if self.ta else "N") + ("T" if self.tb else "N")
        if self.batch > 1:
            s += f" b{self.batch}"
        return s

    @property
    def key(self) -> str:
        """Unambiguous one-word name, 'MxNxK[:TT][xBATCH]' (suite and tuner rows)."""
        t = ("T" if self.ta else "N") + ("T" if self.tb else "N")
        b = f"x{self.batch}" if self.batch > 1 else ""
        return f"{self.m}x{self.n}x{self.k}{'' if t == 'NN' else ':' + t}{b}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Shape":
        return cls(int(d["m"]), int(d["n"]), int(d["k"]), bool(d.get("ta", False)),
                   bool(d.get("tb", False)), int(d.get("batch", 1)))


def _positive(text: str, what: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not an integer") from None
    if v <= 0:
        raise ValueError(f"{what} {text!r} must be positive")
    return v


def _range(item: str) -> list[int]:
    parts = item.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"range {item!r}: write START:STOP:xFACTOR or START:STOP:+STEP")
    lo, hi = _positive(parts[0], "range start"), _positive(parts[1], "range stop")
    step = parts[2] if len(parts) == 3 else "x2"   # powers of two are the usual sweep
    if hi < lo:
        raise ValueError(f"range {item!r}: stop {hi} is below start {lo}")
    out = []
    if step.startswith(("x", "*")):
        f = _positive(step[1:], "range factor")
        if f < 2:
            raise ValueError(f"range {item!r}: factor must be at least 2")
        v = lo
        while v <= hi:
            out.append(v)
            v *= f
    elif step.startswith("+") or step.isdigit():
        d = _positive(step.lstrip("+"), "range step")
        out = list(range(lo, hi + 1, d))
    else:
        raise ValueError(f"range {item!r}: step {step!r} must be xFACTOR or +STEP")
    return out


def parse_sizes(text: str) -> list[int]:
    """Comma list of sizes and ranges; order kept, duplicates dropped."""
    out: list[int] = []
    for item in text.replace(" ", "").split(","):
        if not item:
            continue
        vals = _range(item) if ":" in item else [_positive(item, "size")]
        out += [v for v in vals if v not in out]
    if not out:
        raise ValueError(f"--sizes {text!r} names no size")
    return out


# 'C' (conjugate transpose) is a transpose for real data, as in BLAS.
_TRUE = {"t": True, "c": True, "1": True, "true": True,
         "n": False, "0": False, "false": False}


def _flag(text: str, where: str) -> bool:
    try:
        return _TRUE[text.lower()]
    except KeyError:
        raise ValueError(f"{where}: transpose flag {text!r} must be N or T") from None


def parse_shapes(text: str, source: str = "<shapes>") -> list[Shape]:
    """Parse the text of a shapes file (see module docstring)."""
    shapes = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        f = line.replace(",", " ").split()
        where = f"{source}:{no}"
        if len(f) not in (3, 4, 5, 6):
            raise ValueError(f"{where}: expected 'M N K [transA transB] [batch]', got {raw!r}")
        m, n, k = (_positive(x, f"{where}: dimension") for x in f[:3])
        ta = tb = False
        batch = 1
        if len(f) == 4:          # M N K batch
            batch = _positive(f[3], f"{where}: batch")
        elif len(f) >= 5:
            ta, tb = _flag(f[3], where), _flag(f[4], where)
            if len(f) == 6:
                batch = _positive(f[5], f"{where}: batch")
        shapes.append(Shape(m, n, k, ta, tb, batch))
    if not shapes:
        raise ValueError(f"{source}: no shapes (every line empty or a comment)")
    return shapes


def read_shapes(path: str | Path) -> list[Shape]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ValueError(f"cannot read shapes file {p}: {e.strerror}") from None
    return parse_shapes(text, str(p))


def square(sizes) -> list[Shape]:
    return [Shape(s, s, s) for s in sizes]
