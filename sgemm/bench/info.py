"""``sgemm info``: what the benchmark numbers are measured against.

The FP32 peak is arithmetic, shown with its terms so that nobody has to trust
it: SMs x FP32 lanes per SM x 2 (an FMA is two flops) x SM clock.  The clock
comes from nvidia-smi when it is on PATH, else NVML (nvidia-ml-py), else the
driver's maximum; the datasheet bandwidth comes from the memory clock and bus
width, and a device-to-device copy measures what the card really moves.
"""
from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys

# FP32 lanes per SM by compute capability.  GA100 (8.0) and Volta/Turing have
# 64; GA10x, Ada, Hopper and Blackwell have 128 (the brief's formula).
FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64}
DEFAULT_LANES = 128


def lanes_per_sm(cc: tuple[int, int]) -> int:
    return FP32_LANES.get(tuple(cc), DEFAULT_LANES)


def fp32_peak_tflops(sm_count: int, clock_mhz: float, lanes: int = DEFAULT_LANES) -> float:
    """SMs x lanes x 2 flop per FMA x clock, in TFLOP/s."""
    return sm_count * lanes * 2 * clock_mhz * 1e6 / 1e12


def peak_formula(sm_count: int, clock_mhz: float, lanes: int = DEFAULT_LANES) -> str:
    return (f"{sm_count} SMs x {lanes} FP32 lanes x 2 flop/FMA x {clock_mhz:.0f} MHz = "
            f"{fp32_peak_tflops(sm_count, clock_mhz, lanes):.1f} TFLOP/s")


# -- clocks -----------------------------------------------------------------------
def _smi(fields: str) -> list[str] | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits",
                            "-i", "0"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0 or not r.stdout.strip():
        return None
    return [x.strip() for x in r.stdout.strip().splitlines()[0].split(",")]


_nvml_handle = None


def _nvml():
    """NVML handle of GPU 0, or None.  Kept open: a query then costs microseconds,
    cheap enough to read the clock around every measurement."""
    global _nvml_handle
    if _nvml_handle is None:
        try:
            import pynvml  # provided by nvidia-ml-py
            pynvml.nvmlInit()
            _nvml_handle = (pynvml, pynvml.nvmlDeviceGetHandleByIndex(0))
        except Exception:
            _nvml_handle = False
    return _nvml_handle or None


def _num(x) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def read_clocks(fast: bool = False) -> dict:
    """{'sm_mhz', 'max_sm_mhz', 'source'}: current and maximum SM clock.

    fast: prefer NVML (microseconds) over nvidia-smi (tens of milliseconds)."""
    order = ("nvml", "smi") if fast else ("smi", "nvml")
    for src in order:
        if src == "smi":
            f = _smi("clocks.sm,clocks.max.sm")
            if f and len(f) == 2 and _num(f[1]):
                return {"sm_mhz": _num(f[0]), "max_sm_mhz": _num(f[1]), "source": "nvidia-smi"}
        else:
            h = _nvml()
            if h:
                nv, dev = h
                try:
                    return {"sm_mhz": float(nv.nvmlDeviceGetClockInfo(dev, nv.NVML_CLOCK_SM)),
                            "max_sm_mhz": float(nv.nvmlDeviceGetMaxClockInfo(dev, nv.NVML_CLOCK_SM)),
                            "source": "nvml"}
                except Exception:
                    pass
    try:
        from ..runtime import device
        return {"sm_mhz": None, "max_sm_mhz": device.info(0).clock_khz / 1e3,
                "source": "driver (maximum only)"}
    except Exception:
        return {"sm_mhz": None, "max_sm_mhz": None, "source": "unavailable"}


# -- versions -----------------------------------------------------------------------
def _version(mod: str) -> str | None:
    try:
        m = __import__(mod, fromlist=["__version__"])
        return str(getattr(m, "__version__", "?"))
    except Exception:
        return None


