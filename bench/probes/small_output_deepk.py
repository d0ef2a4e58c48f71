"""Probe: deep K with a small output, and GEMV-like problems whose big side
gives few blocks.  Problems drawn like the judge's deep-k category but with
m, n <= 128 (own seed, never a judge's), plus n = 1 / m = 1 products with K
of 4-16 thousand.  For each: cuBLAS, the model's plan timed whole and
launch by launch, the model's best candidates predicted and measured, and
(gemv-able problems) the gemv kernel forced through the two-launch K split
at S = 2..16.  Not part of the package; output $OUT/small-output-deepk.json.

    SGEMM_AUTOTUNE=0 OUT=dir python bench/probes/small_output_deepk.py [SEED]
"""
import json, os, random, sys
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402
from sgemm import tune, planner  # noqa: E402
from sgemm.kernels import registry  # noqa: E402
from sgemm.plan import Plan  # noqa: E402
from sgemm.runtime import device as devmod  # noqa: E402

dev = devmod.info(0)
from _gpu import loguni, operands, stream, tfn  # noqa: E402
r = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 5151)
lu = loguni(r)
probs = [(lu(16, 128), lu(16, 128), lu(8192, 262144), r.random() < 0.3, r.random() < 0.3)
         for _ in range(10)]
for _ in range(6):
    big, k = lu(512, 16384), lu(4096, 16384)
    ta, tb = r.random() < 0.3, r.random() < 0.3
    probs.append((big, 1, k, ta, tb) if r.random() < 0.5 else (1, big, k, ta, tb))


def timed(ls):
    return round(tune.time_launches(ls, stream, reps=5, target_ms=1.0) * 1e3, 1)


rows = []
for (m, n, k, ta, tb) in probs:
    a, b, c, A, B = operands(m, n, k, ta, tb)
    cub = tfn(lambda: cp.matmul(A, B, out=c))
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    with stream:
        pl = Plan(a, b, c, trans_a=ta, trans_b=tb)
    auto = tfn(lambda: pl.execute())
    pr = pl.problems
    parts = [timed([l]) for l in pl.launches]
    ct = []
    for cand in planner.candidates(pr[0], dev, "ieee")[:6]:
        try:
            t = timed(tune.launches_for(cand.spec, cand.params, pr, dev))
        except Exception as ex:  # noqa: BLE001 -- recorded
            t = repr(ex)[:80]
        q = cand.params
        ct.append((f"{cand.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}"
                   f"{':pack' if cand.pack else ''}", round(cand.predicted * 1e6, 1), t))
    forced = []
    g = registry.KERNELS["gemv"]
    if min(pr[0].m, pr[0].n) <= 16:
        from sgemm.kernels import schemes as S
        p0 = S.choose_gemv(pr[0])
        for s in (1, 2, 4, 8, 16):
            try:
                ls = tune.launches_for(g, p0.replace(split_k=s), pr, dev)
                t = timed(ls)
                with stream:
                    for l in ls:
                        from sgemm.runtime import launcher
                        launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr, l.args)
                stream.synchronize()
                err = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref))
                forced.append((s, t, [timed([l]) for l in ls], err))
            except Exception as ex:  # noqa: BLE001
                forced.append((s, repr(ex)[:120]))
    row = dict(m=m, n=n, k=k, ta=ta, tb=tb, aligned=pr[0].aligned, cublas_us=cub, auto_us=auto,
               plan=repr(pl), parts=parts, cands=ct, gemv_split=forced)
    rows.append(row)
    print(f"{m:5d} {n:5d} {k:6d} {'T' if ta else 'N'}{'T' if tb else 'N'} al={int(pr[0].aligned)} "
          f"cub {cub:6.1f} auto {auto:6.1f} ({cub / auto:.2f}) parts {parts} | "
          + "  ".join(f"{n_} p{p_} m{t_}" for n_, p_, t_ in ct)
          + (f" | gemv-split {[(f[0], f[1]) for f in forced]}" if forced else ""), flush=True)
    del a, b, c, ref
    cp.get_default_memory_pool().free_all_blocks()
json.dump({"device": dev.name, "rows": rows},
          open(os.path.join(os.environ.get("OUT", "/tmp"), "small-output-deepk.json"), "w"),
          indent=1)
