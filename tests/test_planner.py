"""The cost model, the calibration fit and the planner, on the CPU: what
must hold whatever the calibration says."""
from __future__ import annotations

import math

import pytest

from sgemm import calibrate, cost, planner
from sgemm.kernels import registry

from test_dispatch import A100, H100, prob  # noqa: E402  (tests/ is on sys.path, rootdir-style)


@pytest.mark.parametrize("m,n,k", [(128, 128, 131072), (17, 27, 135224), (300, 200, 50000),
                                   (2048, 256, 16384)])
def test_deep_k_is_split_within_the_accuracy_cap(m, n, k):
    for prec in ("ieee", "tf32x3"):
        c = planner.candidates(prob(m, n, k), H100, prec)[0]
        kslice = cost.geometry(c.spec, c.params, prob(m, n, k))[1]
        assert kslice <= planner.acc_slice(prob(m, n, k), H100), c.describe()


@pytest.mark.parametrize("m,n,k", [(4096, 4096, 4096), (1, 4096, 4096), (35, 79, 19),
                                   (20480, 32, 5120)])
def test_precisions_keep_their_contract(m, n, k):
    for prec, allowed in (("ieee", {"ieee"}), ("tf32x3", {"ieee", "tf32x3"}), ("tf32", {"tf32"})):
        for c in planner.candidates(prob(m, n, k), H100, prec):
            assert c.spec.precision in allowed, (prec, c.describe())


def test_tf32x3_takes_tensor_cores_on_large_problems():
    c = planner.candidates(prob(4096, 4096, 4096), H100, "tf32x3")[0]
    assert c.spec.precision == "tf32x3", c.describe()


def test_uncalibrated_gpu_still_plans():
    """An A100 has no calibration of its own: the shipped one's fractions of
    peak carry over, and no sm_90-only kernel is offered."""
    cs = planner.candidates(prob(1000, 1000, 1000), A100, "ieee")
    assert cs and all(A100.arch in c.spec.archs for c in cs)


def test_predictions_grow_with_work():
    spec = registry.KERNELS["double_buffer"]
    p = spec.configs["large"]
    cal = cost.calibration(H100)
    t = [cost.predict(spec, p, prob(4096, 4096, k), H100, cal)["gpu"] for k in (256, 1024, 4096)]
    assert t[0] < t[1] < t[2]


def test_fit_recovers_a_known_rate():
    """Synthetic sweep rows made by the model from a known rate: the grid
    search finds it (to the grid's step)."""
    spec = registry.KERNELS["tile"]
    true = cost.Rate(peak_frac=0.4, q_sat=2, t0=3e-6)
    cal = cost.Calibration(H100.name, cost.Machine(), {}, H100.clock_khz)
    rows = []
    for i, (m, n, k) in enumerate([(256, 256, 4096), (1024, 1024, 1024), (4096, 512, 2048),
                                   (128, 128, 8192), (2048, 2048, 256), (640, 320, 640)]):
        canon = dict(m=m, n=n, k=k, batch=1, ta=False, tb=False, aligned=True)
        pr = calibrate.problem_of(canon)
        cands = {}
        for name in ("medium",):
            q = spec.configs.get(name) or __import__("sgemm.kernels.schemes", fromlist=["x"]).TILE_CONFIGS[name]
            cal.rates[cost.config_key(spec, q, pr)] = true
            t = cost.predict(spec, q, pr, H100, cal)["gpu"]
            cands[name] = {"kernel": "tile", "params": q.as_dict(), "gpu_ms": t * 1e3}
        rows.append({"canon": canon, "cands": cands})
    fitted, errs = calibrate.fit(rows, H100)
    (key, r), = fitted.rates.items()
    assert math.isclose(r.peak_frac, 0.4, rel_tol=0.1) and errs[key] < 0.05, (r, errs)


def test_unaligned_occupancy_line():
    """occ_u1 draws a line from occ_u1 x F at one block an SM to F at full
    residency, on unaligned problems only; without it the knee applies."""
    r = cost.Rate(peak_frac=0.5, q_sat=1.25, occ_u1=0.7)
    assert [r.occupancy_u(q, 3) for q in (1, 2, 3, 4)] == pytest.approx([0.7, 0.85, 1.0, 1.0])
    assert r.occupancy_u(1, 1) == 1.0                   # one block resident: it is full
    assert cost.waves(700, 3, 132) == [(3, 1), (3, 1)] and cost.waves(0, 3, 132) == []
    assert cost.waves(200, 3, 132) == [(2, 1)] and cost.waves(396, 3, 132) == [(3, 1)]