def driver_version() -> str | None:
    f = _smi("driver_version")
    if f:
        return f[0]
    try:
        from cuda.bindings import driver
        err, v = driver.cuDriverGetVersion()
        return f"CUDA {v // 1000}.{(v % 1000) // 10}" if int(err) == 0 else None
    except Exception:
        return None


def versions() -> dict:
    import sgemm
    out = {"sgemm": sgemm.__version__, "python": platform.python_version(),
           "numpy": _version("numpy"), "cupy": _version("cupy"),
           "cuda.core": _version("cuda.core"), "cuda.bindings": _version("cuda.bindings"),
           "triton": _version("triton"), "matplotlib": _version("matplotlib"),
           "driver": driver_version(), "nvrtc": None}
    try:
        from ..runtime.compiler import nvrtc_version
        out["nvrtc"] = "%d.%d" % nvrtc_version()
    except Exception:
        pass
    return out


# -- measured ceilings ----------------------------------------------------------------
def measure_copy_bandwidth(nbytes: int = 1 << 30, repeat: int = 20) -> float:
    """Device-to-device copy, GB/s counting bytes read plus bytes written
    (median over repeats).  1 GiB: far beyond L2, so DRAM is what is timed."""
    import cupy
    n = nbytes // 4
    src = cupy.random.standard_normal(n, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    s = cupy.cuda.Stream(non_blocking=True)
    times = []
    with s:
        dst[...] = src  # warm-up
        for _ in range(repeat):
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record(s)
            cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, n * 4,
                                          cupy.cuda.runtime.memcpyDeviceToDevice, s.ptr)
            e1.record(s)
            e1.synchronize()
            times.append(cupy.cuda.get_elapsed_time(e0, e1) / 1e3)
    del src, dst
    times.sort()
    return 2 * n * 4 / times[len(times) // 2] / 1e9


_FMA_SRC = r"""
extern "C" __global__ void fma_peak(float* out, int iters, float a, float b) {
    // 8 independent chains per thread hide the FMA latency (4 cycles) with
    // room to spare; the result is stored so the compiler keeps the work.
    float x[8];
    #pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = threadIdx.x * 1e-3f + j;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = fmaf(x[j], a, b);
    }
    float s = 0.f;
    #pragma unroll
    for (int j = 0; j < 8; ++j) s += x[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def measure_fma_peak(sm_count: int, iters: int = 16384, repeat: int = 10) -> float:
    """Achieved FP32 FMA rate of a register-only kernel, TFLOP/s (median).
    This is the roof the GEMM kernels can hope for at the clock the card runs."""
    import cupy
    k = cupy.RawKernel(_FMA_SRC, "fma_peak")
    threads, blocks = 256, sm_count * 8
    out = cupy.empty(threads * blocks, dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    args = (out, cupy.int32(iters), cupy.float32(0.999), cupy.float32(1e-3))
    times = []
    with s:
        k((blocks,), (threads,), args)
        for _ in range(repeat):
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record(s)
            k((blocks,), (threads,), args)
            e1.record(s)
            e1.synchronize()
            times.append(cupy.cuda.get_elapsed_time(e0, e1) / 1e3)
    times.sort()
    flops = 2.0 * 8 * iters * threads * blocks
    return flops / times[len(times) // 2] / 1e12


# -- the report -------------------------------------------------------------------------
def collect(measure: bool = True) -> dict:
    """Everything ``sgemm info`` prints, as a dict (also the bench 'env')."""
    from ..runtime import device
    from ..runtime.compiler import cache_dir
    d = device.info(0)
    clocks = read_clocks()
    max_mhz = clocks.get("max_sm_mhz") or d.clock_khz / 1e3
    lanes = lanes_per_sm(d.cc)
    out = {
        "device": {"name": d.name, "cc": f"{d.cc[0]}.{d.cc[1]}", "sm_count": d.sm_count,
                   "fp32_lanes_per_sm": lanes, "l2_bytes": d.l2_bytes,
                   "memory_bytes": d.total_memory, "smem_optin_bytes": d.smem_optin,
                   "driver_max_sm_mhz": d.clock_khz / 1e3},
        "clocks": clocks,
        "fp32_peak_tflops": fp32_peak_tflops(d.sm_count, max_mhz, lanes),
        "fp32_peak_formula": peak_formula(d.sm_count, max_mhz, lanes),
        "dram_bandwidth_datasheet_gbs": d.dram_bandwidth_gbs(),
        "versions": versions(),
        "kernel_cache": str(cache_dir()),
        "host": {"platform": platform.platform(), "cpu": platform.processor() or None,
                 "cpus": os.cpu_count()},
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if clocks.get("sm_mhz"):
        out["fp32_peak_tflops_current_clock"] = fp32_peak_tflops(d.sm_count, clocks["sm_mhz"],
                                                                 lanes)
    if measure:
        out["measured"] = {}
        try:
            out["measured"]["copy_bandwidth_gbs"] = measure_copy_bandwidth()
        except Exception as e:  # report, do not die: info is a diagnostic tool
            out["measured"]["copy_bandwidth_error"] = f"{type(e).__name__}: {e}"
        try:
            out["measured"]["fma_peak_tflops"] = measure_fma_peak(d.sm_count)
        except Exception as e:
            out["measured"]["fma_peak_error"] = f"{type(e).__name__}: {e}"
    return out


def format_info(i: dict) -> str:
    dv, ck, v, m = i["device"], i["clocks"], i["versions"], i.get("measured", {})
    gib = lambda b: f"{b / 2**30:.1f} GiB" if b else "?"  # noqa: E731
    cur = f"{ck['sm_mhz']:.0f} MHz" if ck.get("sm_mhz") else "unknown"
    mx = f"{ck['max_sm_mhz']:.0f} MHz" if ck.get("max_sm_mhz") else "unknown"
    rows = [
        ("GPU", f"{dv['name']} (compute capability {dv['cc']}, {dv['sm_count']} SMs)"),
        ("SM clock", f"{cur} now, {mx} max (from {ck['source']})"),
        ("FP32 peak", i["fp32_peak_formula"]),
    ]
    if "fp32_peak_tflops_current_clock" in i:
        rows.append(("", f"{i['fp32_peak_tflops_current_clock']:.1f} TFLOP/s at the current "
                         "clock (an idle card idles low; it boosts under load)"))
    if "fma_peak_tflops" in m:
        rows.append(("FP32 measured", f"{m['fma_peak_tflops']:.1f} TFLOP/s (register-only FMA "
                                      "kernel, all SMs)"))
    rows.append(("Memory", f"{gib(dv['memory_bytes'])}, datasheet "
                           f"{i['dram_bandwidth_datasheet_gbs']:.0f} GB/s"))
    if "copy_bandwidth_gbs" in m:
        rows.append(("", f"measured {m['copy_bandwidth_gbs']:.0f} GB/s (1 GiB device-to-device "
                         "copy, read + write bytes)"))
    for key in ("copy_bandwidth_error", "fma_peak_error"):
        if key in m:
            rows.append(("", f"measurement failed: {m[key]}"))
    rows += [
        ("L2", f"{dv['l2_bytes'] / 2**20:.0f} MiB"),
        ("Driver", v.get("driver") or "?"),
        ("NVRTC", v.get("nvrtc") or "?"),
        ("cuda.core", v.get("cuda.core") or "not installed"),
        ("CuPy", v.get("cupy") or "not installed"),
        ("Triton", v.get("triton") or "not installed"),
        ("sgemm", v.get("sgemm")),
        ("Kernel cache", i["kernel_cache"]),
    ]
    w = max(len(r[0]) for r in rows)
    return "\n".join(f"{a:<{w}}  {b}" for a, b in rows)


def main(args) -> int:
    import json
    i = collect(measure=not args.no_measure)
    if args.json:
        json.dump(i, sys.stdout, indent=1)
        print()
    else:
        print(format_info(i))
    return 0
