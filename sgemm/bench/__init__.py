"""Benchmark and inspection tools behind ``sgemm bench|info|profile|plot|results``.

Modules (small on purpose, one job each):
    sizes          parse --sizes lists/ranges and --shapes files
    harness        inputs, reference check, timing (events, rotation, graphs)
    runners        what can be timed: ladder kernels, cuBLAS, Triton, NumPy
    bench          the ``sgemm bench`` driver (progress, incremental JSON)
    schema         the results-JSON format and ``validate(doc)``
    report         text and Markdown tables from a results document
    plots          PNG figures from a results document (matplotlib, Agg)
    readme         rewrite tables between ``<!-- sgemm:... -->`` markers
    info           device facts, peak arithmetic, measured ceilings
    profile        ``sgemm profile``: Nsight Compute metrics table
    profile_target the tiny program ncu runs
    triton_ref     a Triton FP32 matmul used as a second reference
    eager          host cost per call of the entry points
    claims         every claim of the README and docs, its files and command;
                   ``sgemm results`` regenerates the tables and the index
    sanitize       ``python -m sgemm.bench.sanitize``: compute-sanitizer runs
    resources      ``python -m sgemm.bench.resources``: docs/kernel-resources.md

Nothing here imports CuPy, Triton or matplotlib at import time: the CPU test
suite and ``sgemm plot`` work on machines without a GPU.
"""
