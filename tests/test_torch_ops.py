"""sgemm.torch on the CPU: registration, fake implementations, autograd
formulas, the drop-in modules and the routing mode's fall-through.

The operators have a CUDA implementation only.  To run everything but the
GEMM itself here, the ``emulated`` fixture swaps the one sgemm call in
sgemm/torch/_impl.py for a float64 torch product (which also asserts the
operand layout sgemm requires) and registers the same implementations for
CPU tensors in a ``torch.library.Library`` that is destroyed afterwards.
The real GEMMs are tested in tests/gpu/test_torch_gpu.py.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import sgemm.torch as st  # noqa: E402
from sgemm.torch import _impl, functional, mode  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ("mm", "bmm", "addmm", "linear")


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


# -- import hygiene ---------------------------------------------------------------------
def test_import_sgemm_does_not_import_torch():
    r = _python("""
        import sys, sgemm
        assert "torch" not in sys.modules, "import sgemm imported torch"
        assert "sgemm.torch" not in sys.modules
    """)
    assert r.returncode == 0, r.stderr


def test_sgemm_works_without_torch():
    r = _python("""
        import sys
        sys.modules["torch"] = None          # import torch raises ImportError
        import sgemm
        sgemm.plan, sgemm.gemm
        try:
            import sgemm.torch
        except ImportError as e:
            assert "needs PyTorch" in str(e), e
        else:
            raise AssertionError("sgemm.torch imported without torch")
    """)
    assert r.returncode == 0, r.stderr


# -- registration -----------------------------------------------------------------------
def test_ops_registered_with_precision():
    for name in OPS:
        schema = getattr(torch.ops.sgemm, name).default._schema
        args = {a.name: a for a in schema.arguments}
        assert "precision" in args, schema
        assert args["precision"].default_value == "tf32x3", schema
        assert not schema.is_mutable, schema


def test_cpu_tensors_are_rejected_clearly():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    with pytest.raises(NotImplementedError, match="CUDA"):
        torch.ops.sgemm.mm(a, b)
    with pytest.raises(ValueError, match="CPU tensor"):
        st.mm(a, b)
    with pytest.raises(ValueError, match="CPU tensor"):
        st.linear(a, torch.randn(2, 4))


def test_bad_arguments():
    with pytest.raises(ValueError, match="precision"):
        st.mm(torch.randn(2, 2), torch.randn(2, 2), precision="fp16")
    with pytest.raises(ValueError, match="activation"):
        st.linear(torch.randn(2, 2), torch.randn(2, 2), activation="tanh")
    with pytest.raises(ValueError, match="precision"):
        st.Linear(2, 2, precision="bf16")


# -- fake implementations ---------------------------------------------------------------
FAKE_CASES = [
    ("mm", lambda e: (e(5, 3), e(3, 4)), (5, 4)),
    ("mm", lambda e: (e(0, 3), e(3, 4)), (0, 4)),
    ("bmm", lambda e: (e(2, 5, 3), e(2, 3, 4)), (2, 5, 4)),
    ("addmm", lambda e: (e(4), e(5, 3), e(3, 4)), (5, 4)),
    ("addmm", lambda e: (e(5, 1), e(5, 3), e(3, 4)), (5, 4)),
    ("addmm", lambda e: (e(), e(5, 3), e(3, 4)), (5, 4)),
    ("linear", lambda e: (e(2, 7, 3), e(4, 3), e(4)), (2, 7, 4)),
    ("linear", lambda e: (e(3), e(4, 3), None), (4,)),
    ("linear", lambda e: (e(6, 3), e(4, 3), None), (6, 4)),
]


@pytest.mark.parametrize("device", ["cuda", "meta"])
@pytest.mark.parametrize("name,make,shape", FAKE_CASES)
def test_fake_shapes(device, name, make, shape):
    op = getattr(torch.ops.sgemm, name)
    with FakeTensorMode(allow_non_fake_inputs=False):
        args = make(lambda *s: torch.empty(s, device=device))
        out = op(*args)
    assert tuple(out.shape) == shape
    assert out.dtype == torch.float32
    assert out.device.type == device
    assert out.is_contiguous()


@pytest.mark.parametrize("name,args,match", [
    ("mm", lambda e: (e(5, 3), e(4, 4)), "inner"),
    ("mm", lambda e: (e(5, 3, 1), e(3, 4)), "2-D"),
    ("bmm", lambda e: (e(2, 5, 3), e(3, 3, 4)), "batch"),
    ("addmm", lambda e: (e(3), e(5, 3), e(3, 4)), "broadcast"),
    ("linear", lambda e: (e(2, 3), e(4, 5), None), "inner"),
    ("linear", lambda e: (e(2, 3), e(4, 3), e(5)), "bias"),
])
def test_fake_rejects(name, args, match):
    op = getattr(torch.ops.sgemm, name)
    with FakeTensorMode():
        with pytest.raises(Exception, match=match):
            op(*args(lambda *s: torch.empty(s, device="cuda")))


def test_fake_rejects_dtype():
    with FakeTensorMode():
        a = torch.empty(2, 3, device="cuda", dtype=torch.float16)
        with pytest.raises(Exception, match="float32"):
            torch.ops.sgemm.mm(a, a.t())


# -- an emulated GEMM: the implementations and autograd on CPU tensors -----------------
class _EmulatedApi:
    """sgemm.api's gemm / gemm_batched in float64 torch, checking that the
    operands arrive as sgemm takes them (plain tensors, one unit stride)."""
    calls: list = []

    @classmethod
    def gemm(cls, a, b, c, *, alpha=1.0, beta=0.0, trans_b=False, precision=None, bias=None,
             activation=None):
        for x in (a, b, c):       # the types the plan cache takes
            assert type(x) in (torch.Tensor, nn.Parameter), type(x)
            st_ = x.stride()
            assert st_[-1] == 1 or st_[-2] == 1, (x.shape, st_)
        assert precision in ("ieee", "tf32x3", "tf32")
        if trans_b:
            b = b.transpose(-1, -2)
        cls.calls.append((tuple(a.shape), tuple(b.shape), precision, activation,
                          bias is not None))
        r = alpha * (a.double() @ b.double())
        if beta != 0.0:
            r = r + beta * c.double()
        if bias is not None:                 # sgemm.gemm's contract: bias[j] to column j
            assert type(bias) in (torch.Tensor, nn.Parameter) and bias.dim() == 1
            assert bias.shape[0] == c.shape[-1] and bias.is_contiguous()
            r = r + bias.double()
        if activation is not None:
            r = functional.ACTIVATIONS[activation](r)
        c.copy_(r)
        return c

    gemm_batched = gemm

    # the cached route (sgemm.api._torch_new): every call a miss here
    @staticmethod
    def _torch_new(tag, a, b, extra, slow, args, bias=None):
        return slow(*args)[1]

    @classmethod
    def _new_uncached(cls, a, b, precision, trans_b=False, bias=None, activation=None,
                      batched=False):
        cols = b.shape[-2] if trans_b else b.shape[-1]
        out = torch.empty((*a.shape[:-1], cols))
        return None, cls.gemm(a, b, out, trans_b=trans_b, precision=precision, bias=bias,
                              activation=activation)


@pytest.fixture
def emulated(monkeypatch):
    monkeypatch.setattr(_impl, "_api", _EmulatedApi)
    _EmulatedApi.calls = []
    lib = torch.library.Library("sgemm", "IMPL")
    lib.impl("mm", lambda a, b, precision="tf32x3": _impl.mm(a, b, precision), "CPU")
    lib.impl("bmm", lambda a, b, precision="tf32x3": _impl.bmm(a, b, precision), "CPU")
    lib.impl("addmm", lambda i, a, b, beta=1.0, alpha=1.0, precision="tf32x3":
             _impl.addmm(i, a, b, beta, alpha, precision), "CPU")
    lib.impl("linear", lambda x, w, bias=None, precision="tf32x3", activation=None:
             _impl.linear(x, w, bias, precision, activation), "CPU")
    yield _EmulatedApi
    lib._destroy()


@pytest.fixture
def eager_on_cpu(monkeypatch, emulated):
    """Also let functional.py's eager fast path take CPU tensors."""
    monkeypatch.setattr(functional, "_eager", lambda what, *ts: True)
    return emulated


