"""Rewrite generated tables between HTML-comment markers in Markdown files.

    <!-- sgemm:ladder-table:start -->
    ...replaced by the ladder table...
    <!-- sgemm:ladder-table:end -->

    <!-- sgemm:table:NAME:start -->  ...  <!-- sgemm:table:NAME:end -->

NAME is one of report.TABLES ('ladder', 'results', 'speedup-numpy',
'accuracy') or 'rung-<id|name>' (one rung's numbers, for docs/kernels.md).
The markers stay; only what lies between them changes, so a rewrite is
idempotent and hand-written text around the tables is never touched.
"""
from __future__ import annotations

import re
from pathlib import Path

from . import report

_MARK = re.compile(
    r"(?P<start><!--\s*sgemm:(?P<key>ladder-table|table:(?P<name>[A-Za-z0-9_.-]+))"
    r":start\s*-->)(?P<body>.*?)(?P<end><!--\s*sgemm:(?P=key):end\s*-->)",
    re.DOTALL)


def rewrite(text: str, render) -> tuple[str, list[str], list[str]]:
    """Replace every marked block with ``render(name)`` (a Markdown string, or
    None to leave the block alone).  Returns (text, names rewritten, names
    unknown)."""
    done, unknown = [], []

    def sub(m):
        name = "ladder" if m.group("key") == "ladder-table" else m.group("name")
        body = render(name)
        if body is None:
            unknown.append(name)
            return m.group(0)
        done.append(name)
        return f"{m.group('start')}\n{body.strip()}\n{m.group('end')}"

    return _MARK.sub(sub, text), done, unknown


def markers(text: str) -> list[str]:
    return ["ladder" if m.group("key") == "ladder-table" else m.group("name")
            for m in _MARK.finditer(text)]


def update_file(path: str | Path, doc) -> tuple[list[str], list[str]]:
    """Rewrite the tables in one file in place (only if something changed)."""
    p = Path(path)
    text = p.read_text()
    new, done, unknown = rewrite(text, lambda name: report.markdown(doc, name))
    if new != text:
        p.write_text(new)
    return done, unknown