def test_unaligned_occupancy_moves_only_unaligned_predictions():
    spec = registry.KERNELS["double_buffer"]
    p = spec.configs["rect"]
    cal = cost.calibration(H100)
    key = cost.config_key(spec, p, prob(256, 300, 4096))
    assert cal.rates[key].occ_u1, "the shipped calibration carries rung 9's line"
    plain = cost.Calibration(cal.gpu, cal.machine, {
        **cal.rates, key: cost.Rate(**{**cal.rates[key].as_dict(), "occ_u1": 0.0})},
        cal.clock_khz, "test")
    aligned = prob(256, 320, 4096)                 # one wave of 40 blocks: q = 1
    unaligned = calibrate.problem_of(dict(m=256, n=300, k=4096, batch=1, ta=False, tb=False,
                                          aligned=False))
    assert not spec.aligned_for(unaligned) and spec.aligned_for(aligned)
    t = {name: [cost.predict(spec, p, pr, H100, c)["compute"] for c in (cal, plain)]
         for name, pr in (("aligned", aligned), ("unaligned", unaligned))}
    assert t["aligned"][0] == t["aligned"][1]
    assert t["unaligned"][0] > t["unaligned"][1]   # 0.75 of F alone, where the knee says 0.8


def test_resident_is_remembered_per_device():
    """resident() answers from its memo only for the same kernel, params and
    device: a device model with less shared memory gets its own count."""
    import dataclasses
    spec = registry.KERNELS["double_buffer"]
    p = spec.configs["rect"]
    small = dataclasses.replace(H100, smem_per_sm=64 * 1024)
    assert cost.resident(spec, p, H100) == cost.resident(spec, p, H100) == 3
    assert cost.resident(spec, p, small) == 2 < cost.resident(spec, p, H100)
    assert cost.resident(spec, p, H100, regs=96) == 5      # given registers: not the memo


def test_alignment_of_every_operand_row():
    import dataclasses
    pr = prob(128, 128, 128)
    assert pr.aligned
    for kw in (dict(a=pr.a + 4), dict(c=pr.c + 8), dict(ldb=pr.ldb + 2),
               dict(batch=2, stride_a=4, stride_b=6, stride_c=8)):
        assert not dataclasses.replace(pr, **kw).aligned, kw
    assert dataclasses.replace(pr, batch=2, stride_a=-8, stride_b=0, stride_c=4).aligned


def test_calibration_json_keeps_the_line_and_omits_it_when_unset():
    cal = cost.calibration(H100)
    back = cost.Calibration.from_json(cal.to_json(), "round trip")
    assert back.rates == cal.rates
    doc = cal.to_json()["rates"]
    assert any("occ_u1" in v for v in doc.values())
    assert all("occ_u1" not in v for k, v in doc.items() if not cal.rates[k].occ_u1)


def test_shipped_calibration_loads():
    cal = cost.calibration(H100)
    assert cal.rates and cal.source.endswith(".json")
    assert all(0 < r.peak_frac <= 3 for r in cal.rates.values())


def test_explain_lists_the_models_candidates(monkeypatch):
    from sgemm import dispatch
    monkeypatch.setenv("SGEMM_TUNED", "0")
    dispatch.forget_tables()
    ex = dispatch.explain(prob(3000, 70, 20000), H100, "ieee", top=5)
    assert ex["source"] == "model" and len(ex["candidates"]) == 5
    times = [c["predicted_us"] for c in ex["candidates"]]
    assert times == sorted(times)
    first = ex["candidates"][0]
    assert (first["kernel"], first["params"]) == (ex["kernel"], ex["params"])