def _r(*shape, grad=True):
    return torch.randn(*shape, requires_grad=grad)


def _rt(*shape):
    """A transposed (column-major) leaf of the given shape."""
    return torch.randn(*reversed(shape)).t().requires_grad_()


OPCHECK_CASES = [
    ("mm", lambda: (_r(5, 3), _r(3, 4), "ieee")),
    ("mm", lambda: (_rt(5, 3), _rt(3, 4), "tf32x3")),        # transposed views
    ("bmm", lambda: (_r(2, 5, 3), _r(2, 3, 4), "tf32")),
    ("addmm", lambda: (_r(4), _r(5, 3), _r(3, 4), 0.5, 2.0, "ieee")),
    ("addmm", lambda: (_r(5, 1), _r(5, 3), _r(3, 4), 1.0, 1.0, "tf32x3")),
    ("linear", lambda: (_r(2, 7, 3), _r(4, 3), _r(4), "ieee")),
    ("linear", lambda: (_r(3), _r(4, 3), None, "tf32x3")),
    ("linear", lambda: (_r(2, 7, 3), _r(4, 3), _r(4), "ieee", "gelu")),
    ("linear", lambda: (_r(6, 3), _r(4, 3), None, "tf32", "gelu_tanh")),
    ("linear", lambda: (_r(6, 3), _r(4, 3), _r(4), "tf32x3", "relu")),
    ("linear", lambda: (_r(5, 3), _r(4, 3), _r(4), "ieee", "silu")),
    ("addmm", lambda: (_r(4), _r(5, 3), _r(3, 4), 1.0, 1.0, "ieee")),    # fused bias
]


