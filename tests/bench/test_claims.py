"""The claim list (sgemm/bench/claims.py) against the committed results:
every claimed file exists, every file is claimed, and the generated README
table, docs tables and index are what `sgemm results` would write."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sgemm.bench import claims

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "sgemm", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


def test_every_claimed_file_exists():
    assert claims.missing_files(ROOT) == []


def test_every_result_file_backs_a_claim():
    """bench/results/ holds evidence for claims only (history lives in git)."""
    assert claims.stray_files(ROOT) == []


def test_keys_unique_and_cited():
    keys = [c.key for c in claims.CLAIMS]
    assert len(keys) == len(set(keys))
    for c in claims.CLAIMS:
        assert c.files and c.command and c.cited_in, c.key
        assert all("/" not in f for f in c.files), c.key


def test_readme_values_are_one_number():
    ev = claims.Evidence(ROOT)
    one = re.compile(r"^-?\d+(\.\d+)?( ?(×|%|µs|ms|s))?$|^\d+ of \d+$")
    for c in claims.CLAIMS:
        if c.in_readme:
            assert one.match(c.value(ev)), (c.key, c.value(ev))


def test_generated_text_is_up_to_date():
    """README.md, docs/accuracy.md, docs/reliability.md, docs/dispatch.md and
    bench/results/README.md match the committed results: run `sgemm results`."""
    assert claims.update(ROOT, check=True) == []


_NAME = re.compile(r"[\w.-]+-(?:h100|h200|cpu)(?:x\d+)?-[\w.-]*2026-[\w.{},*-]+"
                   r"|[\w.-]+-2026-\d\d-\d\d[\w.{},*-]*\.(?:json|log|png)")


def _uncited(doc: Path) -> list[str]:
    """Results files named in ``doc`` that are not in bench/results/."""
    present = {p.name for p in (ROOT / claims.RESULTS).iterdir()}
    text = doc.read_text()
    out = []
    for m in _NAME.finditer(text):
        n = m.group(0).rstrip(".")
        if "{" in n or "*" in n or text[:m.start()].endswith("anchors/"):
            continue
        if n not in present:
            out.append(n)
    return out


def test_readme_and_docs_cite_existing_results():
    """Every results file named in README.md, CONTRIBUTING.md or a reference
    doc is in the tree (docs/notes/ is the worklog: history may name files
    that git history keeps)."""
    docs = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    for doc in docs:
        if doc.exists():
            assert _uncited(doc) == [], f"{doc.name} cites files not in bench/results/"


def test_compress_and_gpu_names():
    assert claims.compress(["j-x-a.json", "j-x-b.json", "j-x-c.json"]) == "j-x-{a,b,c}.json"
    assert claims.compress(["only.json"]) == "only.json"
    assert claims.gpu_of("judge-h100-2026-11-25-a.json") == "H100"
    assert claims.gpu_of("distributed-h200x4-2026-11-22.json") == "4 × H200"
    assert claims.gpu_of("fuzz-cpu-2026-11-21.log") == "CPU"


def test_pytest_counts():
    assert claims.pytest_counts("....\n18 failed, 572 passed in 206.09s (0:03:26)\n") == \
        {"failed": 18, "passed": 572}
    assert claims.pytest_counts("x\n1535 passed, 6 skipped, 852 deselected in 398s\n") == \
        {"passed": 1535, "skipped": 6, "deselected": 852}


def test_update_rewrites_only_marked_blocks(tmp_path):
    shutil.copytree(ROOT / claims.RESULTS, tmp_path / claims.RESULTS)
    (tmp_path / "README.md").write_text("Intro.\n<!-- sgemm:table:claims:start -->\nold\n"
                                        "<!-- sgemm:table:claims:end -->\n"
                                        "<!-- sgemm:ladder-table:start -->\nkeep\n"
                                        "<!-- sgemm:ladder-table:end -->\nOutro.\n")
    (tmp_path / claims.INDEX).unlink()
    assert set(claims.update(tmp_path, check=True)) == {"README.md", str(claims.INDEX)}
    assert "old" in (tmp_path / "README.md").read_text()          # --check wrote nothing
    claims.update(tmp_path)
    text = (tmp_path / "README.md").read_text()
    assert "old" not in text and "keep" in text and "Intro." in text and "Outro." in text
    assert "| claim | value | GPU | evidence |" in text
    assert claims.update(tmp_path, check=True) == []               # idempotent


def test_cli_results_check_and_version(tmp_path):
    r = _run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"sgemm {__import__('sgemm').__version__}"
    r = _run("results", "--check", "--root", str(ROOT))
    assert r.returncode == 0, r.stdout + r.stderr
    shutil.copytree(ROOT / claims.RESULTS, tmp_path / claims.RESULTS)
    (tmp_path / claims.RESULTS / claims.JUDGE[0]).unlink()
    r = _run("results", "--root", str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("sgemm results:") and claims.JUDGE[0] in r.stderr


@pytest.mark.parametrize("args", [["--help"], ["results", "--help"]])
def test_python_dash_m_is_the_command(args):
    r = _run(*args)
    assert r.returncode == 0 and "usage: sgemm" in r.stdout


def test_judge_categories_table_counts_every_problem():
    """docs/dispatch.md's table: one row per category of the scorecard's
    judges plus "all", whose count of problems under 0.9 is the sum of the
    categories' and whose size is every problem of every seed."""
    table = claims.judge_categories_table(claims.Evidence(ROOT))
    rows = [line.split("|")[1:-1] for line in table.splitlines()
            if line.startswith("| ") and " of " in line]
    ev = claims.Evidence(ROOT)
    seeds = [ev.json(f) for f in claims.JUDGE]
    cats = {r["cat"] for d in seeds for r in d["rows"]}
    assert [r[0].strip() for r in rows] == sorted(cats) + ["all"]
    under, n = zip(*(map(int, r[-1].split(" of ")) for r in rows))
    assert sum(under[:-1]) == under[-1] and sum(n[:-1]) == n[-1]
    assert n[-1] == sum(len(d["rows"]) for d in seeds)
