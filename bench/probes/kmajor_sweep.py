"""Probe: the calibration sweep (sgemm.calibrate.measure) with every menu cut
to rung 13's tiles, so its rates can be fitted without re-timing the
configs the shipped calibration already holds.  Not part of the package.

    OUT=dir python bench/probes/kmajor_sweep.py N SEED SECONDS
    python -m sgemm.calibrate --sweep DIR/kmajor-sweep.json --device h100 --out FIT.json
"""
import json
import os
import sys

from sgemm import calibrate

_menu = calibrate._menu


def kmajor_menu(prob, dev, keep=6.0):
    return [c for c in _menu(prob, dev, keep) if c.spec.name == "kmajor"]


if __name__ == "__main__":      # spawned compile workers import this file too
    n, seed, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    calibrate._menu = kmajor_menu
    data = calibrate.measure(n, seed, seconds, log=lambda s: None)
    json.dump(data, open(os.path.join(os.environ.get("OUT", "/tmp"), "kmajor-sweep.json"), "w"))
    print(f"kmajor sweep: {len(data['rows'])} problems, "
          f"{sum(len(r['cands']) for r in data['rows'])} timings")