@pytest.mark.parametrize("name,make", OPCHECK_CASES)
def test_opcheck_emulated(emulated, name, make):
    torch.library.opcheck(getattr(torch.ops.sgemm, name).default, make())


def _reference(name, args):
    """torch's own op on float64 copies of the tensor arguments."""
    d = [x.detach().double().requires_grad_(x.requires_grad) if torch.is_tensor(x) else x
         for x in args]
    if name == "mm":
        return d, d[0] @ d[1]
    if name == "bmm":
        return d, torch.bmm(d[0], d[1])
    if name == "addmm":
        return d, torch.addmm(d[0], d[1], d[2], beta=d[3], alpha=d[4])
    y = F.linear(d[0], d[1], d[2])
    act = functional.ACTIVATIONS[d[4] if len(d) > 4 else None]
    return d, y if act is None else act(y)


def _call(path, name, args):
    if path == "op":
        return getattr(torch.ops.sgemm, name)(*args)
    if name == "linear" and len(args) == 5:
        return st.linear(*args[:3], precision=args[3], activation=args[4])
    tensors, prec = args[:-1], args[-1]
    if name == "addmm":
        return st.addmm(*tensors[:3], beta=tensors[3], alpha=tensors[4], precision=prec)
    return getattr(st, name)(*tensors, precision=prec)


@pytest.mark.parametrize("path", ["op", "eager"])
@pytest.mark.parametrize("name,make", OPCHECK_CASES)
def test_gradients_match_torch(eager_on_cpu, path, name, make):
    args = make()
    out = _call(path, name, args)
    d, ref = _reference(name, args)
    assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-5)
    g = torch.randn_like(out)
    out.backward(g)
    ref.backward(g.double())
    for x, xd in zip(args, d):
        if torch.is_tensor(x) and x.requires_grad:
            assert x.grad is not None and x.grad.shape == x.shape
            assert torch.allclose(x.grad.double(), xd.grad, rtol=1e-5, atol=1e-5)
    prec = args[3] if name == "linear" and len(args) == 5 else args[-1]
    assert eager_on_cpu.calls and all(c[2] == prec for c in eager_on_cpu.calls)


def test_backward_gemm_count_and_precision(eager_on_cpu):
    """dA, dB through sgemm in the forward's precision; only what is needed."""
    a, b = _r(5, 3), _r(3, 4, grad=False)
    st.mm(a, b, precision="ieee").sum().backward()
    assert [c[2] for c in eager_on_cpu.calls] == ["ieee", "ieee"]   # forward, dA only


