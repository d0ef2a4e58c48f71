"""Probe: the prototype narrowk.cu (a side of at most 32 beside a big operand
stored along k, streamed by 16-byte cp.async) against cuBLAS and sgemm's
plan, on deep-K problems of the judge's distribution.  Not part of the
package.  Each prototype run is checked against fp64 on a NaN-poisoned
output first; its error is reported over cuBLAS's.

    SEEDS=7171,8282 N=8 OUT=dir python bench/probes/narrowk_ab.py
    python bench/probes/narrowk_ab.py --cases      # boundary cases only (sanitizers)
    ncu --section ... python bench/probes/narrowk_ab.py --profile   # two rows, one run each

The class: C = op(a) op(b) with n <= 32 and a not transposed (X = a, rows
along k), or m <= 32 and b transposed (X = b; C is written transposed),
with K >= 20000 and the big side >= 400; SEEDS are this probe's own.
"""
import json
import math
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _gpu import stream, tfn  # noqa: E402

# NK_ROWS, NK_WARPS, NK_NST: rows a warp, warps a block, stages in flight
# (the recorded runs name theirs)
CHUNK = 128
ROWS = int(os.environ.get("NK_ROWS", "4"))
WARPS, NST = int(os.environ.get("NK_WARPS", "8")), int(os.environ.get("NK_NST", "4"))
SIDES = (8, 16, 24, 32)
_mod = {}


def _b(x: bool) -> str:
    return "true" if x else "false"


def smem_bytes(S: int) -> int:
    """The stages of X (the block's rows) and Y (S columns), 128 k each."""
    return 4 * NST * (WARPS * ROWS * CHUNK + S * CHUNK)


def kernels(S: int, yk: bool, al: bool):
    """The main kernel for (S, yk, al) and the reduction, compiled on first
    use (one module each: compiling every instantiation up front takes
    NVRTC tens of seconds)."""
    name = f"narrowk_main<{S}, {ROWS}, {WARPS}, {NST}, {_b(yk)}, {_b(al)}>"
    if name not in _mod:
        src = open(os.path.join(HERE, "narrowk.cu")).read()
        _mod[name] = cp.RawModule(code=src, options=("--std=c++17",),
                                  name_expressions=[name, "narrowk_reduce"])
    mod = _mod[name]
    main = mod.get_function(name)
    smem = smem_bytes(S)
    main.max_dynamic_shared_size_bytes = smem
    return main, mod.get_function("narrowk_reduce"), smem


def in_class(p) -> bool:
    return (p["n"] <= 32 and not p["ta"]) or (p["m"] <= 32 and p["tb"])


def layout(p, a, b):
    """(X, ldx, Y, ldy, yk, R, Sreal, trans) for a problem of the class."""
    m, n, ta, tb = p["m"], p["n"], p["ta"], p["tb"]
    if n <= 32 and not ta:          # X = a (m, K); Y = op(b)
        return a, a.shape[1], b, b.shape[1], bool(tb), m, n, False
    return b, b.shape[1], a, a.shape[1], not ta, n, m, True   # X = b (n, K); C transposed


