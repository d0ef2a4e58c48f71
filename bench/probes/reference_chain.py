"""Probe (CPU): how long cuBLAS's FP32 accumulation chains are, read from
its errors in every judge file the repository ever held.  Not part of the
package; needs git and the repository's history, no GPU.

Why: the planner caps an FFMA plan's K slice at 1024 where the output has
fewer 128x128 tiles than SMs (planner.ACC_SLICE_SMALL), so deep-K plans
run 10-250 slices and small tiles; the judges put our error on deep K at
0.19-1.24 of cuBLAS's (median 0.72), and cuBLAS's grows with K.  Could a
model of the reference -- a GEMM that fills the GPU once with 128x128
tiles, so its chain is K / floor(SMs / tiles) -- set a longer cap?  The
judge data is N(0, 1); a chain of n FP32 FFMAs then gives a relative error
of about 1.79e-8 sqrt(n) (the median of cuBLAS's error / sqrt(K) on large
outputs with K <= 8192, where it does not split), so each row's implied
chain is (error / 1.79e-8)^2.

    python bench/probes/reference_chain.py [REPO]
"""
import json
import math
import re
import subprocess
import sys

SMS = 132                 # H100 SXM and H200: every judge file's GPU
C = 1.79e-8               # relative error per sqrt(chain), N(0, 1) operands


def judge_rows(repo: str) -> list:
    """Every batch-1 judge row ever committed, once per (shape, layout, GPU)."""
    git = ["git", "-C", repo]
    paths = sorted(set(subprocess.run(
        git + ["log", "--all", "--name-only", "--pretty=format:", "--",
               "bench/results/judge-*.json"], capture_output=True, text=True,
        check=True).stdout.split()))
    rows, seen = [], set()
    for path in paths:
        commit = subprocess.run(git + ["log", "--all", "-n1", "--pretty=%H", "--", path],
                                capture_output=True, text=True, check=True).stdout.strip()
        for rev in (commit, commit + "^"):          # the last commit may have deleted it
            got = subprocess.run(git + ["show", f"{rev}:{path}"], capture_output=True, text=True)
            if got.returncode == 0:
                break
        try:
            d = json.loads(got.stdout)
        except ValueError:
            continue
        if not isinstance(d, dict):
            continue
        dev = str(d.get("device", ""))[:12]
        for r in d.get("rows", []):
            if not isinstance(r, dict) or "cublas_err" not in r or r.get("batch", 1) != 1:
                continue
            key = (r["m"], r["n"], r["k"], r["ta"], r["tb"], dev)
            if key not in seen:
                seen.add(key)
                rows.append(dict(r, file=path))
    return rows


def quantiles(v, ps=(0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5)) -> str:
    v = sorted(v)
    return "  ".join(f"p{100 * p:g} {v[int(p * len(v))]:.3g}" for p in ps)


def main() -> int:
    repo = sys.argv[1] if len(sys.argv) > 1 else "."
    rows = judge_rows(repo)
    tiles = lambda r: math.ceil(r["m"] / 128) * math.ceil(r["n"] / 128)   # noqa: E731
    big = [r["cublas_err"] / math.sqrt(r["k"]) for r in rows
           if tiles(r) >= 400 and 1024 <= r["k"] <= 8192 and min(r["m"], r["n"]) >= 512]
    print(f"{len(rows)} batch-1 judge rows; cuBLAS error / sqrt(K) on {len(big)} large outputs "
          f"with K <= 8192: {quantiles(big, (0.1, 0.5, 0.9))}")
    small = [r for r in rows if min(r["m"], r["n"]) > 64 and tiles(r) < SMS and r["k"] > 2048]
    implied = [(r["cublas_err"] / C) ** 2 for r in small]
    ratio = [c / (r["k"] / max(1, SMS // tiles(r))) for c, r in zip(implied, small)]
    print("outputs with fewer 128x128 tiles than SMs, both sides > 64, K > 2048: "
          f"{len(small)} rows")
    print(f"  cuBLAS's implied chain:                 {quantiles(implied)}")
    print(f"  ... over the one-wave reference's chain: {quantiles(ratio)}")
    print("  lowest ratios (m x n x k, category, implied chain, reference chain):")
    low = sorted(zip(ratio, implied, small), key=lambda t: t[0])[:8]
    for q, c, r in low:
        ref = r["k"] / max(1, SMS // tiles(r))
        print(f"    {q:.3f}  {r['m']}x{r['n']}x{r['k']} {r.get('cat', '')}  {c:.0f}  {ref:.0f}")
    for cap in (1024, 2048, 4096):     # twice the error is four times the chain
        over = sum(1 for c, r in zip(implied, small) if min(cap, r["k"]) > 4 * c)
        print(f"  slices of {cap} would exceed twice cuBLAS's error on {over} of {len(small)}")
    # sgemm's own error there, as measured under the 1024 cap (the files of
    # 2026-11-28 and later: the cap's era); twice the slice is sqrt(2) the error
    ours = sorted(r["ieee"]["err_vs_cublas"] for r in small
                  if re.search(r"-2026-11-(2[89]|3\d)", r["file"])
                  and isinstance(r.get("ieee"), dict) and "err_vs_cublas" in r["ieee"])
    if ours:
        n = len(ours)
        print(f"  sgemm's error over cuBLAS's there, judges of 2026-11-28 on ({n} rows): median "
              f"{ours[n // 2]:.2f}, p95 {ours[int(0.95 * n)]:.2f}, max {ours[-1]:.2f}; "
              f"x sqrt(2) for 2048-deep slices: max {ours[-1] * math.sqrt(2):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