@pytest.mark.parametrize("path", ["op", "eager"])
def test_double_backward(eager_on_cpu, path):
    """create_graph=True: the backward's GEMMs are differentiable too."""
    a, b = _r(5, 3), _r(3, 4)
    y = torch.ops.sgemm.mm(a, b, "ieee") if path == "op" else st.mm(a, b, precision="ieee")
    (ga,) = torch.autograd.grad((y * y).sum(), a, create_graph=True)
    ga.square().sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    y2 = a2 @ b2
    (ga2,) = torch.autograd.grad((y2 * y2).sum(), a2, create_graph=True)
    ga2.square().sum().backward()
    assert torch.allclose(ga, ga2, rtol=1e-4, atol=1e-4)
    assert torch.allclose(b.grad, b2.grad, rtol=1e-4, atol=1e-4)


def test_no_grad_takes_no_autograd(eager_on_cpu):
    a, b = _r(5, 3), _r(3, 4)
    with torch.no_grad():
        out = st.mm(a, b)
    assert out.grad_fn is None and not out.requires_grad


def test_degenerate_shapes(eager_on_cpu):
    assert st.mm(torch.randn(0, 3), torch.randn(3, 4)).shape == (0, 4)
    z = st.mm(torch.randn(5, 0), torch.randn(0, 4))
    assert torch.equal(z, torch.zeros(5, 4))
    i = torch.randn(4)
    assert torch.equal(st.addmm(i, torch.randn(5, 0), torch.randn(0, 4), beta=2.0),
                       (2 * i).expand(5, 4))
    assert eager_on_cpu.calls == []          # none reached the GEMM


def test_expanded_gradient_is_made_contiguous(eager_on_cpu):
    a, b = _r(5, 3), _r(3, 4)
    st.mm(a, b).sum().backward()             # grad of sum: an expanded (stride 0) tensor
    assert torch.allclose(a.grad, torch.ones(5, 4) @ b.detach().t(), atol=1e-5)


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu"])
def test_linear_activation(eager_on_cpu, act):
    x, w, b = _r(6, 3), _r(4, 3), _r(4)
    y = st.linear(x, w, b, activation=act, precision="ieee")
    ref = functional.ACTIVATIONS[act](F.linear(x, w, b))
    assert torch.allclose(y, ref, atol=1e-5)
    y.sum().backward()
    assert x.grad is not None and w.grad is not None and b.grad is not None


def test_compile_fullgraph_traces_ops(emulated):
    """torch.compile(fullgraph=True) traces the functions to the operators,
    forward and backward (aot_eager: no C++ compiler needed here)."""
    lin = st.Linear(3, 4, precision="ieee", activation="relu")

    def f(x, w, a, b):
        h = st.linear(x, w, None, precision="ieee", activation="gelu")
        return (st.mm(h, a) + st.bmm(b, b.transpose(1, 2)).sum()).sum()

    x, w, a, b = _r(6, 3), _r(5, 3), _r(5, 2), _r(2, 3, 3)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    compiled(x, w, a, b).backward()
    assert x.grad is not None and b.grad is not None
    ref_x = x.detach().clone().requires_grad_()
    f_ref = (torch.mm(F.gelu(ref_x @ w.detach().t()), a.detach())
             + torch.bmm(b.detach(), b.detach().transpose(1, 2)).sum()).sum()
    f_ref.backward()
    assert torch.allclose(x.grad, ref_x.grad, atol=1e-4)
    # the module's forward checks x.is_cuda: compile it with CPU tensors -> F.linear
    torch.compile(lin, fullgraph=True, backend="aot_eager")(x).sum().backward()


# -- nn.Linear drop-in and convert() ----------------------------------------------------
def test_linear_state_dict_compatible():
    ref = nn.Linear(5, 3)
    lin = st.Linear(5, 3, precision="ieee")
    assert list(lin.state_dict()) == list(ref.state_dict())
    lin.load_state_dict(ref.state_dict())
    back = nn.Linear(5, 3)
    back.load_state_dict(lin.state_dict())
    for k, v in ref.state_dict().items():
        assert torch.equal(back.state_dict()[k], v)
    nb = st.Linear(5, 3, bias=False)
    assert list(nb.state_dict()) == list(nn.Linear(5, 3, bias=False).state_dict())
    assert isinstance(lin, nn.Linear) and "precision='ieee'" in repr(lin)


