"""Probe: do NVRTC / ptxas options the compiler does not pass move rung 9's
rate?  Each variant runs in its own process with its own kernel cache
(cuda.core's ProgramOptions wrapped to add the options; SGEMM_DEFINES set so
no prebuilt kernel is used), the model's plans (measured choice off) on a
few large problems, timed against cuBLAS in the same process, variants
alternating over rounds.  Not part of the package.

Why: on large layers the planner's plan is within a few percent of the
best rung-9 candidate (wave-splits-h200-2026-11-29.json) and rung 9 runs
at 0.90-0.94 of cuBLAS; ncu put the gap in issue-idle cycles
(docs/notes/ffma-fast.md), which is code generation.  No option had been
tried.

    OUT=dir python bench/probes/ptxas_options.py [ROUNDS]
"""
import json
import os
import subprocess
import sys
import tempfile

VARIANTS = {
    "base": {},
    "dlcm_cg": {"ptxas_options": ["-dlcm=cg"]},
    "vectorize": {"extra_device_vectorization": True},
    "maxrreg255": {"max_register_count": 255},
}
SHAPES = [(4096, 4096, 4096, 0, 0), (8192, 4096, 1024, 0, 1), (4096, 4096, 4096, 0, 1),
          (923, 354, 119973, 0, 0), (768, 3072, 8192, 1, 0)]


def child(name: str) -> None:
    import cuda.core as cc
    opts = VARIANTS[name]
    orig = cc.ProgramOptions

    def patched(*a, **kw):
        for key, v in opts.items():
            kw[key] = list(kw.get(key) or []) + v if key == "ptxas_options" else v
        return orig(*a, **kw)
    cc.ProgramOptions = patched
    os.environ.setdefault("CUPY_TF32", "0")
    import cupy as cp
    import sgemm
    from sgemm.plan import Plan
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _gpu import tfn
    from cublas_kernels import operands
    rows = []
    for m, n, k, ta, tb in SHAPES:
        a, b, A, B = operands(cp, 1, m, n, k, ta, tb)
        c = cp.empty((m, n), cp.float32)
        ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
        c.fill(cp.nan)
        sgemm.gemm(a, b, c, trans_a=bool(ta), trans_b=bool(tb))
        err = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref))
        ours = tfn(lambda: sgemm.gemm(a, b, c, trans_a=bool(ta), trans_b=bool(tb)))
        cub = tfn(lambda: cp.matmul(A, B, out=c))
        pl = Plan(a, b, c, trans_a=bool(ta), trans_b=bool(tb))
        rows.append(dict(m=m, n=n, k=k, ta=ta, tb=tb, us=ours, cublas_us=cub, err=err,
                         plan=repr(pl)[:160]))
        cp.get_default_memory_pool().free_all_blocks()
    print(json.dumps(rows))


def main(rounds: int) -> None:
    caches = {v: tempfile.mkdtemp(prefix=f"ptxas-{v}-") for v in VARIANTS}
    out = {v: [] for v in VARIANTS}
    for r in range(rounds):
        for v in VARIANTS:
            env = dict(os.environ, SGEMM_CACHE_DIR=caches[v], SGEMM_AUTOTUNE="0",
                       SGEMM_DEFINES=f"SG_PROBE_VARIANT_{v}")
            p = subprocess.run([sys.executable, __file__, "--child", v], env=env,
                               capture_output=True, text=True)
            if p.returncode:
                print(v, "failed:", p.stderr[-2000:], flush=True)
                continue
            rows = json.loads(p.stdout.strip().splitlines()[-1])
            out[v].append(rows)
            print(r, v, " ".join(f"{x['m']}x{x['n']}x{x['k']}:{x['cublas_us'] / x['us']:.3f}"
                                 for x in rows), flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "ptxas-options.json"), "w") as f:
        json.dump(dict(variants={k: str(v) for k, v in VARIANTS.items()}, runs=out), f, indent=1)
    # per shape: each variant's best-round time over base's
    for i, (m, n, k, ta, tb) in enumerate(SHAPES):
        base = min(run[i]["us"] for run in out["base"]) if out["base"] else None
        line = [f"{m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'}"]
        for v in VARIANTS:
            if out[v] and base:
                line.append(f"{v} {base / min(run[i]['us'] for run in out[v]):.3f}")
        print("  ".join(line))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
