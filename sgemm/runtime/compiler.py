"""Compile CUDA C++ with NVRTC through cuda.core, and cache the cubins on disk.

Compiling needs no GPU: ``compile_kernel(spec_source, name_expr, arch)`` works
on a CPU-only machine, which is how CI checks registers and spills.  The cache
key hashes everything that changes the binary: every source and header under
kernels/cuda, the name expression, the arch, the NVRTC version and the
options.  A cache entry is one file: a JSON header line (key, symbol mapping,
SHA-256 of the cubin, ptxas log) followed by the cubin.  A file that fails its
checksum is treated as absent and rebuilt.  Writes go to a temporary file and
``os.replace`` it into place (atomic), under a per-key lock file, so processes
that race on first use compile once and never see a half-written entry.

Before the disk cache, ``compile_kernel`` looks in the prebuilt bundle that
ships in the wheel (``sgemm.build`` writes it: entries in the same format
under the same keys, plus an index naming the NVRTC version and sources
digest it was built from).  A bundle of another NVRTC, sources or cache
format is ignored as a whole; ``SGEMM_BUNDLE=0`` turns it off and
``SGEMM_BUNDLE_DIR`` points elsewhere.  See docs/first-call.md.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from ..errors import CompileError

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
CACHE_ENV = "SGEMM_CACHE_DIR"
DEBUG_ENV = "SGEMM_DEBUG"      # "1": -lineinfo and a SASS dump next to the cubin
# A/B experiments on the GPU without editing sources: "NAME=VALUE,NAME2" are
# predefined for every kernel (part of the cache key).  Never set in
# production; the kernels' defaults are the measured choices.
DEFINES_ENV = "SGEMM_DEFINES"
# 2: entries hold the least-local-memory draw of ptxas (see LOCAL_MEMORY_DRAWS);
# a format-1 entry may hold a spilling draw, kept for good.
CACHE_FORMAT = 2
# ptxas (run inside NVRTC) is not a function of its input alone: in a process
# that has compiled before, the same PTX now and then comes back with another
# register allocation (the PTX itself is identical every time; two whole
# in-process passes over the registry gave different cubins for 60 of 868
# instantiations, same register counts).  A kernel at its register cap then
# spills: sgemm_conflict_free<128, 128, 8, 8, 8, false, true, true> for sm_90a,
# 128 registers under __launch_bounds__(256, 2), came back with an 8-byte stack
# frame and 4 to 20 bytes of spills in 6 of about 650 repeated compiles in one
# process (none in 120 first compiles of fresh processes) -- the compile check
# that failed one CI run of two.  The disk cache keeps whatever draw
# it gets for good.  So a compile whose ptxas report shows local memory (spills
# or a stack frame) is drawn again, up to this many times in all, and the draw
# with the least local memory is kept; a kernel that really spills costs two
# extra compiles, once, on a cache miss.
LOCAL_MEMORY_DRAWS = 3
# The prebuilt kernels (sgemm/build.py): package data, read-only.
BUNDLE_DIR = Path(__file__).resolve().parent.parent / "_bundle"
BUNDLE_ENV = "SGEMM_BUNDLE"          # "0": never use the bundle
BUNDLE_DIR_ENV = "SGEMM_BUNDLE_DIR"  # another bundle directory
INDEX = "index.json"                # a bundle's header and keys (sgemm/build.py writes it)


def cache_dir() -> Path:
    """$SGEMM_CACHE_DIR, else $XDG_CACHE_HOME/sgemm, else ~/.cache/sgemm."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "sgemm"


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


_nvrtc: list = []          # (major, minor) once known


