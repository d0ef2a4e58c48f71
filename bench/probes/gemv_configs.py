"""Probe: gemv block configs against the planner's pick and cuBLAS on skinny
problems (a small side of 1..64, a big side of 2048..65536, K 1024..32768,
every layout), each config forced on the problem, checked against fp64, then
timed.  Not part of the package; its output is
bench/results/gemv-configs-probe-h100-2026-11-25.json (seed 7), the data
behind schemes._gemv_cfg (docs/notes/dispatch.md).

    OUT=dir python bench/probes/gemv_configs.py [SEED]
"""
import math, os, random, sys, json
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp
from sgemm import tune
from sgemm.plan import Plan
from sgemm.kernels import registry, schemes as S
from sgemm.kernels.params import TileParams
from sgemm.launches import direct_launches
from sgemm.runtime import device as devmod, launcher

dev = devmod.info(0)
G, GW = registry.KERNELS["gemv"], registry.KERNELS["gemv_wide"]
r = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
lu = lambda lo, hi: int(round(math.exp(r.uniform(math.log(lo), math.log(hi)))))
probs = []
for s in [1, 2, 4, 8, 16, 1, 3, 6, 12, 16, 24, 32, 48, 64, 2, 8, 16, 32]:
    big, k = lu(2048, 65536), lu(1024, 32768)
    if r.random() < 0.5: m, n = s, big
    else: m, n = big, s
    probs.append((m, n, k, r.random() < 0.4, r.random() < 0.5))
stream = cp.cuda.Stream(non_blocking=True)
out = []
for (m, n, k, ta, tb) in probs:
    a = cp.random.standard_normal((k, m) if ta else (m, k), dtype=cp.float32)
    b = cp.random.standard_normal((n, k) if tb else (k, n), dtype=cp.float32)
    c = cp.empty((m, n), cp.float32)
    A = a.T if ta else a; B = b.T if tb else b
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64)); nr = float(cp.linalg.norm(ref))
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    def tfn(f, reps=20):
        with stream:
            f(); f()
            ts = []
            for _ in range(5):
                e0.record(stream)
                for _ in range(reps): f()
                e1.record(stream); e1.synchronize()
                ts.append(cp.cuda.get_elapsed_time(e0, e1) / reps)
        return sorted(ts)[2] * 1e3
    cub = tfn(lambda: cp.matmul(A, B, out=c))
    cub_err = float(cp.linalg.norm(c - ref)) / nr
    with stream:
        pl = Plan(a, b, c, trans_a=ta, trans_b=tb)
    auto = tfn(lambda: pl.execute())
    ch = pl.explain() if hasattr(pl, "explain") else None
    canon = pl.problems[0]
    small = min(canon.m, canon.n)
    side_m = canon.m <= canon.n
    row = dict(m=m, n=n, k=k, ta=ta, tb=tb, canon=(canon.m, canon.n, canon.k, canon.ta, canon.tb, canon.aligned),
               cublas_us=cub, auto_us=auto, bytes=4 * (m * k + k * n + m * n), cublas_err=cub_err, var={})
    variants = {}
    if small <= 64:
        for sz in (1, 2, 4, 8, 16):
            if sz < min(small, 16) and not (sz == 16): continue
            for rb, th in ((32, 512), (32, 256), (64, 256), (128, 256), (32, 128), (64, 512), (128, 512)):
                bk = min(2048, 32768 // (4 * sz))
                p = TileParams(BM=sz, BN=rb, BK=bk, threads=th) if side_m else TileParams(BM=rb, BN=sz, BK=bk, threads=th)
                variants[f"gemv s{sz} rb{rb} t{th}"] = (G, p)
            if sz >= min(small, 16): break
        try:
            variants["choose_gemv"] = (G, S.choose_gemv(canon, dev.sm_count))
            if S.x_rows_contiguous(canon):
                variants["choose_wide"] = (GW, S.choose_gemv_wide(canon, dev.sm_count))
        except Exception as ex:
            print("choose", ex)
    for name, (spec, p) in variants.items():
        try:
            ls = direct_launches([canon], spec, p, dev)
            with stream:
                c.fill(cp.nan)
                for l in ls:
                    launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr, l.args)
                stream.synchronize()
            err = float(cp.linalg.norm(c - ref)) / nr
            if not err < 1e-4:
                row["var"][name] = {"bad": err}; continue
            t = tune.time_launches(ls, stream, reps=5, target_ms=1.0)
            row["var"][name] = {"us": t * 1e3, "err": err}
        except Exception as ex:
            row["var"][name] = {"error": str(ex).splitlines()[0][:120]}
    out.append(row)
    best = min(((v["us"], k_) for k_, v in row["var"].items() if "us" in v), default=(float("nan"), "-"))
    print(f"{m:6d} {n:6d} {k:6d} {'T' if ta else 'N'}{'T' if tb else 'N'} canon {row['canon']} cub {cub:7.1f} ({row['bytes']/cub/1e6:4.2f}TB/s) auto {auto:7.1f} best {best[1]:24s} {best[0]:7.1f} ({row['bytes']/best[0]/1e6:4.2f}TB/s) "
          + " ".join(f"{k_.replace('gemv ','')}={v['us']:.0f}" for k_, v in row["var"].items() if "us" in v)
          + " | " + " ".join(f"{k_}:{list(v)[0]}" for k_, v in row["var"].items() if "us" not in v), flush=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "gemv-probe.json"), "w"), indent=1)