def test_linear_falls_back_on_cpu_and_other_dtypes():
    ref = nn.Linear(5, 3)
    lin = st.Linear.from_linear(ref, activation="relu")
    x = torch.randn(4, 5)
    assert torch.equal(lin(x), torch.relu(ref(x)))
    ref64, x64 = ref.double(), x.double()
    lin64 = st.Linear.from_linear(ref64)
    assert torch.equal(lin64(x64), ref64(x64))


class _Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.parts = nn.ModuleDict({"proj": nn.Linear(8, 2), "norm": nn.LayerNorm(2)})

    def forward(self, x):
        return self.parts["norm"](self.parts["proj"](x))


def test_convert_swaps_linear_layers_and_keeps_parameters():
    torch.manual_seed(0)
    shared = nn.Linear(8, 8)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), shared, shared, _Head())
    before = {n: p for n, p in model.named_parameters()}
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(3, 4)
    y = model(x)
    out = st.convert(model, precision="ieee")
    assert out is model
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert linears and all(type(m) is st.Linear for m in linears)
    assert all(m.precision == "ieee" for m in linears)
    assert model[2] is model[3]                          # shared stays shared
    assert {n: p for n, p in model.named_parameters()} == before   # same Parameter objects
    assert list(model.state_dict()) == list(sd)
    assert torch.equal(model(x), y)                      # CPU: F.linear fallback
    st.convert(model, precision="tf32")                  # already converted: precision only
    assert all(m.precision == "tf32" for m in model.modules() if isinstance(m, st.Linear))


def test_convert_root_linear_and_subclasses():
    root = nn.Linear(3, 3)
    new = st.convert(root)
    assert type(new) is st.Linear and new.weight is root.weight
    mha = nn.MultiheadAttention(8, 2)
    st.convert(mha)
    assert type(mha.out_proj) is not st.Linear           # a subclass of nn.Linear: left alone