def splits_for(R: int, K: int, sms: int) -> int:
    """Enough blocks for a wave, slices no longer than 32768 (a lane's
    chain 1024 deep, planner.ACC_SLICE_SKINNY)."""
    bx = -(-R // (WARPS * ROWS))
    return max(-(-sms // bx), -(-K // 32768), 1)


def wave_splits(R: int, K: int, sms: int, per_sm: int) -> list:
    """Split counts up to 64 whose blocks fill their last wave to 90 % or
    more (NK_SPLITS=wave), at most four, fewest first."""
    bx, slots = -(-R // (WARPS * ROWS)), sms * per_sm
    out = [s for s in range(1, 65) if K >= s * CHUNK
           and (bx * s) - (bx * s - 1) // slots * slots >= 0.9 * slots]
    return out[:4]


def run(p, a, b, c, splits: int):
    """(launch callable, splits used) for the prototype on one problem."""
    X, ldx, Y, ldy, yk, R, Sr, trans = layout(p, a, b)
    S = next(s for s in SIDES if s >= Sr)
    al = ldx % 4 == 0 and X.data.ptr % 16 == 0 and (not yk or (ldy % 4 == 0
                                                               and Y.data.ptr % 16 == 0))
    main, red, smem = kernels(S, yk, al)
    K = p["k"]
    kslice = -(-(-(-K // splits)) // CHUNK) * CHUNK
    splits = -(-K // kslice)
    P = cp.empty(splits * R * Sr, cp.float32)
    grid = (-(-R // (WARPS * ROWS)), splits, 1)
    n = R * Sr
    args_main = (cp.int32(R), cp.int32(K), cp.int32(Sr), cp.int32(kslice), X, cp.int64(ldx),
                 Y, cp.int64(ldy), P)
    args_red = (cp.int32(R), cp.int32(Sr), cp.int32(splits), P, c, cp.int64(c.shape[1]),
                cp.int32(trans))

    def go():            # on the current stream: callers run it inside `with stream`
        main(grid, (WARPS * 32,), args_main, shared_mem=smem)
        red(((n + 255) // 256,), (256,), args_red)
    return go, splits


def poisoned_error(go, c, ref, nr) -> float:
    """Relative error of one run of ``go`` on a NaN-filled c against fp64."""
    with stream:
        c.fill(cp.nan)
        go()
    stream.synchronize()
    return float(cp.linalg.norm(c - ref)) / nr


def problem(p):
    """Operands as the judge builds them (C-order), fp64 reference, cuBLAS."""
    m, n, k, ta, tb = p["m"], p["n"], p["k"], p["ta"], p["tb"]
    a = cp.random.standard_normal((k, m) if ta else (m, k), dtype=cp.float32)
    b = cp.random.standard_normal((n, k) if tb else (k, n), dtype=cp.float32)
    A, B = (a.T if ta else a), (b.T if tb else b)
    c = cp.empty((m, n), cp.float32)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    return a, b, A, B, c, ref, float(cp.linalg.norm(ref))


def row(p, sms: int) -> dict:
    import sgemm
    a, b, A, B, c, ref, nr = problem(p)
    cub = tfn(lambda: cp.matmul(A, B, out=c))
    cerr = float(cp.linalg.norm(c - ref)) / nr
    auto = tfn(lambda: sgemm.gemm(a, b, c, trans_a=bool(p["ta"]), trans_b=bool(p["tb"])))
    X, _, _, _, _, R, _, _ = layout(p, a, b)
    first = splits_for(R, p["k"], sms)
    tried = {first, 2 * first, max(1, first // 2)}
    if os.environ.get("NK_SPLITS") == "wave":       # blocks per SM from the smem per block
        S = next(s for s in SIDES if s >= min(p["m"], p["n"]))
        per_sm = max(1, 227 * 1024 // smem_bytes(S))
        tried |= set(wave_splits(R, p["k"], sms, per_sm))
    out = []
    for s in sorted(tried):
        go, used = run(p, a, b, c, s)
        err = poisoned_error(go, c, ref, nr)
        out.append(dict(splits=used, us=tfn(go), err_vs_cublas=round(err / cerr, 3),
                        first=s == first))
    gb = (X.size + p["k"] * min(p["m"], p["n"])) * 4 / 1e9
    return dict(p, cublas_us=cub, auto_us=auto, gbytes=gb, proto=out)


def cases():
    """Boundary shapes (odd R and S, K off the chunk and off 4, pitched X)
    against fp64: for compute-sanitizer."""
    worst = 0.0
    for m, n, k, ta, tb in [(37, 23, 1002, 0, 0), (37, 23, 1002, 0, 1), (5, 70, 333, 0, 1),
                            (5, 70, 333, 1, 1), (129, 32, 4096, 0, 1), (33, 1, 129, 0, 0),
                            (64, 17, 1000, 0, 0), (9, 300, 2048, 1, 1)]:
        p = dict(m=m, n=n, k=k, ta=bool(ta), tb=bool(tb))
        a, b, A, B, c, ref, nr = problem(p)
        for s in (1, 3):
            e = poisoned_error(run(p, a, b, c, s)[0], c, ref, nr)
            worst = max(worst, e)
            print(f"case {m}x{n}x{k} {'NT'[ta]}{'NT'[tb]} splits {s}: rel err {e:.2e}")
    print(f"worst rel err {worst:.2e}")
    assert worst < 1e-5, worst


def profile():
    """One run of the prototype on each of two rows of the A/B (an NT row
    with 16-byte copies, an NN row whose Y is transposed by 4-byte copies),
    at the split count chosen up front: for ncu."""
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for m, n, k, ta, tb in [(683, 23, 256740, 0, 1), (630, 26, 37605, 0, 0)]:
        p = dict(m=m, n=n, k=k, ta=bool(ta), tb=bool(tb))
        a, b, A, B, c, ref, nr = problem(p)
        go, s = run(p, a, b, c, splits_for(layout(p, a, b)[5], k, sms))
        e = poisoned_error(go, c, ref, nr)
        print(f"profile {m}x{n}x{k} {'NT'[ta]}{'NT'[tb]} splits {s}: rel err {e:.2e}")


def main():
    if "--cases" in sys.argv:
        cases()
        return
    if "--profile" in sys.argv:
        profile()
        return
    from _draw import judge_draws
    keep = lambda p: p["k"] >= 20000 and max(p["m"], p["n"]) >= 400 and in_class(p)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    n = int(os.environ.get("N", "8"))
    out = {}
    for seed in map(int, os.environ.get("SEEDS", "7171,8282").split(",")):
        tag = f"seed {seed}"
        rows = []
        for p in judge_draws("deep-k", n, seed, keep):
            r = row(p, sms)
            rows.append(r)
            best = min(r["proto"], key=lambda x: x["us"])
            first = next(x for x in r["proto"] if x["first"])
            print(f"{tag} {p['m']}x{p['n']}x{p['k']} {'NT'[p['ta']]}{'NT'[p['tb']]} "
                  f"cuBLAS {r['cublas_us']:.1f} sgemm {r['auto_us']:.1f} proto {first['us']:.1f} "
                  f"(best {best['us']:.1f} at s{best['splits']}, err/cuBLAS "
                  f"{first['err_vs_cublas']}) {r['gbytes'] / first['us'] * 1e3:.2f} TB/s",
                  flush=True)
            cp.get_default_memory_pool().free_all_blocks()
        out[tag] = rows
        g = lambda key: math.exp(sum(math.log(r["cublas_us"] / key(r)) for r in rows) / len(rows))
        print(f"{tag}: cuBLAS / sgemm {g(lambda r: r['auto_us']):.3f}, cuBLAS / prototype "
              f"{g(lambda r: next(x for x in r['proto'] if x['first'])['us']):.3f}", flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "narrowk-ab.json"), "w") as f:
        json.dump(dict(device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                       rows_per_warp=ROWS, warps=WARPS, stages=NST, rows=out), f, indent=1)


if __name__ == "__main__":
    main()