@pytest.mark.parametrize("m,n,k", [(4096, 5120, 20480), (5120, 4096, 20480), (8192, 4096, 16384)])
def test_split_workspace_fits_the_cap(m, n, k):
    """The split's workspace as the launches allocate it (slices rounded to
    BK, a short last slice, m padded to 4) stays under the cap: 4096x5120x
    20480 in tf32x3 once asked for 587 MB and raised."""
    from sgemm import launches
    for prec in ("ieee", "tf32x3"):
        for c in planner.candidates(prob(m, n, k), H100, prec):
            if cost.two_launch_split(c.spec, c.params):
                g = launches.splitk_geometry(prob(m, n, k), c.params)
                assert 4 * g["floats"] <= cost.WORKSPACE_MAX_BYTES, c.describe()


def test_outputs_that_do_not_fill_the_gpu_keep_chains_short():
    """32x16384x4096 (128 tiles of 128x128 on 132 SMs) in one 4096-deep
    chain measured 2.6x cuBLAS's error on the H100, and 8x32000x8192 in
    4096-deep slices 2.1x: outputs with few tiles keep chains <= 1024, and
    so do those with 64 or fewer rows or columns; every candidate, not the
    model's first alone, since the measured choice may take any of them."""
    for p, limit in ((prob(16384, 32, 4096), planner.ACC_SLICE_SKINNY),
                     (prob(32, 16384, 4096), planner.ACC_SLICE_SKINNY),
                     (prob(32000, 8, 8192), planner.ACC_SLICE_SKINNY),
                     (prob(640, 700, 8192), planner.ACC_SLICE_SMALL)):
        assert planner.acc_slice(p, H100) == limit
        for prec in ("ieee", "tf32x3"):
            for c in planner.candidates(p, H100, prec):
                assert planner._chain(c.spec, c.params, p) <= limit, c.describe()
    assert planner.acc_slice(prob(4096, 4096, 4096), H100) == planner.ACC_SLICE


def test_large_outputs_limit_ffma_chains_not_tensor_core_ones():
    """On outputs that fill the GPU, FFMA chains stay <= ACC_SLICE (2560:
    ~9.1e-7 on N(0,1) data), tensor-core ones <= ACC_SLICE_TC (4096: they
    round once per k-step of 8); the limit is the candidate kernel's, so an
    FFMA plan under precision="tf32x3" has the FFMA one."""
    p = prob(4096, 4096, 4096)
    assert planner.acc_slice(p, H100, "tf32x3") == planner.ACC_SLICE_TC > planner.ACC_SLICE
    for prec in ("ieee", "tf32x3"):
        for c in planner.candidates(p, H100, prec):
            engine = c.spec.precision
            chain = planner._chain(c.spec, c.params, p)
            assert chain <= planner.acc_slice(p, H100, engine), c.describe()
    ieee = planner.candidates(p, H100, "ieee")[0]
    assert ieee.params.split_k >= 2
    assert planner._chain(ieee.spec, ieee.params, p) <= planner.ACC_SLICE
    tc = planner.candidates(p, H100, "tf32x3")[0]
    assert tc.spec.precision == "tf32x3" and tc.params.split_k == 1       # 4096 deep: allowed


