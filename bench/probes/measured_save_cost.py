"""Probe (CPU, no GPU): what one measured choice's save costs after N saved
choices, the append (sgemm.measure._save) against a rewrite of the whole
file as the cache kept it before 2026-11-27 (written out here).  The
numbers in docs/notes/first-call.md (2026-11-27).

    python bench/probes/measured_save_cost.py [N ...]      # default 0 300 3000
"""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from sgemm import measure, planner
from sgemm.problem import Problem
from sgemm.tune import DEVICE_MODELS

DEV = DEVICE_MODELS["h100"]
PROB = Problem(m=746, n=420, k=13017, ta=False, tb=False, a=1 << 40, lda=746, b=2 << 40,
               ldb=13017, c=3 << 40, ldc=746)
INFO = {"us": 123.4, "model_pick_us": 130.2, "timed": 4}


def rewrite_save(path: Path, sk, spec, params) -> None:
    """The whole-file save: read every entry, add one, write them all."""
    try:
        entries = dict(json.loads(path.read_text()).get("entries", {}))
    except (OSError, ValueError):
        entries = {}
    entries[measure._key_str(sk)] = {"key": list(sk), "kernel": spec.name,
                                     "params": params.as_dict(), **INFO}
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump({"format": 1, "gpu": "h100", "entries": entries}, f)
    os.replace(tmp, path)


def main():
    d = Path(tempfile.mkdtemp())
    c = planner.candidates(PROB, DEV, "ieee")[0]
    for n in [int(x) for x in sys.argv[1:]] or [0, 300, 3000]:
        old, new = d / f"old{n}.json", d / f"new{n}.jsonl"
        measure._path = lambda dev, new=new: new
        for i in range(n):
            key = tuple(range(8)) + (i,)
            rewrite_save(old, key, c.spec, c.params)
            measure._save(DEV, key, c.spec, c.params, INFO)
        t = time.perf_counter()
        rewrite_save(old, (9,) * 9, c.spec, c.params)
        t_old = time.perf_counter() - t
        t = time.perf_counter()
        measure._save(DEV, (9,) * 9, c.spec, c.params, INFO)
        t_new = time.perf_counter() - t
        print(f"after {n} choices: rewrite {t_old * 1e3:.2f} ms, append {t_new * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
