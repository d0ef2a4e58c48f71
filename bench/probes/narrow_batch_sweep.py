"""Probe: batched products with a narrow side (min(m, n) <= 32, the judges'
large batches of small matrices that lose to cuBLAS, which streams them at
1.3-2.4 TB/s where sgemm's tiles reach 0.8-1.6), every FFMA candidate timed
as the calibration sweep times them (sgemm.calibrate.measure: fp32 check
against cuBLAS's result first, medians, CUDA graphs for short launches),
rung 13's narrow tiles (``kmajor`` k32x32 ... k128x32) among them.  The
sweep is the data both for the question (does any tile stream these near
the DRAM rate?) and for fitting the new tiles' rates.  Not part of the
package.

    OUT=dir python bench/probes/narrow_batch_sweep.py sweep N SEED SECONDS [MIN_MIB [SIDE]]  # GPU
    python bench/probes/narrow_batch_sweep.py report SWEEP.json [narrow|tworows|k8|groups|new]  # CPU

Problems: calibrate.draw's batched category (the planner's own
distribution, this probe's seed), kept where min(m, n) <= 32 and the
operands and output hold at least 32 MiB, or MIN_MIB (a few microseconds of
DRAM time and more: below that the call is host-bound); SIDE (default 32)
lowers the narrow side's bound, as for fitting the 8-wide tiles, which
problems of the default bound reach only a few times.
"""
import json
import math
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FAMILIES = ("double_buffer", "kmajor", "tile", "small", "gemv", "gemv_wide", "small_k",
            "narrow")
MIN_BYTES = 32 << 20
SIDE = 32


def narrow(p) -> bool:
    by = 4 * p["batch"] * (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"])
    return p["cat"] == "batched" and min(p["m"], p["n"]) <= SIDE and by >= MIN_BYTES


def narrow_kmajor(key: str) -> bool:
    """A candidate of the experiment's narrow rung 13 tiles (32 on a side)."""
    return key.startswith("kmajor:") and (":32x" in key or "x32x" in key)


def narrow_kernel(key: str) -> bool:
    """A candidate of 43_narrow.cu (``report SWEEP narrow``)."""
    return key.startswith("narrow:")


def narrow_two_rows(key: str) -> bool:
    """A 43_narrow.cu config whose threads own two wide rows (``report SWEEP
    tworows``): key narrow:BMxBNxBK:threads with threads < max(BM, BN)."""
    if not key.startswith("narrow:"):
        return False
    dims, threads = key.split(":")[1:3]
    bm, bn, _ = map(int, dims.split("x"))
    return int(threads) < max(bm, bn)


def narrow_k8(key: str) -> bool:
    """A 43_narrow.cu config with 8-deep chunks (``report SWEEP k8``): key
    narrow:BMxBNx8:threads."""
    return key.startswith("narrow:") and key.split(":")[1].endswith("x8")


def narrow_groups(key: str) -> bool:
    """A 43_narrow.cu config with two or four k-groups (``report SWEEP
    groups``): more threads than the wide side's rows."""
    if not key.startswith("narrow:"):
        return False
    tile, threads = key.split(":")[1:3]
    bm, bn, _ = (int(x) for x in tile.split("x"))
    return int(threads) > max(bm, bn)


def narrow_new(key: str) -> bool:
    """Either of the fourteenth session's additions (``report SWEEP new``)."""
    return narrow_k8(key) or narrow_groups(key)


def report(path: str, narrow_kmajor=narrow_kmajor) -> None:
    """Per problem: cuBLAS, the fastest existing tile and the fastest new
    one (the narrow kmajor tiles, or with ``narrow`` 43_narrow.cu's), as
    TB/s of the operands' bytes; then geometric means."""
    rows = json.loads(Path(path).read_text())["rows"]
    logs = {"new/old": [], "new/cublas": [], "old/cublas": []}
    for r in rows:
        by = 4 * r["batch"] * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
        t = {k: c["gpu_ms"] for k, c in r["cands"].items() if "gpu_ms" in c}
        new = {k: v for k, v in t.items() if narrow_kmajor(k)}
        old = {k: v for k, v in t.items() if k not in new}
        if not new or not old:
            continue
        kn, ko = min(new, key=new.get), min(old, key=old.get)
        cub = r["cublas_ms"]
        logs["new/old"].append(math.log(old[ko] / new[kn]))
        logs["new/cublas"].append(math.log(cub / new[kn]))
        logs["old/cublas"].append(math.log(cub / old[ko]))
        print(f"{r['batch']}x{r['m']}x{r['n']}x{r['k']} {'NT'[r['ta']]}{'NT'[r['tb']]}: "
              f"cuBLAS {by / cub / 1e9:.2f} TB/s, old {ko} {by / old[ko] / 1e9:.2f}, "
              f"new {kn} {by / new[kn] / 1e9:.2f} (new/old {old[ko] / new[kn]:.2f}x)")
    for k, v in logs.items():
        print(f"{k}: geomean speed ratio {math.exp(sum(v) / len(v)):.3f} over {len(v)}")
    side = {}                   # new/old by the narrow side, and the better of the two
    for r in rows:
        t = {k: c["gpu_ms"] for k, c in r["cands"].items() if "gpu_ms" in c}
        new = [v for k, v in t.items() if narrow_kmajor(k)]
        old = [v for k, v in t.items() if not narrow_kmajor(k)]
        if new and old:
            s = min(r["m"], r["n"])
            g = "<= 8" if s <= 8 else "9-16" if s <= 16 else "17-32"
            side.setdefault(g, []).append(math.log(min(old) / min(new)))
    for g, v in side.items():
        print(f"narrow side {g}: new/old geomean {math.exp(sum(v) / len(v)):.3f}, the better "
              f"of the two / old {math.exp(sum(max(0, x) for x in v) / len(v)):.3f}, new faster "
              f"on {sum(x > 0 for x in v)} of {len(v)}")
    for lay in ("NN", "NT", "TN", "TT"):     # the fastest existing tile against cuBLAS
        v = [math.log(r["cublas_ms"] * 1e-3 / min(
                c["gpu_ms"] * 1e-3 for k, c in r["cands"].items() if "gpu_ms" in c
                and not narrow_kmajor(k)))
             for r in rows if "NT"[r["ta"]] + "NT"[r["tb"]] == lay]
        if v:
            print(f"{lay} as the user calls it: cuBLAS time / the fastest existing tile's, "
                  f"geomean {math.exp(sum(v) / len(v)):.3f}, min {math.exp(min(v)):.2f} "
                  f"over {len(v)}")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["sweep"]:
        from store_refit import sweep
        if len(a) > 4:
            MIN_BYTES = int(float(a[4]) * (1 << 20))
        if len(a) > 5:
            SIDE = int(a[5])
        sweep(int(a[1]), int(a[2]), float(a[3]), keep=narrow, families=FAMILIES,
              name="narrow-batch")
    elif a[:1] == ["report"]:
        report(a[1], {"narrow": narrow_kernel, "tworows": narrow_two_rows, "k8": narrow_k8,
                         "groups": narrow_groups, "new": narrow_new}.get(
            (a[2:3] or [""])[0], narrow_kmajor))
    else:
        sys.exit(__doc__)