def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor): part of every cache key and of the bundle's
    usability check, so a cache or bundle hit asks it too.  Read without
    loading the 141 MB library (11 ms of dlopen) where the answer is certain
    (``_nvrtc_version_on_disk``), else from the library through
    cuda.bindings.nvrtc, never cuda.core.  A compile checks the answer
    against the library it compiles with (``nvrtc_compile``)."""
    if not _nvrtc:
        _nvrtc.append(_nvrtc_version_on_disk() or _nvrtc_version_loaded())
    return _nvrtc[0]


def _nvrtc_version_loaded() -> tuple[int, int]:
    from .device import ensure_bindings
    ensure_bindings()
    from cuda.bindings import nvrtc
    err, major, minor = nvrtc.nvrtcVersion()
    if int(err) != 0:
        raise CompileError(f"nvrtcVersion failed: {err}", "")
    return int(major), int(minor)


# Where cuda.pathfinder, which loads NVRTC for cuda.bindings, looks first
# (its descriptor for "nvrtc", cuda-pathfinder 1.9): a library already loaded
# in the process under one of these sonames, then these directories of the
# site-packages directories, in site.getsitepackages() order with the user's
# ahead of them (behind a venv's own).
_NVRTC_SONAMES = ("libnvrtc.so.13", "libnvrtc.so.12")
_NVRTC_WHEEL_DIRS = ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib")


def _nvrtc_version_on_disk() -> tuple[int, int] | None:
    """NVRTC's version where it can be known without loading the library.

    A library already loaded (CuPy or PyTorch may have) is the one
    cuda.bindings would use: it is asked directly (no load).  Otherwise, when
    an NVRTC wheel's library is the first the loader would find, the version
    is the one of ``libnvrtc-builtins.so.MAJOR.MINOR`` beside it (NVRTC
    loads the builtins of its own major.minor, so they name its version),
    which the wheel's dist-info must agree with.  Anything else -- no wheel,
    two builtins, a disagreeing dist-info, another platform -- returns None
    and the caller loads the library.  A wrong answer could only mislabel
    cache entries (bundled cubins are valid machine code whichever NVRTC
    is installed), and a compile corrects it (``nvrtc_compile``)."""
    import sys
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        for soname in _NVRTC_SONAMES:
            try:
                lib = ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            except OSError:
                continue
            major, minor = ctypes.c_int(), ctypes.c_int()
            if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
                return None
            return major.value, minor.value
        import site
        parents = list(site.getsitepackages())
        if site.ENABLE_USER_SITE and site.getusersitepackages():
            parents.insert(1 if sys.prefix != sys.base_prefix else 0, site.getusersitepackages())
        for rel in _NVRTC_WHEEL_DIRS:
            for parent in parents:
                libdir = os.path.join(parent, rel)
                found = [n for n in _NVRTC_SONAMES if os.path.isfile(os.path.join(libdir, n))]
                if found:
                    return _wheel_nvrtc_version(parent, libdir, int(found[0].rsplit(".", 1)[1]))
    except (OSError, ValueError, AttributeError):
        return None
    return None


def _wheel_nvrtc_version(site_dir: str, libdir: str, major: int) -> tuple[int, int] | None:
    builtins = [m for m in (re.fullmatch(r"libnvrtc-builtins\.so\.(\d+)\.(\d+)", n)
                            for n in os.listdir(libdir)) if m]
    if len(builtins) != 1:
        return None
    version = int(builtins[0].group(1)), int(builtins[0].group(2))
    if version[0] != major:
        return None
    names = [n for n in os.listdir(site_dir) if n.startswith("nvidia_cuda_nvrtc")]
    wheels = [m for m in (re.fullmatch(r"nvidia_cuda_nvrtc(?:_cu\d+)?-(\d+)\.(\d+)[^-]*\.dist-info",
                                       n) for n in names) if m]
    if len(wheels) != 1 or (int(wheels[0].group(1)), int(wheels[0].group(2))) != version:
        return None
    return version


def _sources_digest() -> str:
    """Hash of every file under kernels/cuda (sources and shared headers):
    a change to a header invalidates every kernel that might include it."""
    h = hashlib.sha256()
    for p in sorted(KERNEL_DIR.glob("*")):
        if p.suffix in (".cu", ".cuh"):
            h.update(p.name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()


_digest_lock = threading.Lock()
_digest: str | None = None


def sources_digest() -> str:
    global _digest
    with _digest_lock:
        if _digest is None:
            _digest = _sources_digest()
        return _digest


def experiment_defines() -> tuple[tuple[str, str], ...]:
    """$SGEMM_DEFINES as (name, value) pairs: "A=1,B" -> (("A", "1"), ("B", "1"))."""
    out = []
    for item in os.environ.get(DEFINES_ENV, "").split(","):
        name, _, value = item.strip().partition("=")
        if name:
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise CompileError(f"{DEFINES_ENV}: {name!r} is not a macro name", "")
            out.append((name, value or "1"))
    return tuple(out)


def _options(arch: str, debug: bool, extra: tuple[str, ...]) -> tuple[str, ...]:
    opts = ["--std=c++17", f"--gpu-architecture={arch}", "-default-device"]
    if debug:
        opts.append("-lineinfo")
    opts += [f"-D{n}={v}" for n, v in experiment_defines()]
    return tuple(opts) + tuple(extra)


class Compiled:
    """One compiled kernel: cache key, cubin, NVRTC's symbol mapping, the
    ptxas log, arch and name expression.  Read-only by convention; a slotted
    class rather than a dataclass, whose creation costs ~1 ms at a first
    call's import (docs/notes/first-call.md)."""

    __slots__ = ("key", "cubin", "symbol_mapping", "log", "arch", "name_expression")

    def __init__(self, key: str, cubin: bytes, symbol_mapping: dict, log: str, arch: str,
                 name_expression: str):
        self.key, self.cubin, self.symbol_mapping = key, cubin, symbol_mapping
        self.log, self.arch, self.name_expression = log, arch, name_expression

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    __hash__ = None         # symbol_mapping is a dict, as it was for the dataclass

    def __repr__(self) -> str:
        return f"Compiled({self.name_expression!r}, {self.arch}, {len(self.cubin)} bytes)"

    def resources(self) -> dict:
        """Registers, spills, stack and shared memory that ptxas reported."""
        return parse_ptxas_log(self.log)