def test_narrow_chains_are_the_slice_over_its_k_groups():
    from sgemm.kernels import schemes
    by_groups = {}
    for q in schemes.NARROW_CONFIGS.values():
        by_groups.setdefault(q.threads // max(q.BM, q.BN), q)
    assert sorted(by_groups) == [1, 2, 4]
    for kg, q in by_groups.items():
        assert schemes.narrow_chain(q, 4096) == 4096 // kg + kg - 1
    # the planner weighs a narrow plan by that chain: with four k-groups a
    # 1024-deep limit admits slices up to 4 x 1021 deep
    p = prob(365, 21, 146465)
    four = by_groups[4]
    assert planner._chain(schemes.NARROW, four.replace(split_k=36), p) <= planner.acc_slice(p, H100)


def test_gemv_chains_are_the_slice_over_its_parallel_parts():
    from sgemm.kernels import schemes
    kcont = prob(50257, 2, 5120, ta=True)          # small n, A read along k
    rcont = prob(50257, 2, 5120, ta=False)         # small n, A read along rows
    assert not schemes.x_rows_contiguous(kcont) and schemes.x_rows_contiguous(rcont)
    p = schemes.choose_gemv(kcont)
    assert schemes.gemv_chain(kcont, p, 5120) == 160
    q = schemes.choose_gemv(rcont)
    assert schemes.gemv_chain(rcont, q, 5120) == math.ceil(5120 / (q.threads // 32))
    # so a 5120-deep GEMV is not forced into a split by the 4096 cap
    c = planner.candidates(kcont, H100, "ieee")[0]
    assert c.spec.extra.get("scheme") == "gemv", c.describe()


def test_gemv_blocks_cover_the_small_side_tightly():
    from sgemm.kernels import schemes
    for small, s in ((1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, 16), (16, 16)):
        p = schemes.choose_gemv(prob(4096, small, 4096, ta=True))
        assert p.BN == s and not schemes.gemv_rules(p), (small, p)


def test_gemv_64_row_strip_is_built_for_its_k_contiguous_layouts_only():
    """The 64-row strip is compiled (bundle, CI's spill check) only in the
    layouts choose_gemv gives it: the big operand along k."""
    from sgemm.kernels import schemes
    spec = registry.get("gemv")
    ka = [(p, ta, tb) for c, p, ta, tb, _ in spec.instantiations() if c.endswith("8ka")]
    assert len(ka) == 8, ka
    for p, ta, tb in ka:
        small_m = p.BM == 8
        pr = prob(6, 4096, 4096, ta=ta, tb=tb) if small_m else prob(4096, 6, 4096, ta=ta, tb=tb)
        assert not schemes.x_rows_contiguous(pr), (p, ta, tb)
    assert sum(1 for c, *_ in spec.instantiations() if c == "n8k") == 8   # the others: all


def test_gemv_aligned_eight_along_k_takes_the_64_row_strip():
    """S = 8 with X along k: the float4 loop (16-byte rows) gets the 64-row
    strip, the scalar loop keeps 32 rows; the row-contiguous loop is not
    affected."""
    from sgemm.kernels import schemes
    for small_m in (False, True):
        def p_(aligned, ta=True):
            return (prob(6, 4096, 4096, tb=not ta, aligned=aligned) if small_m else
                    prob(4096, 6, 4096, ta=ta, aligned=aligned))
        strip = (lambda q: q.BN) if small_m else (lambda q: q.BM)
        assert not schemes.x_rows_contiguous(p_(True))
        assert strip(schemes.choose_gemv(p_(True))) == 64
        assert strip(schemes.choose_gemv(p_(False))) == 32
        assert strip(schemes.choose_gemv(p_(True, ta=False))) == 32   # rows contiguous
        for q in (schemes.choose_gemv(p_(True)), schemes.choose_gemv(p_(False))):
            assert not schemes.gemv_rules(q), q
        # the planner weighs both strips where the 64-row one applies, one elsewhere
        assert [strip(q) for q in schemes.gemv_configs(p_(True))] == [64, 32]
        assert [strip(q) for q in schemes.gemv_configs(p_(False))] == [32]
        gemv = {(c.params.BM, c.params.BN) for c in planner.candidates(p_(True), H100, "ieee",
                                                                       everything=True)
                if c.spec.name == "gemv"}
        assert len(gemv) == 2, gemv


@pytest.mark.parametrize("kernel,config,launches", [("tile", "large", 3),
                                                     ("double_buffer", "medium", 2),
                                                     ("kmajor", "k128x64", 2)])
def test_a_shorter_last_slice_in_the_model(kernel, config, launches):
    """A shorter last slice costs compute either way; it is one more launch
    for the tile kernel and rides in the full slices' launch for rung 9
    (extra["ragged"])."""
    spec = registry.get(kernel)
    p = spec.configs[config]
    even, odd = prob(256, 256, 64 * 1024), prob(256, 256, 64 * 1024 + 5)
    cal = cost.calibration(H100)
    d_even = cost.predict(spec, p.replace(split_k=64), even, H100, cal)
    d_odd = cost.predict(spec, p.replace(split_k=64), odd, H100, cal)
    assert d_even["launches"] == 2 and d_odd["launches"] == launches
    if launches == 3:       # a wave of its own after the full slices
        assert d_odd["compute"] > d_even["compute"]
    else:                   # 4 more blocks join the 256 of the full slices' one wave
        assert d_odd["compute"] == d_even["compute"]


def test_a_split_deeper_than_k_predicts_one_short_launch():
    """K below one slice unit leaves no full slice (split_slices gives 0 full
    and the whole K as the remainder): the model must not divide by it."""
    spec = registry.get("double_buffer")
    d = cost.predict(spec, spec.configs["medium"].replace(split_k=2), prob(64, 64, 7), H100,
                     cost.calibration(H100))
    assert d["total"] > 0 and d["launches"] == 2 and d["kslice"] == 7


def test_an_unreachable_chain_limit_keeps_the_shortest_chains():
    """48x968x300000: 256 slices are 1172 deep, over the 1024 limit of a
    skinny output (a side of 48: no narrow kernel, whose k-groups shorten
    the chain); the candidates kept are those within half again the
    shortest slices any of them reaches, not every candidate (under a 512
    limit, dropping it let 968x31x169699 run 5280-deep slices at 0.41x
    cuBLAS on the H100)."""
    p = prob(48, 968, 300000)
    cands = planner.candidates(p, H100, "ieee")
    shortest = min(planner._chain(c.spec, c.params, p) for c in cands)
    assert shortest > planner.acc_slice(p, H100)
    assert all(planner._chain(c.spec, c.params, p) <= 1.5 * shortest for c in cands)


@pytest.mark.parametrize("m,n,ta,tb", [(1066, 1, True, False), (1, 1066, False, False)])
def test_gemv_splits_k_when_its_blocks_are_few(m, n, ta, tb):
    """A 1066-long matrix-vector product gives gemv 34 blocks of 32 rows:
    one SM each cannot stream the 58 MB (70 us measured against 33 at four
    slices), so the plan splits K; 8192 rows fill the SMs and do not."""
    few = planner.candidates(prob(m, n, 13617, ta, tb), H100, "ieee")[0]
    assert few.spec.name == "gemv" and few.params.split_k > 1, few.describe()
    many = planner.candidates(prob(8192, 1, 4096, True, False), H100, "ieee")[0]
    assert many.spec.name == "gemv" and many.params.split_k == 1, many.describe()


@pytest.mark.parametrize("m,n,k,tb", [(16384, 32, 8192, True), (2048, 64, 8192, True)])
def test_tf32x3_narrow_outputs_take_the_64_wide_tile(m, n, k, tb):
    """An ML layer of 32-64 tokens (n in the canonical problem): a 128-wide
    tensor-core tile computes 2-4x the useful columns, the BN=64 config
    does not; a square product keeps the 128x128 tile."""
    c = planner.candidates(prob(m, n, k, tb=tb), H100, "tf32x3")[0]
    assert c.spec.name == "tf32x3_wgmma_rs" and c.params.BN == 64, c.describe()
    big = planner.candidates(prob(4096, 4096, 4096), H100, "tf32x3")[0]
    assert big.spec.name == "tf32x3_wgmma_rs" and big.params.BN == 128, big.describe()


def test_candidates_are_remembered_per_problem_and_calibration():
    """A first call asks for the same problem's candidates twice (the
    measured choice's shortlist, then the choice): the second answer is the
    first's, and a new calibration object (cost.forget, a user calibration)
    is planned afresh, not served from the old one."""
    p = prob(300, 200, 50000)
    first = planner.candidates(p, H100, "ieee")
    again = planner.candidates(p, H100, "ieee")
    assert again == first and again is not first          # a copy of the list, same plans
    other = planner.candidates(prob(300, 201, 50000), H100, "ieee")
    assert [c.predicted for c in other] != [c.predicted for c in first]
    fresh = cost.Calibration(H100.name, cost.Machine(), dict(cost.calibration(H100).rates),
                             H100.clock_khz)
    redone = planner.candidates(p, H100, "ieee", cal=fresh)
    assert redone[0] is not first[0]
    assert [c.predicted for c in redone] == [c.predicted for c in first]


def test_tile_params_replace_matches_dataclasses_replace():
    import dataclasses
    p = registry.KERNELS["double_buffer"].configs["rect"]
    q = p.replace(split_k=48, pack=0)
    assert q == dataclasses.replace(p, split_k=48, pack=0) and hash(q) == hash(
        dataclasses.replace(p, split_k=48, pack=0))
    assert (p.split_k, p.pack) == (1, 1)                  # the original is untouched
    with pytest.raises(TypeError, match="splitk"):
        p.replace(splitk=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.BM = 64


def test_a_short_k_on_a_big_output_goes_to_small_k():
    """K of a few on a big output: the time is writing C, and small_k's
    column-contiguous warp stores are what the shipped H100 rates say is
    fastest (bench/results/small-k-sweep-h100-2026-11-27.json: 6981x6585x2
    ran 0.64x cuBLAS on the tile kernel), with odd leading dimensions as user
    sizes give them; deeper K keeps the tile kernels."""
    for m, n, k in ((6585, 6981, 2), (12574, 5498, 1), (2527, 16015, 3)):
        c = planner.candidates(prob(m, n, k, aligned=False), H100, "ieee")[0]
        assert c.spec.name == "small_k" and c.params.BK >= k, c.describe()
    c = planner.candidates(prob(4096, 4096, 64), H100, "ieee")[0]
    assert c.spec.name != "small_k", c.describe()


def test_attention_pv_goes_to_rung_13_by_its_rates():
    """P V of attention (T x dh = 2048 x 64, K = T, 16 heads; canonical: m = dh):
    one wave of two 128-thread blocks an SM, where rung 13's 64x128 tile ran
    241 us against rung 9's 287 (bench/results/kmajor-ab-h100-2026-11-27.json)
    and its fitted rates predict 238: the model's pick there."""
    pv = prob(64, 2048, 2048, batch=16)
    c = planner.candidates(pv, H100, "ieee")[0]
    assert (c.spec.name, c.params.BM, c.params.BN) == ("kmajor", 64, 128), c.describe()
    assert 200e-6 < c.predicted < 280e-6, c.describe()


def test_narrow_is_weighed_for_products_with_a_narrow_side_only():
    """43_narrow.cu: a product or batch with m or n <= 32 gets every config
    of the narrow side's smallest tile (both widths, chunk depths and
    k-groups the rules take), the narrow side along the right axis; a single
    product also with the K splits (its slices are the kernel's batch); a
    product with both sides over 32 does not."""
    from sgemm.kernels import schemes

    def narrow(pr):
        return {(c.params.BM, c.params.BN, c.params.BK, c.params.threads)
                for c in planner.candidates(pr, H100, "ieee", everything=True)
                if c.spec.name == "narrow"}

    def named(prefix):
        return {(p.BM, p.BN, p.BK, p.threads) for k, p in schemes.NARROW_CONFIGS.items()
                if k.startswith(prefix + "w")}
    got = narrow(prob(300, 11, 200, batch=64))          # narrow n: tiles along m
    assert got == named("n16") and (64, 16, 8, 128) in got and (128, 16, 16, 256) in got
    got = narrow(prob(20, 500, 200, batch=64))          # narrow m: tiles along n
    assert got == named("m32") and (32, 64, 16, 256) in got
    assert narrow(prob(300, 5, 200, batch=64)) == named("n8")
    assert not narrow(prob(300, 40, 200, batch=64)) and not narrow(prob(300, 40, 4000))
    single = [c for c in planner.candidates(prob(300, 11, 4000), H100, "ieee", everything=True)
              if c.spec.name == "narrow"]
    assert {(c.params.BM, c.params.BN, c.params.BK, c.params.threads)
            for c in single} == named("n16")
    assert {c.params.split_k for c in single} >= {1, 2, 4, 8}


def test_gemv_blocks_holding_a_whole_batch_product_read_their_own_rate():
    """The batched gemv rate (':b') is for blocks whose product fits their
    strip; a batch of long products streams like a single one."""
    spec = registry.KERNELS["gemv_wide"]
    p = spec.configs["n16"]                             # a 128-row strip, n <= 16
    assert cost.config_key(spec, p, prob(100, 10, 300, batch=8)).endswith(":b")
    assert not cost.config_key(spec, p, prob(900, 10, 300, batch=8)).endswith(":b")
    assert not cost.config_key(spec, p, prob(100, 10, 300)).endswith(":b")
    assert cost.config_key(spec, p, prob(100, 10, 300, batch=8)) in cost.calibration(H100).rates
