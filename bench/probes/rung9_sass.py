"""Probe (CPU, no GPU): what rung 9's main loop issues, read from its SASS;
and whether two kernel caches hold the same cubins.  Not part of the package.

    python bench/probes/rung9_sass.py mix [CONFIG[:u] ...]    # default: large; :u unaligned
    python bench/probes/rung9_sass.py same CACHE_A CACHE_B    # sgemm warmup's caches

mix: each layout of the config for sm_90a (aligned; unaligned with :u),
compiled as the library compiles it and disassembled by nvdisasm
($NVDISASM, else on PATH, else the
nvidia-cuda-nvdisasm wheel's); for every loop (a backward branch) with at
least 200 FFMAs: its instructions by opcode, the FFMA share, and the FFMAs
whose register operands not served by the reuse cache all sit in one of the
two register banks (register number mod 2), and the share of FFMAs that
mark an operand .reuse.  The counts are static (a loop's body, branches
into its k-tail included), not executed ones.

same: per name expression, whether the two cache directories' cubins have
the same SHA-256 (the entries' headers), split by canonical TA.
"""
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

INSN = re.compile(r"\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\.(L_x_\d+):")


def nvdisasm() -> str:
    found = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if found:
        return found
    import nvidia
    for root in nvidia.__path__:
        hits = glob.glob(os.path.join(root, "*", "bin", "nvdisasm"))
        if hits:
            return hits[0]
    sys.exit("nvdisasm not found: pip install nvidia-cuda-nvdisasm, or set NVDISASM")


def loops(sass: str):
    """(body instructions) of each backward branch's loop."""
    ins, at, label_at, pending = [], {}, {}, None
    for line in sass.splitlines():
        m = LABEL.match(line)
        if m:
            pending = m.group(1)
            continue
        m = INSN.match(line)
        if m:
            addr = int(m.group(1), 16)
            at[addr] = len(ins)
            ins.append(m.group(2))
            if pending:
                label_at[pending], pending = addr, None
    for i, text in enumerate(ins):
        m = re.search(r"BRA\s+`?\(?\.(L_x_\d+)", text)
        if m and m.group(1) in label_at and at[label_at[m.group(1)]] < i:
            yield ins[at[label_at[m.group(1)]]:i + 1]


def one_bank_flags(body) -> list:
    """Per FFMA of body: whether its operand reads (those the previous FFMA's
    .reuse does not serve) are two or more, all in one bank."""
    flags, prev = [], None
    for text in body:
        if not text.startswith("FFMA"):
            prev = None
            continue
        srcs = [re.match(r"-?\|?R(\d+)(\.reuse)?", s.strip())
                for s in text.split(None, 1)[1].split(",")[1:4]]
        cur = [(int(s.group(1)), bool(s.group(2))) if s else None for s in srcs]
        reads = set()
        for slot, x in enumerate(cur):
            cached = x and prev and prev[slot] and prev[slot][1] and prev[slot][0] == x[0]
            if x and not cached:
                reads.add(x[0])
        banks = [r % 2 for r in reads]
        flags.append(len(banks) >= 2 and len(set(banks)) == 1)
        prev = cur
    return flags


def one_bank(body) -> int:
    return sum(one_bank_flags(body))


def reused(body) -> float:
    """Share of FFMAs with at least one operand marked .reuse."""
    ffma = [t for t in body if t.startswith("FFMA")]
    return sum(".reuse" in t for t in ffma) / max(1, len(ffma))


def report(body) -> str:
    ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0]
                              for t in body)
    top = " ".join(f"{k} {v}" for k, v in ops.most_common(8))
    return (f"  loop: {len(body)} instructions, FFMA {ops['FFMA'] / len(body):.1%}, one-bank "
            f"FFMAs {one_bank(body)}, FFMAs reusing an operand {reused(body):.0%}; {top}")


def big_loops(sass: str):
    for body in loops(sass):
        if sum(t.startswith("FFMA") for t in body) >= 200:
            yield body


def mix(configs) -> None:
    from sgemm.kernels.registry import KERNELS
    from sgemm.runtime.compiler import compile_kernel
    spec, tool = KERNELS["double_buffer"], nvdisasm()
    for cfg in configs or ["large"]:
        cfg, _, unaligned = cfg.partition(":")      # "rect:u": the unaligned instantiations
        for ta in (False, True):
            for tb in (False, True):
                expr = spec.name_expression(spec.configs[cfg], ta, tb, not unaligned)
                c = compile_kernel(spec.source, expr, "sm_90a")
                with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                    f.write(c.cubin)
                    f.flush()
                    sass = subprocess.run([tool, "-c", f.name], capture_output=True,
                                          text=True, check=True).stdout
                print(f"{expr}: {c.resources()['registers']} registers")
                for body in big_loops(sass):
                    print(report(body))


def same(dir_a: str, dir_b: str) -> None:
    def shas(d):
        out = {}
        for path in glob.glob(os.path.join(d, "*.cubin")):
            with open(path, "rb") as f:
                head = json.loads(f.readline())
            out[head["symbols"][0][0][2:]] = head["sha256"]
        return out
    a, b = shas(dir_a), shas(dir_b)
    tally = collections.Counter()
    for name in sorted(set(a) & set(b)):
        ta = name[name.index("<") + 1:-1].split(",")[8].strip() == "true"
        tally["TA" if ta else "not TA", "same" if a[name] == b[name] else "differ"] += 1
    print(f"{len(a)} and {len(b)} cubins, {len(set(a) & set(b))} in both:",
          ", ".join(f"{k[0]} {k[1]} {v}" for k, v in sorted(tally.items())))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["mix"]:
        mix(args[1:])
    elif args[:1] == ["same"] and len(args) == 3:
        same(args[1], args[2])

    else:
        sys.exit(__doc__)