def cache_key(source: str, name_expression: str, arch: str,
              extra: tuple[str, ...] = (), debug: bool | None = None) -> str:
    debug = debug_enabled() if debug is None else debug
    parts = [str(CACHE_FORMAT), sources_digest(), source, name_expression, arch,
             "%d.%d" % nvrtc_version(), " ".join(_options(arch, debug, extra))]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def _enc(x) -> str:
    """Symbol-mapping keys/values are str or bytes depending on the cuda.core
    version; keep the type through JSON."""
    return "b:" + x.decode() if isinstance(x, bytes) else "s:" + str(x)


def _dec(x: str):
    return x[2:].encode() if x.startswith("b:") else x[2:]


def _read_entry(path: Path, key: str) -> Compiled | None:
    try:
        raw = path.read_bytes()
        head, _, cubin = raw.partition(b"\n")
        meta = json.loads(head)
        if meta.get("key") != key or hashlib.sha256(cubin).hexdigest() != meta.get("sha256"):
            return None
        if meta.get("meta_sha256") != _meta_digest(meta):
            return None
        symbols = {_dec(k): _dec(v) for k, v in meta["symbols"]}
        return Compiled(key, cubin, symbols, meta["log"], meta["arch"], meta["name"])
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def read_entry(path: Path, key: str) -> Compiled | None:
    """A cache (or bundle) entry, or None if missing, damaged or another key's."""
    return _read_entry(path, key)


