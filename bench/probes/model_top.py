"""Probe (CPU, no GPU): the cost model's three best candidates on an H100,
with their predicted us, for problems given as [batch, m, n, k, ta, tb] the
way the judge calls them (contiguous C-order operands).

    python bench/probes/model_top.py '[[2657, 10, 41, 144, 0, 0], ...]' [ieee|tf32x3]
"""
import sys; sys.path.insert(0,'bench/probes')
from model_picks import canonical
from sgemm import planner
from sgemm.tune import DEVICE_MODELS
dev=DEVICE_MODELS['h100']
def show(rows, prec='ieee', n=3):
    for bt,m,n_,k,ta,tb in rows:
        r=dict(batch=bt,m=m,n=n_,k=k,ta=bool(ta),tb=bool(tb))
        cs=planner.candidates(canonical(r),dev,prec)
        s=[]
        for c in cs[:n]:
            q=c.params; p=dict(c.parts)
            s.append(f"{c.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}{':pack' if c.pack else ''} {c.predicted*1e6:.1f}")
        print(bt,m,n_,k,'T' if ta else 'N','T' if tb else 'N',' | '.join(s))
if __name__ == '__main__':
    import json
    rows=json.loads(sys.argv[1]); show(rows, sys.argv[2] if len(sys.argv)>2 else 'ieee')