# -- SgemmMode ---------------------------------------------------------------------------
class _Spy:
    """Stands in for sgemm.torch.functional inside mode.py, counting calls."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def f(*args, **kwargs):
            self.calls.append(name)
            return getattr(functional, name)(*args, **kwargs)
        return f


def _fallthrough_cases(dtype):
    def t(*s):
        return torch.randn(*s, dtype=dtype)
    a, b, x, w, bias = t(5, 3), t(3, 4), t(2, 5, 3), t(4, 3), t(4)
    return [
        lambda: torch.matmul(a, b), lambda: a @ b, lambda: a.matmul(b),
        lambda: torch.mm(a, b), lambda: a.mm(b),
        lambda: torch.bmm(x, x.transpose(1, 2)), lambda: x.bmm(x.transpose(1, 2)),
        lambda: torch.addmm(bias, a, b), lambda: bias.addmm(a, b, beta=0.5),
        lambda: F.linear(x, w, bias), lambda: x @ b,
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_mode_falls_through_on_cpu(monkeypatch, dtype):
    spy = _Spy()
    monkeypatch.setattr(mode, "fn", spy)
    cases = _fallthrough_cases(dtype)
    expected = [f() for f in cases]
    with st.SgemmMode(precision="ieee"):
        got = [f() for f in cases]
    assert spy.calls == []
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and torch.equal(g, e)


@pytest.fixture
def mode_on_cpu(monkeypatch, eager_on_cpu):
    """Routing decisions on CPU: float32 CPU tensors count as CUDA ones."""
    plain = mode._PLAIN

    def ok(*ts):
        return all(type(t) in plain and t.dtype == torch.float32 for t in ts)
    monkeypatch.setattr(mode, "_ok", ok)
    spy = _Spy()
    monkeypatch.setattr(mode, "fn", spy)
    return spy


def test_mode_routes(mode_on_cpu):
    spy = mode_on_cpu
    a, b, x, w, bias = _r(5, 3), _r(3, 4), _r(2, 5, 3), _r(4, 3), _r(4)
    y4 = _r(2, 3, 5, 3)
    cases = [
        ("mm", lambda: a @ b), ("mm", lambda: torch.matmul(a, b)), ("mm", lambda: a.mm(b)),
        ("mm", lambda: x @ b),                               # N-D @ 2-D: one mm
        ("bmm", lambda: x @ x.transpose(1, 2)), ("bmm", lambda: torch.bmm(x, x.mT)),
        ("bmm", lambda: y4 @ y4.transpose(-1, -2)),          # equal batch dims: one bmm
        ("addmm", lambda: torch.addmm(bias, a, b, beta=0.5, alpha=2)),
        ("linear", lambda: F.linear(x, w, bias)), ("linear", lambda: F.linear(x, w)),
    ]
    for name, f in cases:
        spy.calls.clear()
        with st.SgemmMode(precision="tf32"):
            got = f()
        ref = f()
        assert spy.calls == [name], (name, spy.calls)
        assert got.shape == ref.shape and torch.allclose(got, ref, atol=1e-5)
        got.sum().backward()                                 # autograd through sgemm


def test_mode_leaves_unsupported_forms_to_torch(mode_on_cpu):
    spy = mode_on_cpu
    a, v, x, z = _r(5, 3), _r(3), _r(2, 5, 3), _r(1, 3, 4)
    cases = [lambda: a @ v, lambda: v @ v, lambda: x @ z,           # 1-D, broadcast batch
             lambda: torch.matmul(a, a.t(), out=torch.empty(5, 5).requires_grad_(False)),
             lambda: F.linear(x, _r(4, 3), _r(1)),                  # bias not (out,)
             lambda: a @ a.t().double()]                            # mixed dtypes
    for f in cases:
        spy.calls.clear()
        with torch.no_grad():
            with st.SgemmMode():
                try:
                    f()
                except RuntimeError:
                    pass                                            # torch's own error
        assert spy.calls == []


# -- the fused epilogue ---------------------------------------------------------------------
def test_linear_fuses_bias_and_activation_when_no_gradient(eager_on_cpu):
    """Inference: one GEMM call with bias and activation fused.  Training:
    the bias is fused, the activation is PyTorch's on the GEMM's output (the
    pre-activation its backward needs)."""
    x, w, b = _r(6, 3), _r(4, 3), _r(4)
    with torch.no_grad():
        y = st.linear(x, w, b, activation="gelu", precision="ieee")
    assert eager_on_cpu.calls == [((6, 3), (3, 4), "ieee", "gelu", True)]
    assert torch.allclose(y, F.gelu(F.linear(x, w, b)), atol=1e-6)
    eager_on_cpu.calls.clear()
    st.linear(x, w, b, activation="gelu", precision="ieee").sum().backward()
    assert eager_on_cpu.calls[0] == ((6, 3), (3, 4), "ieee", None, True)
    assert all(c[3] is None for c in eager_on_cpu.calls)      # backward GEMMs: plain


def test_linear_module_passes_its_activation(eager_on_cpu, monkeypatch):
    lin = st.Linear(3, 4, precision="ieee", activation="silu")
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    x = torch.randn(5, 3)
    with torch.no_grad():
        y = lin(x)
    assert eager_on_cpu.calls[-1][3:] == ("silu", True)
    assert torch.allclose(y, F.silu(F.linear(x, lin.weight, lin.bias)), atol=1e-6)


def test_addmm_takes_a_row_vector_as_the_fused_bias(eager_on_cpu):
    i, a, b = torch.randn(4), torch.randn(5, 3), torch.randn(3, 4)
    out = st.addmm(i, a, b, beta=0.5)
    assert eager_on_cpu.calls[-1][4] is True                  # bias, no copy into c
    assert torch.allclose(out, torch.addmm(i, a, b, beta=0.5), atol=1e-6)


def test_linear_op_rejects_unknown_activation():
    with FakeTensorMode():
        x, w = torch.empty(2, 3, device="cuda"), torch.empty(4, 3, device="cuda")
        with pytest.raises(ValueError, match="activation"):
            torch.ops.sgemm.linear(x, w, None, "ieee", "tanh")


# -- the eager path hands sgemm its tensors as they are ---------------------------------
def test_linear_hands_sgemm_its_tensors_without_views(eager_on_cpu, monkeypatch):
    """A 2-D x, the weight Parameter and the output reach sgemm as they are
    (the weight with trans_b=True instead of a detached .t() view): each view
    cost about 1 us a call (docs/notes/torch.md).  A 3-D x is reshaped once."""
    import types
    seen = []

    def spy(a, b, c, **kw):
        seen.append((a, b, c, kw.get("trans_b", False)))
        return eager_on_cpu.gemm(a, b, c, **kw)
    api = types.SimpleNamespace(gemm=spy, gemm_batched=spy, _torch_new=eager_on_cpu._torch_new)
    api._new_uncached = lambda a, b, precision, trans_b, bias, act, batched: (None, spy(
        a, b, torch.empty(a.shape[0], b.shape[0]), trans_b=trans_b, precision=precision,
        bias=bias, activation=act))
    monkeypatch.setattr(_impl, "_api", api)
    lin = nn.Linear(3, 4)
    x = torch.randn(6, 3)
    with torch.no_grad():
        y = st.linear(x, lin.weight, lin.bias, precision="ieee", activation="relu")
    (a, b, c, tb), = seen
    assert a is x and b is lin.weight and type(b) is nn.Parameter and tb is True and c is y
    torch.testing.assert_close(y, F.relu(F.linear(x, lin.weight, lin.bias)))
    seen.clear()
    x3 = torch.randn(2, 6, 3)
    with torch.no_grad():
        y3 = st.linear(x3, lin.weight, None, precision="ieee")
    (a, b, c, tb), = seen
    assert b is lin.weight and tb is True and tuple(a.shape) == (12, 3)
    assert c.data_ptr() == y3.data_ptr() and tuple(y3.shape) == (2, 6, 4)
    torch.testing.assert_close(y3, F.linear(x3, lin.weight))


def test_linear_rejects_a_bad_bias_before_any_gemm(eager_on_cpu):
    lin = nn.Linear(3, 4)
    for bias, match in ((torch.randn(5), r"bias must have shape \(4,\)"),
                        (torch.randn(1, 4), r"bias must have shape \(4,\)"),
                        (torch.randn(4, dtype=torch.float64), "bias has dtype")):
        with pytest.raises((ValueError, TypeError), match=match):
            st.linear(torch.randn(6, 3), lin.weight, bias)
    assert eager_on_cpu.calls == []


# -- the operators' own Autograd kernel ------------------------------------------------
@pytest.fixture
def direct_on_cpu(monkeypatch, emulated):
    """CPU tensors take the route plain CUDA tensors take (ops._direct), and
    every redispatch below autograd is recorded."""
    from sgemm.torch import ops
    monkeypatch.setattr(ops, "_DIRECT_KEY", torch._C.DispatchKey.CPU)
    monkeypatch.setattr(ops, "_direct_memo", {})      # decided for CUDA until now
    seen = []
    real = ops._redispatch
    monkeypatch.setattr(ops, "_redispatch", lambda op, ks, args: (seen.append(op), real(op, ks, args))[1])
    return seen


def test_plain_tensors_skip_the_redispatch(direct_on_cpu):
    """Plain tensors: the kernel is called from the Autograd kernel, with and
    without a gradient, and the results and gradients are torch's."""
    a, b, x, w, bias = _r(5, 3), _r(3, 4), _r(6, 3), _r(4, 3), _r(4)
    with torch.no_grad():
        torch.testing.assert_close(torch.ops.sgemm.mm(a, b, "ieee"), a @ b)
    y = torch.ops.sgemm.linear(x, w, bias, "ieee", "gelu")
    y.sum().backward()
    x2, w2, b2 = (t.detach().clone().requires_grad_() for t in (x, w, bias))
    F.gelu(F.linear(x2, w2, b2)).sum().backward()
    torch.testing.assert_close(y, F.gelu(F.linear(x2, w2, b2)))
    for g, g2 in ((x.grad, x2.grad), (w.grad, w2.grad), (bias.grad, b2.grad)):
        torch.testing.assert_close(g, g2, rtol=1e-5, atol=1e-5)
    assert direct_on_cpu == []


