"""Probe, GPU: is the integer engine's result right at the large sizes?

int8-api-cost-h200-2026-11-28.json recorded, at 16384^3, sgemm.gemm(...,
precision="int8x") unequal to the pipeline run directly, and a largest
difference from cupy.matmul as large as the largest entry (max_rel 1.0),
where the H100 run of 2026-11-26 had both equal.  This probe checks each
path on its own against cupy.matmul, in a fresh process per scenario, so one
scenario's kept workspaces and pool state cannot explain another's result.

    OUT=dir python bench/probes/int8_large_check.py            # every scenario
    python bench/probes/int8_large_check.py one M N K [SIZES_BEFORE...]   # one process

A scenario: the public path (int8x, a second call, fp32) and the runner's
one-call gemm on A and B column-major N(0,1) (seeded by the
size, as int8_api_cost.py draws them), each synchronised and compared with
cupy.matmul: largest difference over the largest entry, entries off by more
than 1e-3 of it, the rows/columns those span, zeros, NaNs; warnings and
errors as text.  SIZES_BEFORE: square sizes called first through the public
path (int8_api_cost.py ran 8192 before 16384).
Writes $OUT/int8_large_check.json and prints a line per path.  (The
committed int8-large-check-h200-2026-11-29.json also has a "device.gemm"
row per scenario, "skipped": a path for a function this tree no longer has,
since removed from the probe.)
"""
import json
import os
import subprocess
import sys
import time
import warnings

os.environ["CUPY_TF32"] = "0"


def compare(got, ref) -> dict:
    import cupy as cp
    d = cp.abs(got - ref)
    top = float(cp.max(cp.abs(ref)))
    bad = d > 1e-3 * top
    rec = {"max_rel": float(cp.max(d)) / top, "bad": int(cp.count_nonzero(bad)),
           "zeros": int(cp.count_nonzero(got == 0)), "nans": int(cp.count_nonzero(cp.isnan(got)))}
    if rec["bad"]:
        rows = cp.nonzero(cp.any(bad, axis=1))[0]
        cols = cp.nonzero(cp.any(bad, axis=0))[0]
        rec.update(bad_rows=[int(rows[0]), int(rows[-1]), int(rows.size)],
                   bad_cols=[int(cols[0]), int(cols[-1]), int(cols.size)])
    return rec


def one(m: int, n: int, k: int, before) -> dict:
    import cupy as cp
    import sgemm
    from sgemm.int8x import runner as RN
    from sgemm.int8x import device as D
    for s in before:
        r = cp.random.default_rng(s)
        x = cp.asfortranarray(r.standard_normal((s, s), dtype=cp.float32))
        sgemm.gemm(x, x, precision="int8x")
        sgemm.gemm(x, x, precision="fp32")
        del x
    rng = cp.random.default_rng(max(m, n, k))
    a = cp.asfortranarray(rng.standard_normal((m, k), dtype=cp.float32))
    b = cp.asfortranarray(rng.standard_normal((k, n), dtype=cp.float32))
    ref = cp.matmul(a, b)
    paths = {"int8x": lambda: sgemm.gemm(a, b, precision="int8x"),
             "int8x again": lambda: sgemm.gemm(a, b, precision="int8x"),
             "fp32": lambda: sgemm.gemm(a, b, precision="fp32"),
             "runner.gemm": lambda: RN.gemm(b.T, a.T).T}
    out = {"m": m, "n": n, "k": k, "before": list(before),
           "keep": os.environ.get("SGEMM_INT8X_KEEP", "default"),
           "workspace_bytes": D.workspace_bytes(m, n, k)}
    for name, f in paths.items():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                got = f()
                cp.cuda.get_current_stream().synchronize()
                rec = compare(got, ref)
                del got
            except Exception as e:         # noqa: BLE001 -- recorded, the probe goes on
                rec = {"error": f"{type(e).__name__}: {e}"[:300]}
        if w:
            rec["warnings"] = [str(x.message)[:200] for x in w]
        out[name] = rec
        print(f"  {m}x{n}x{k} before={list(before)} {name:12s} {rec}", flush=True)
    return out


SCENARIOS = [
    ((16384, 16384, 16384), (), {}),
    ((16384, 16384, 16384), (8192,), {}),
    ((16384, 16384, 16384), (), {"SGEMM_INT8X_KEEP": "0"}),
    ((16384, 16384, 8192), (), {}),
    ((8192, 8192, 16384), (), {}),
    ((16384, 8192, 16384), (), {}),
    ((8192, 16384, 16384), (), {}),
    ((12288, 12288, 12288), (), {}),
    ((8192, 8192, 8192), (), {}),
]


def main(argv) -> int:
    if argv[:1] == ["one"]:
        m, n, k = (int(x) for x in argv[1:4])
        rec = one(m, n, k, [int(x) for x in argv[4:]])
        print("RESULT " + json.dumps(rec), flush=True)
        return 0
    t0 = time.time()
    res = []
    for (m, n, k), before, env in SCENARIOS:
        cmd = [sys.executable, __file__, "one", str(m), str(n), str(k), *map(str, before)]
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env},
                           timeout=300)
        line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
        rec = json.loads(line[0][7:]) if line else {"m": m, "n": n, "k": k,
                                                    "failed": (p.stdout + p.stderr)[-2000:]}
        rec["env"] = env
        res.append(rec)
        print(p.stdout.replace("RESULT ", "  raw ")[-3000:] if not line else
              "\n".join(x for x in p.stdout.splitlines() if not x.startswith("RESULT ")),
              flush=True)
    import cupy as cp
    out = {"probe": "int8_large_check", "device": cp.cuda.runtime.getDeviceProperties(0)[
        "name"].decode(), "cupy": cp.__version__, "scenarios": res,
        "seconds": time.time() - t0}
    d = os.environ.get("OUT")
    if d:
        with open(os.path.join(d, "int8_large_check.json"), "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
