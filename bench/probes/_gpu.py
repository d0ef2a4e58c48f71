"""What the GPU probes share (not part of the package): a stream, event
timing of a callable on it, the problem operands as the judge builds them
(C-order, op() by a transposed view) and the log-uniform draw.  Probes run
as scripts from this directory, so ``import _gpu`` finds it."""
import math

import cupy as cp

stream = cp.cuda.Stream(non_blocking=True)
_e0, _e1 = cp.cuda.Event(), cp.cuda.Event()


def tfn(f, reps=10):
    """Median of five batches of ``reps`` calls of f on ``stream``, us per call
    (two warm-up calls first)."""
    with stream:
        f()
        f()
        ts = []
        for _ in range(5):
            _e0.record(stream)
            for _ in range(reps):
                f()
            _e1.record(stream)
            _e1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(_e0, _e1) / reps)
    return sorted(ts)[2] * 1e3


def alone(f, n=7, warm=2):
    """Median ms of one call of f alone between two events on ``stream``
    (``warm`` warm-up calls first; the stream drained before each)."""
    ts = []
    with stream:
        for _ in range(warm):
            f()
        for _ in range(n):
            stream.synchronize()
            _e0.record(stream)
            f()
            _e1.record(stream)
            _e1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(_e0, _e1))
    return sorted(ts)[n // 2]


def checked_time(launches, c, ref, nr):
    """(relative error against ref, us per execution) of a launch list: run
    once on a NaN-poisoned c, checked against the fp64 reference (nr its
    norm), then timed as the tuner times candidates (sgemm.tune)."""
    from sgemm import tune
    from sgemm.runtime import launcher
    with stream:
        c.fill(cp.nan)
        for l in launches:
            launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr, l.args)
    stream.synchronize()
    err = float(cp.linalg.norm(c - ref)) / nr
    return err, tune.time_launches(launches, stream, reps=5, target_ms=0.5) * 1e3


def operands(m, n, k, ta, tb):
    """(a, b, c, A, B): a and b stored C-order as the call passes them, A and
    B the products' op(a), op(b), c an empty m x n output."""
    a = cp.random.standard_normal((k, m) if ta else (m, k), dtype=cp.float32)
    b = cp.random.standard_normal((n, k) if tb else (k, n), dtype=cp.float32)
    c = cp.empty((m, n), cp.float32)
    return a, b, c, (a.T if ta else a), (b.T if tb else b)


def loguni(r):
    """lu(lo, hi): an integer log-uniform in [lo, hi] from random.Random r."""
    return lambda lo, hi: int(round(math.exp(r.uniform(math.log(lo), math.log(hi)))))


def plan_row(p: dict) -> dict:
    """One judge problem (dict m, n, k, ta, tb, optional batch) set up for
    forcing plans: its operands, C, the fp64 reference and its norm, cuBLAS's
    time and error (``cub``, ``cerr``), sgemm's eager time (``auto``: gemm,
    or gemm_batched for a batch) and the Plan."""
    import sgemm
    from cublas_kernels import operands as judge_operands
    from sgemm.plan import Plan
    m, n, k, ta, tb = p["m"], p["n"], p["k"], bool(p["ta"]), bool(p["tb"])
    bt = p.get("batch", 1)
    a, b, A, B = judge_operands(cp, bt, m, n, k, ta, tb)
    c = cp.empty(((bt,) if bt > 1 else ()) + (m, n), cp.float32)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    nr = float(cp.linalg.norm(ref))
    cub = tfn(lambda: cp.matmul(A, B, out=c))
    cerr = float(cp.linalg.norm(c - ref)) / nr
    call = sgemm.gemm_batched if bt > 1 else sgemm.gemm
    auto = tfn(lambda: call(a, b, c, trans_a=ta, trans_b=tb))
    kind = dict(_ndims=(3,), _what="gemm_batched") if bt > 1 else {}
    return dict(c=c, ref=ref, nr=nr, cub=cub, cerr=cerr, auto=auto,
                plan=Plan(a, b, c, trans_a=ta, trans_b=tb, **kind))


def time_forced(row: dict, tried, dev) -> list:
    """Each (label, spec, params, prediction or None) of ``tried`` forced on
    the row's problem and timed by checked_time; the error is relative to
    cuBLAS's.  A candidate that fails is recorded with its error message."""
    from sgemm.tune import launches_for
    prob, out = row["plan"].problems[0], []
    for lab, spec, q, pred in tried:
        try:
            err, t = checked_time(launches_for(spec, q, [prob], dev), row["c"], row["ref"],
                                  row["nr"])
        except Exception as ex:  # noqa: BLE001 -- recorded, the probe goes on
            out.append(dict(c=lab, error=str(ex)[:160]))
            continue
        rec = dict(c=lab, us=round(t, 1), err=round(err / row["cerr"], 2))
        if pred is not None:
            rec["pred"] = pred
        out.append(rec)
    return out


def run_rows(problems, row, line, filename: str) -> None:
    """row(dev, p) for each problem, a printed line(p, record) each, and
    $OUT/filename rewritten after every row (a cut-off run keeps its rows)."""
    import json
    import os
    from sgemm.runtime import device as devmod
    dev = devmod.info(0)
    out = []
    for p in problems:
        rec = row(dev, p)
        out.append(rec)
        print(line(p, rec), flush=True)
        cp.get_default_memory_pool().free_all_blocks()
        with open(os.path.join(os.environ.get("OUT", "."), filename), "w") as f:
            json.dump(dict(device=dev.name, rows=out), f, indent=1)