def test_fake_and_meta_tensors_still_redispatch(direct_on_cpu):
    """Anything between autograd and the backend (FakeTensorMode's Python
    key, meta) goes below autograd as custom_op did: the fake kernel runs."""
    with FakeTensorMode():
        out = torch.ops.sgemm.mm(torch.empty(5, 3), torch.empty(3, 4))
    assert out.shape == (5, 4)
    assert torch.ops.sgemm.mm(torch.empty(5, 3, device="meta"),
                              torch.empty(3, 4, device="meta")).shape == (5, 4)
    assert len(direct_on_cpu) == 2


def test_op_defaults_dropped_by_the_dispatcher_are_restored(direct_on_cpu):
    """The dispatcher drops trailing arguments equal to their defaults; the
    autograd node still gets every input (its backward indexes them)."""
    a, b = _r(5, 3), _r(3, 4)
    torch.ops.sgemm.mm(a, b).sum().backward()          # precision left at its default
    assert a.grad is not None and b.grad is not None


def test_direct_route_is_decided_once_per_keyset(direct_on_cpu):
    """ops._direct is memoized on the keyset's raw value: plain tensors are
    decided direct, a FakeTensor's keyset (Python key) not, each once."""
    from sgemm.torch import ops
    with torch.no_grad():
        torch.ops.sgemm.mm(torch.randn(5, 3), torch.randn(3, 4), "ieee")
        torch.ops.sgemm.mm(torch.randn(5, 3), torch.randn(3, 4), "ieee")
    assert list(ops._direct_memo.values()) == [True]
    with FakeTensorMode():
        torch.ops.sgemm.mm(torch.empty(5, 3), torch.empty(3, 4))
    assert sorted(ops._direct_memo.values()) == [False, True]
    assert len(direct_on_cpu) == 1               # the fake call alone redispatched


