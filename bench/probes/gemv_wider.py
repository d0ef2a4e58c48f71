"""Probe: gemv on outputs whose small side is 17-64 (past the 16 it is
planned for), where the planner runs split tile kernels at 0.6-0.8x cuBLAS
(judges of 2026-11-26).  gemv covers a small side wider than its block's S
with more blocks along it, each reading the big operand X again; those
blocks are adjacent in launch order, so the repeats may come from L2
rather than DRAM.  Problems drawn like the judge's deep-k and skinny
categories with the small side in 17..64 (own seed).  For each: cuBLAS,
the plan, and gemv forced at S = 8 and 16 with K splits 1..16 (two-launch),
checked against fp64.  Output $OUT/gemv-wider.json.

    SGEMM_AUTOTUNE=0 OUT=dir python bench/probes/gemv_wider.py [SEED]
"""
import json, os, random, sys
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402
from sgemm import tune  # noqa: E402
from sgemm.kernels import registry, schemes as S  # noqa: E402
from sgemm.plan import Plan  # noqa: E402
from sgemm.runtime import device as devmod, launcher  # noqa: E402

dev = devmod.info(0)
from _gpu import loguni, operands, stream, tfn  # noqa: E402
r = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 777)
lu = loguni(r)
probs = []
for _ in range(7):      # deep-k: one side 17..64, the other 128..1024
    small, big, k = lu(17, 64), lu(128, 1024), lu(8192, 262144)
    probs.append((small, big, k) if r.random() < 0.5 else (big, small, k))
for _ in range(7):      # skinny: small side 17..64, the others as the judge draws them
    small, b1, b2 = lu(17, 64), lu(512, 16384), lu(256, 16384)
    probs.append((b1, small, b2) if r.random() < 0.5 else (small, b1, b2))
probs = [(m, n, k, r.random() < 0.3, r.random() < 0.3) for m, n, k in probs]
probs = [p for p in probs if 4 * (p[0] * p[2] + p[2] * p[1]) * 2.2 < (3 << 30)]


def run(ls):
    def f():
        for l in ls:
            launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr, l.args)
    return f


rows = []
G = registry.KERNELS["gemv"]
for (m, n, k, ta, tb) in probs:
    a, b, c, A, B = operands(m, n, k, ta, tb)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    nref = float(cp.linalg.norm(ref))
    cub = tfn(lambda: cp.matmul(A, B, out=c))
    cerr = float(cp.linalg.norm(c - ref)) / nref
    with stream:
        pl = Plan(a, b, c, trans_a=ta, trans_b=tb)
    auto = tfn(lambda: pl.execute())
    pr = pl.problems
    side = "m" if pr[0].m <= pr[0].n else "n"
    kind = "r" if S.x_rows_contiguous(pr[0]) else "k"
    forced = []
    for s_ in (8, 16):
        p0 = S.GEMV_CONFIGS[f"{side}{s_}{kind}"]
        for sp in (1, 2, 4, 8, 16):
            try:
                ls = tune.launches_for(G, p0.replace(split_k=sp), pr, dev)
                f = run(ls)
                t = tfn(f)
                c.fill(cp.nan); f(); stream.synchronize()
                err = float(cp.linalg.norm(c - ref)) / nref
                forced.append((f"{side}{s_}{kind}:s{sp}", round(t, 1), round(err / cerr, 2)))
            except Exception as ex:  # noqa: BLE001
                forced.append((f"{side}{s_}{kind}:s{sp}", repr(ex)[:100], None))
    best = min((f for f in forced if isinstance(f[1], float)), key=lambda f: f[1], default=None)
    rows.append(dict(m=m, n=n, k=k, ta=ta, tb=tb, aligned=pr[0].aligned, cublas_us=cub,
                     auto_us=auto, plan=repr(pl), forced=forced))
    print(f"{m:5d} {n:5d} {k:6d} {'T' if ta else 'N'}{'T' if tb else 'N'} X={kind} "
          f"cub {cub:7.1f} auto {auto:7.1f} ({cub / auto:.2f}) best gemv {best} "
          f"({cub / best[1]:.2f}) | {forced}", flush=True)
    del a, b, c, ref
    cp.get_default_memory_pool().free_all_blocks()
json.dump({"device": dev.name, "rows": rows},
          open(os.path.join(os.environ.get("OUT", "/tmp"), "gemv-wider.json"), "w"), indent=1)