def _meta_digest(meta: dict) -> str:
    """Checksum of the header itself (symbols, log, ...), so a damaged
    header is caught like a damaged cubin."""
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _write_entry(path: Path, c: Compiled) -> None:
    meta = {"key": c.key, "sha256": hashlib.sha256(c.cubin).hexdigest(),
            "symbols": [[_enc(k), _enc(v)] for k, v in c.symbol_mapping.items()],
            "log": c.log, "arch": c.arch, "name": c.name_expression}
    meta["meta_sha256"] = _meta_digest(meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".cubin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(meta).encode() + b"\n" + c.cubin)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_entry(path: Path, c: Compiled) -> None:
    """Write an entry atomically (sgemm.build fills the bundle with these)."""
    _write_entry(path, c)


# ---- the prebuilt bundle --------------------------------------------------------------
def bundle_dir() -> Path | None:
    """$SGEMM_BUNDLE_DIR, else the package's _bundle; None when SGEMM_BUNDLE=0."""
    if os.environ.get(BUNDLE_ENV, "1") in ("0", "off", "no"):
        return None
    env = os.environ.get(BUNDLE_DIR_ENV)
    return Path(env) if env else BUNDLE_DIR


_usable: dict[str, bool] = {}       # bundle directory -> its header matches this process


def _index_header(raw: bytes) -> dict:
    """index.json's fields before its "entries", which build.py writes
    last: the header decides whether the bundle is usable, and the
    thousands of entries (~400 KB for every arch) are not needed for that
    -- decoding them took ~2 ms of a first call on the CPU machine
    (docs/notes/first-call.md).  The whole index where it is laid out
    otherwise."""
    cut = raw.find(b'"entries":')
    if cut > 0:
        try:
            head = json.loads(raw[:cut].rstrip().rstrip(b",") + b"}")
            if all(f in head for f in ("cache_format", "nvrtc", "sources")):
                return head
        except ValueError:
            pass
    return json.loads(raw)


def _bundle_usable(path: Path) -> bool:
    """Whether the bundle at ``path`` was built for this cache format, by
    this NVRTC and from these sources (a bundle that was not is ignored;
    its keys could not match anyway: this only saves looking).  Read once
    per directory."""
    ok = _usable.get(str(path))
    if ok is None:
        try:
            head = _index_header((path / INDEX).read_bytes())
            ok = (head.get("cache_format") == CACHE_FORMAT
                  and head.get("nvrtc") == "%d.%d" % nvrtc_version()
                  and head.get("sources") == sources_digest())
        except (OSError, ValueError, AttributeError):
            ok = False
        _usable[str(path)] = ok
    return ok


def bundle_keys(path: Path | None = None) -> frozenset:
    """Keys the bundle at ``path`` (default bundle_dir()) holds; empty when
    there is none or it is not usable (``_bundle_usable``).  Reads the
    whole index: lookups (``bundled``, ``cached``) need only its header."""
    path = path if path is not None else bundle_dir()
    if path is None or not _bundle_usable(path):
        return frozenset()
    try:
        return frozenset(json.loads((path / INDEX).read_text())["entries"])
    except (OSError, ValueError, KeyError, TypeError):
        return frozenset()


def _in_bundle(key: str) -> Path | None:
    """Where the bundle's entry for ``key`` would be, if there is a usable
    bundle.  The entry's file is looked for by its name, the key, rather
    than in the index: an entry verifies itself on read (``read_entry``)."""
    path = bundle_dir()
    if path is None or not _bundle_usable(path):
        return None
    return path / f"{key}.cubin"


def bundled(key: str) -> Compiled | None:
    """The bundle's entry for a cache key, or None."""
    entry = _in_bundle(key)
    return None if entry is None else _read_entry(entry, key)


def forget_bundle() -> None:
    """Read the bundle's index again on next use (after a build)."""
    _usable.clear()


class _FileLock:
    """flock on a side file; no-op where fcntl is missing."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            import fcntl
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
        return False


_key_locks: dict[str, threading.Lock] = {}
_key_locks_guard = threading.Lock()
_memory: dict[str, Compiled] = {}


def _lock_for(key: str) -> threading.Lock:
    with _key_locks_guard:
        return _key_locks.setdefault(key, threading.Lock())


def nvrtc_compile(source_file: str, name_expression: str, arch: str,
                  extra: tuple[str, ...] = (), debug: bool | None = None) -> Compiled:
    """Compile one template instantiation to a cubin (no cache)."""
    from .device import ensure_imports
    ensure_imports()
    from cuda.core import Program, ProgramOptions

    debug = debug_enabled() if debug is None else debug
    path = KERNEL_DIR / source_file
    code = path.read_text()
    defines = list(experiment_defines())
    opts = ProgramOptions(arch=arch, std="c++17", include_path=[str(KERNEL_DIR)],
                          ptxas_options=["-v"], lineinfo=debug, name=source_file,
                          define_macro=defines or None)
    _check_nvrtc_version()
    key = cache_key(source_file, name_expression, arch, extra, debug)
    best, best_cost = None, None
    for _ in range(LOCAL_MEMORY_DRAWS):
        log = io.StringIO()
        try:
            prog = Program(code, "c++", options=opts)
            obj = prog.compile("cubin", name_expressions=(name_expression,), logs=log)
        except Exception as e:  # cuda.core raises its own error types; keep the log
            raise CompileError(f"NVRTC failed to compile {name_expression} from "
                               f"{source_file} for {arch}", log.getvalue() or str(e)) from None
        c = Compiled(key, bytes(obj.code), dict(obj.symbol_mapping), log.getvalue(), arch,
                     name_expression)
        cost = _local_memory(c)
        if best is None or cost < best_cost:
            best, best_cost = c, cost
        if cost == (0, 0):
            break
    return best


def _check_nvrtc_version() -> None:
    """Key what is compiled by the NVRTC that compiles it: where the version
    read from disk (``_nvrtc_version_on_disk``) differs from the loaded
    library's, take the library's from now on, and read the bundle's index
    again under it."""
    loaded = _nvrtc_version_loaded()
    if nvrtc_version() != loaded:
        _nvrtc[:] = [loaded]
        forget_bundle()


def _local_memory(c: Compiled) -> tuple[int, int]:
    """(spill bytes, stack bytes) of a ptxas report; (0, 0) is the goal."""
    r = c.resources()
    return ((r["spill_stores"] or 0) + (r["spill_loads"] or 0), r["stack"] or 0)


def compile_kernel(source_file: str, name_expression: str, arch: str,
                   extra: tuple[str, ...] = (), use_cache: bool = True) -> Compiled:
    """Cached compile: memory, then the bundle, then disk, then NVRTC.
    Thread- and process-safe."""
    debug = debug_enabled()
    key = cache_key(source_file, name_expression, arch, extra, debug)
    hit = _memory.get(key)
    if hit is not None:
        return hit
    with _lock_for(key):
        hit = _memory.get(key)
        if hit is not None:
            return hit
        path = cache_dir() / f"{key}.cubin"
        c = bundled(key) if use_cache else None
        if c is None and use_cache:
            c = _read_entry(path, key)
        if c is None and use_cache:
            try:
                with _FileLock(cache_dir() / f"{key}.lock"):
                    c = _read_entry(path, key)
                    if c is None:
                        c = nvrtc_compile(source_file, name_expression, arch, extra, debug)
                        if c.key != key:    # NVRTC's version was corrected by the compile
                            path = cache_dir() / f"{c.key}.cubin"
                        _write_entry(path, c)
                        if debug:
                            dump_sass(c, path.with_suffix(".sass"))
            except OSError as e:
                # An unusable cache directory costs speed, never correctness.
                _warn_cache(e)
        if c is None:
            c = nvrtc_compile(source_file, name_expression, arch, extra, debug)
        _memory[key] = c
        return c


def cached(source_file: str, name_expression: str, arch: str) -> bool:
    """Whether compile_kernel would answer without NVRTC (memory, bundle or
    disk cache): the measured choice times only kernels that load at once."""
    key = cache_key(source_file, name_expression, arch, (), debug_enabled())
    entry = _in_bundle(key)
    return (key in _memory or (entry is not None and entry.exists())
            or (cache_dir() / f"{key}.cubin").exists())


_warned: list[bool] = [False]


def _warn_cache(e: OSError) -> None:
    if not _warned[0]:
        _warned[0] = True
        import warnings
        warnings.warn(f"sgemm: kernel cache at {cache_dir()} is unusable ({e}); compiling "
                      f"without it (set {CACHE_ENV} to a writable directory)", stacklevel=3)


_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_REGS = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> dict:
    """{'registers', 'stack', 'spill_stores', 'spill_loads', 'smem'} of a
    ptxas -v log (one instantiation per compile).  A log can list several
    functions (a kernel and the non-inlined device functions it calls, such as
    the tensor-core kernels' Inf/NaN fallback): each field is the largest over
    all of them, so a spill anywhere is seen.  (It used to be the last listed
    function's, which let a spilling tensor-core kernel pass the CI check.)"""
    out = {"registers": None, "stack": None, "spill_stores": None, "spill_loads": None,
           "smem": 0}
    m = _RE_FRAME.findall(log)
    if m:
        frames = [tuple(map(int, f)) for f in m]
        out["stack"] = max(f[0] for f in frames)
        out["spill_stores"] = max(f[1] for f in frames)
        out["spill_loads"] = max(f[2] for f in frames)
    m = _RE_REGS.findall(log)
    if m:
        out["registers"] = max(map(int, m))
    m = _RE_SMEM.findall(log)
    if m:
        out["smem"] = max(map(int, m))
    return out


def dump_sass(c: Compiled, out: Path | None = None) -> str:
    """Disassemble with cuobjdump (or nvdisasm) when one is on PATH."""
    import shutil
    import subprocess

    tool = shutil.which("cuobjdump")
    if tool is None:
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(c.cubin)
        name = f.name
    try:
        sass = subprocess.run([tool, "-sass", name], capture_output=True, text=True,
                              check=False).stdout
    finally:
        os.unlink(name)
    if out is not None:
        out.write_text(sass)
    return sass