class _Twice(torch.autograd.Function):
    """2x, recording each call of its own apply (Function.apply's route)."""
    routed = []

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g

    @classmethod
    def apply(cls, *args):
        cls.routed.append(args)
        return super().apply(*args)


def test_apply_skips_function_apply_only_where_it_may(monkeypatch):
    """ops.apply calls the C entry of Function.apply for plain inputs with
    no functorch transform active (same node, same gradient), and
    Function.apply itself under a transform or for a functorch wrapper."""
    from sgemm.torch import ops
    assert ops.apply is ops._apply_c             # this torch has the names it needs
    _Twice.routed = []
    x = _r(3)
    y = ops.apply(_Twice, x)
    y.sum().backward()
    assert _Twice.routed == [] and type(y.grad_fn).__name__ == "_TwiceBackward"
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))
    monkeypatch.setattr(ops, "_functorch_active", lambda: True)
    ops.apply(_Twice, x)
    monkeypatch.setattr(ops, "_functorch_active", lambda: False)
    monkeypatch.setattr(ops, "_wrapped", lambda t: True)
    ops.apply(_Twice, x)
    assert len(_Twice.routed) == 2


def test_apply_keeps_function_apply_on_an_unread_torch():
    """The C entry is used only on the torch versions whose Function.apply
    was read; a later (or unparsable) version keeps Function.apply."""
    from sgemm.torch import ops
    assert ops._tested("2.13.0+cu130") and ops._tested("2.4.1")
    assert not ops._tested("2.14.0") and not ops._tested("3.0.0")
    assert not ops._tested("2.3.1") and not ops._tested("nightly")


def test_plain_tensors_with_grad_take_the_operators_own_node(direct_on_cpu, monkeypatch):
    """With a gradient, plain tensors go through the operator's bound node
    (its C apply, three inputs for mm); an active functorch transform or a
    wrapped tensor takes _OpFunction through ops.apply instead, with the same
    values and gradients either way."""
    from sgemm.torch import ops
    a, b = _r(5, 3), _r(3, 4)
    y = torch.ops.sgemm.mm(a, b, "ieee")
    assert type(y.grad_fn).__name__ == "_mm_nodeBackward"
    y.sum().backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    x, w = _r(6, 3), _r(4, 3)
    z = torch.ops.sgemm.linear(x, w, None, "ieee", "relu")    # a None tensor input
    assert type(z.grad_fn).__name__ == "_linear_nodeBackward"
    routed = []
    monkeypatch.setattr(ops, "apply", lambda fn, *args: (routed.append(fn), ops._apply_py(fn, *args))[1])
    for patch in (("_functorch_active", lambda: True), ("_wrapped", lambda t: True)):
        with monkeypatch.context() as m:
            m.setattr(ops, *patch)
            a.grad = b.grad = None
            y2 = torch.ops.sgemm.mm(a, b, "ieee")
            assert type(y2.grad_fn).__name__ == "_OpFunctionBackward"
            y2.sum().backward()
            torch.testing.assert_close(y2, y)
            torch.testing.assert_close((a.grad, b.grad), (ga, gb))
    assert routed == [ops._OpFunction, ops._OpFunction]
