"""GPU correctness check for ladder rungs 2, 4, 5, 6, 7 and 12.

For every kernel and each of its named configs (forced, not chosen by size):
odd shapes (1, 3, 33, 129, 1000, 4097 ...), all four transposes, C- and
F-ordered operands, padded pitches and offset (not 16-byte aligned) views,
against a float64 CuPy reference.  C is poisoned with NaN before each beta=0
call; a beta != 0 case and a strided batch are included.  C is a view into a
larger buffer filled with a sentinel, and everything outside the m x n block
must be left untouched.

    python scripts/check_rungs_a.py [kernel ...]

Prints one line per kernel; exit status 1 if anything failed.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import cupy as cp
import numpy as np

# Run from a checkout without relying on the editable install being importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sgemm  # noqa: E402
from sgemm.kernels.registry import KERNELS  # noqa: E402

MINE = ["coalesced", "tile1d", "tile2d", "vectorized", "conflict_free", "volkov"]
SENTINEL = 12345.0
U = 2.0 ** -24   # unit roundoff of float32

# (m, n, k) -- every one runs with a transpose pair and layout drawn below.
SHAPES = [(1, 1, 1), (3, 3, 3), (2, 1, 3), (1, 129, 33), (33, 1, 129), (31, 33, 2),
          (33, 31, 127), (129, 129, 129), (127, 65, 1000), (1000, 3, 129),
          (3, 1000, 31), (1000, 1000, 1000), (4097, 65, 33), (65, 129, 4097),
          (64, 64, 8), (128, 128, 16)]


def _operand(rng, rows, cols, order, layout):
    """A rows x cols float32 CuPy array with the requested memory layout."""
    if layout == "plain":
        x = rng.standard_normal((rows, cols), dtype=np.float32)
        return cp.asarray(x, order=order)
    pad = 3 if layout == "pitch" else 0     # pitch: leading dimension + 3 (+1 offset below)
    big = cp.asarray(rng.standard_normal((rows + pad + 1, cols + pad + 1), dtype=np.float32),
                     order=order)
    return big[1:1 + rows, 1:1 + cols] if layout == "offset" else big[:rows, :cols]


def _c_view(rows, cols, order, offset):
    """A rows x cols view into a sentinel-filled buffer, plus the buffer."""
    big = cp.full((rows + 2, cols + 3), SENTINEL, dtype=cp.float32, order=order)
    o = 1 if offset else 0
    return big[o:o + rows, o:o + cols], big, (slice(o, o + rows), slice(o, o + cols))


def _check_one(kern, rng, m, n, k, ta, tb, order, layout, alpha, beta, batch=0):
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    if batch:
        a = cp.asarray(rng.standard_normal((batch,) + a_shape, dtype=np.float32))
        b = cp.asarray(rng.standard_normal((batch,) + b_shape, dtype=np.float32))
        c = cp.full((batch, m, n), cp.nan if beta == 0 else 0.0, dtype=cp.float32)
        if beta != 0:
            c[...] = cp.asarray(rng.standard_normal((batch, m, n), dtype=np.float32))
        c0 = c.astype(cp.float64)
        sgemm.gemm_batched(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, kernel=kern)
        a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
        opa = a64.transpose(0, 2, 1) if ta else a64
        opb = b64.transpose(0, 2, 1) if tb else b64
        ref = alpha * (opa @ opb) + (beta * c0 if beta != 0 else 0.0)
        bound = abs(alpha) * (cp.abs(opa) @ cp.abs(opb))
        if beta != 0:
            bound = bound + abs(beta) * cp.abs(c0)
        got, outside_ok = c.astype(cp.float64), True
    else:
        a = _operand(rng, *a_shape, order, layout)
        b = _operand(rng, *b_shape, order, layout)
        c, big, sl = _c_view(m, n, order, layout == "offset")
        if beta == 0:
            c[...] = cp.nan                       # beta == 0: must not be read
        else:
            c[...] = cp.asarray(rng.standard_normal((m, n), dtype=np.float32))
        c0 = c.astype(cp.float64)
        sgemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, kernel=kern)
        a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
        opa = a64.T if ta else a64
        opb = b64.T if tb else b64
        ref = alpha * (opa @ opb) + (beta * c0 if beta != 0 else 0.0)
        bound = abs(alpha) * (cp.abs(opa) @ cp.abs(opb))
        if beta != 0:
            bound = bound + abs(beta) * cp.abs(c0)
        got = c.astype(cp.float64)
        mask = cp.ones(big.shape, dtype=bool)
        mask[sl] = False
        outside_ok = bool(cp.all(big[mask] == SENTINEL))
    cp.cuda.runtime.deviceSynchronize()
    if bool(cp.isnan(got).any()):
        return float("inf"), "NaN in result"
    # worst-case FP32 bound gamma_k * (|alpha| |A||B| + |beta||C|), plus the epilogue
    ratio = float(cp.max(cp.abs(got - ref) / ((k + 3) * U * bound + 1e-30)))
    if not outside_ok:
        return ratio, "wrote outside the m x n block"
    return ratio, "" if ratio <= 1.0 else "error above the gamma_k bound"


def check_kernel(name: str, seed: int = 1234) -> tuple[bool, str]:
    spec = KERNELS[name]
    rng = np.random.default_rng(seed)
    parts, ok, worst, ncase = [], True, 0.0, 0
    for cname, params in spec.configs.items():
        why = spec.can_implement(params)
        if why:
            return False, f"config {cname} rejected: {why}"
        # A spec with a single config: spec.choose then always returns it.
        forced = dataclasses.replace(spec, configs={cname: params})
        fails = []
        cases = []
        for i, (m, n, k) in enumerate(SHAPES):
            ta, tb = bool(i & 1), bool(i & 2)
            order = "C" if (i >> 2) & 1 else "F"
            layout = ("plain", "pitch", "offset")[i % 3]
            cases.append((m, n, k, ta, tb, order, layout, 1.5, 0.0, 0))
        for ta in (False, True):                      # every transpose in both orders
            for tb in (False, True):
                for order in ("C", "F"):
                    cases.append((67, 45, 37, ta, tb, order, "plain", -0.5, 0.0, 0))
                cases.append((129, 33, 65, ta, tb, "F", "offset", 0.75, 0.5, 0))   # beta != 0
                cases.append((130, 68, 40, ta, tb, "F", "pitch", 1.0, 2.0, 0))
        cases.append((33, 65, 17, False, True, "C", "plain", 1.0, 0.0, 3))        # batch
        cases.append((64, 32, 24, True, False, "C", "plain", 2.0, -1.0, 2))
        for case in cases:
            ratio, err = _check_one(forced, rng, *case)
            ncase += 1
            worst = max(worst, ratio)
            if err:
                fails.append(f"{case[:7]} beta={case[8]} batch={case[9]}: {err} (ratio {ratio:.2g})")
        ok &= not fails
        parts.append(f"{cname}: {len(cases) - len(fails)}/{len(cases)} ok")
        parts += fails[:4]
    status = "PASS" if ok else "FAIL"
    return ok, (f"{status} {name:14s} {ncase} cases, worst err/bound {worst:.3g}; "
                + "; ".join(parts))


def main(argv: list[str]) -> int:
    names = argv or MINE
    all_ok = True
    for name in names:
        try:
            ok, line = check_kernel(name)
        except Exception as e:  # report and go on with the next kernel
            ok, line = False, f"FAIL {name:14s} raised {type(e).__name__}: {e}"
        all_ok &= ok
        print(line, flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
