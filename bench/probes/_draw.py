"""What the CPU-side probes share for drawing problems (not part of the
package): the judge's own draw() (.judge/judge.py, a copy of
../shared/tools/judge.py) under a probe's seed, filtered."""
import os
import random
import sys

JUDGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".judge")


def judge_draws(cat: str, n: int, seed: int, keep=lambda p: True) -> list:
    """n problems of one category of the judge's distribution that fit its
    limits and that ``keep`` accepts, drawn with ``seed``."""
    sys.path.insert(0, JUDGE_DIR)
    import judge
    r, out = random.Random(seed), []
    while len(out) < n:
        p = judge.draw(r, cat)
        if judge.fits(p) and keep(p):
            out.append(p)
    return out
