"""The figures README.md gives for its two ``compare`` lines still come out of the code.

README.md's tour explains the mergesort line (``# see below``) and the multi-socket heat line
(``# multi-socket``) with measured makespans, miss counts, ratios and ranges.  These tests
make the traces with the README's own ``trace gen`` lines, run its ``compare`` lines, and
check every figure of the two paragraphs against what ``compare`` prints: a change of the
timing model that moves a number, or an edit of the README that changes or drops one, fails
them.  Both figures and commands are read from README.md, so neither side is written here.

They take about two minutes (three comparisons of 4-9 runs each), so they are opt-in:
``pytest -m slow tests/test_readme_numbers.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import private_cache
from tests.test_docs import ROOT, simsched_cli

README = ROOT / "README.md"

pytestmark = pytest.mark.slow


def readme_paragraph(start: str) -> str:
    """The README paragraph that begins with ``start``, its line breaks made spaces.

    Parameters
    ----------
    start
        The paragraph's first words.

    Returns
    -------
    str
        The paragraph with every run of white space as one space, so that a pattern does
        not depend on where the text is wrapped.
    """
    paragraphs = re.split(r"\n\s*\n", README.read_text(encoding="utf-8"))
    found = [p for p in paragraphs if p.startswith(start)]
    if len(found) != 1:
        pytest.fail(f"README.md: {len(found)} paragraphs begin with {start!r}, expected 1")
    return " ".join(found[0].split())


def readme_command(comment: str) -> list[str]:
    """The arguments of the README tour's ``simsched`` line whose comment is ``comment``."""
    lines = [
        line.split(" #")[0]
        for line in README.read_text(encoding="utf-8").splitlines()
        if line.startswith("simsched ") and line.split(" #", 1)[-1].strip() == comment
    ]
    if len(lines) != 1:
        pytest.fail(f"README.md: {len(lines)} `simsched` lines end in `# {comment}`, expected 1")
    return shlex.split(lines[0])[1:]


def option(args: list[str], *names: str) -> int | None:
    """Index in ``args`` of the value of the option spelled one of ``names``, if it has one."""
    where = [i for i, a in enumerate(args[:-1]) if a in names]
    return where[0] + 1 if len(where) == 1 else None


def value_of(args: list[str], *names: str) -> int:
    """:func:`option`, failing the test when the command does not give the option once."""
    at = option(args, *names)
    if at is None:
        pytest.fail(f"`simsched {shlex.join(args)}`: expected one {' or '.join(names)} VALUE")
    return at


def generator_of(trace: str) -> list[str]:
    """The arguments of the README's ``trace gen`` line that writes ``trace``."""
    found = []
    for line in README.read_text(encoding="utf-8").splitlines():
        args = shlex.split(line.split(" #")[0])[1:] if line.startswith("simsched ") else []
        at = option(args, "-o", "--out")
        if args[:2] == ["trace", "gen"] and at is not None and args[at] == trace:
            found.append(args)
    if len(found) != 1:
        pytest.fail(f"README.md: {len(found)} `simsched trace gen` lines write {trace}, expected 1")
    return found[0]


def simsched(args: list[str], cwd: Path) -> str:
    """Run ``simsched ARGS`` in ``cwd`` and return its output.

    The simsched cache is a fresh one in ``cwd`` that shares only the compiled kernels, so
    no baseline cached by another version of the code enters the numbers.
    """
    cache = cwd / "cache"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SIMSCHED_CACHE_DIR": str(cache if cache.exists() else private_cache(cache)),
    }
    res = simsched_cli(args, cwd, env)
    assert res.returncode == 0, f"`simsched {shlex.join(args)}`: {res.stderr}"
    return res.stdout


def compare(args: list[str], cwd: Path) -> dict[str, Any]:
    """Make the trace of ``compare ARGS`` as README.md does, then run it with ``--json``."""
    trace = args[value_of(args, "-t", "--trace")]
    if not (cwd / trace).exists():
        simsched(generator_of(trace), cwd)
    return json.loads(simsched([*args, "--json"], cwd))


def cycles(v: float) -> str:
    """A count as ``compare``'s table prints a mean: rounded to a whole, with commas."""
    return f"{v:,.0f}"


def mean(summary: dict[str, Any], key: str) -> float:
    """The mean of ``key`` in one scheduler's ``summary`` of ``compare --json``."""
    return summary[key]["mean"]


def shown(summary: dict[str, Any], key: str) -> str:
    """That mean as ``compare``'s table shows it (:func:`cycles`)."""
    return cycles(mean(summary, key))


def millions(v: float) -> str:
    """``7.4`` for 7,401,358: the README's ``7.4 M``."""
    return f"{v / 1e6:.1f}"


def percent(v: float) -> str:
    """``56`` for 0.563: the README's ``56 %`` (rounded as the demo's ``fewer`` is)."""
    return f"{v:.0%}".removesuffix("%")


def check_figures(text: str, figures: list[tuple[str, str, tuple[str, ...]]]) -> None:
    """Check that each figure stands once in ``text`` and equals what was measured.

    Parameters
    ----------
    text
        A README paragraph (:func:`readme_paragraph`).
    figures
        ``(name, pattern, measured)``: the pattern's groups are the README's figures,
        ``measured`` the same figures printed from the runs.

    Every figure is checked before the test fails, so one run names every stale number.
    """
    wrong = []
    for name, pattern, measured in figures:
        hits = re.findall(pattern, text)
        if len(hits) != 1:
            wrong.append(f"{name}: {len(hits)} matches of /{pattern}/ in the README, expected 1")
            continue
        stated = hits[0] if isinstance(hits[0], tuple) else (hits[0],)
        if stated != measured:
            wrong.append(f"{name}: README says {', '.join(stated)}, measured {', '.join(measured)}")
    assert not wrong, "README.md's figures and the code disagree:\n  " + "\n  ".join(wrong)


def test_readme_mergesort_figures(tmp_path):
    """The ``# see below`` line: WS and PDF on itrs-45nm-24, then on itrs-scaling-16."""
    text = readme_paragraph("What the `compare` line shows")
    args = readme_command("see below")
    big = compare(args, tmp_path)
    small_l2 = re.findall(r"On `([\w.-]+)`, whose", text)
    if len(small_l2) != 1:
        pytest.fail("README.md no longer names the machine whose L2 holds all of ms.sst")
    args[value_of(args, "-m", "--machine")] = small_l2[0]
    fits = compare(args, tmp_path)
    ws, pdf = big["summary"]["ws"], big["summary"]["pdf"]
    ws16, pdf16 = fits["summary"]["ws"], fits["summary"]["pdf"]

    check_figures(
        text,
        [
            (
                "WS seeds",
                r"work stealing \(mean of (\d+) seeds\)",
                (str(ws["makespan_cycles"]["n"]),),
            ),
            (
                "WS cycles and L2 misses",
                r"takes ([\d,]+) cycles and ([\d,]+) L2 misses, parallel",
                (shown(ws, "makespan_cycles"), shown(ws, "L2_misses")),
            ),
            (
                "PDF cycles and L2 misses",
                r"depth-first ([\d,]+) cycles and ([\d,]+) L2 misses",
                (shown(pdf, "makespan_cycles"), shown(pdf, "L2_misses")),
            ),
            # Ratios of the means, as the demo's "PDF over WS" line computes them.
            (
                "PDF's speed-up and fewer misses",
                r"PDF ([\d.]+)× faster with (\d+) % fewer L2 misses",
                (
                    f"{mean(ws, 'makespan_cycles') / mean(pdf, 'makespan_cycles'):.2f}",
                    percent(1 - mean(pdf, "L2_misses") / mean(ws, "L2_misses")),
                ),
            ),
            # One figure for two schedulers: a set, so that two values show as two.
            (
                "compulsory misses of WS and PDF",
                r"both schedulers take exactly the ([\d,]+) compulsory misses",
                tuple({shown(ws16, "L2_misses"), shown(pdf16, "L2_misses")}),
            ),
            (
                "PDF's and WS's cycles where the L2 holds the data",
                r"PDF is no faster \(([\d,]+) against ([\d,]+) cycles\)",
                (
                    shown(pdf16, "makespan_cycles"),
                    shown(ws16, "makespan_cycles"),
                ),
            ),
        ],
    )
    # "PDF is no faster" and "`compare` says why in a note" are claims without a figure.
    assert mean(pdf16, "makespan_cycles") >= mean(ws16, "makespan_cycles"), "PDF is faster"
    codes = [n["code"] for n in fits["notes"]]
    assert "compulsory-misses" in codes, f"no note says the misses are compulsory: {codes}"


def test_readme_heat_figures(tmp_path):
    """The ``# multi-socket`` line: WS, CAB and LAWS on opteron-8380-4x4."""
    text = readme_paragraph("The multi-socket line")
    got = compare(readme_command("multi-socket"), tmp_path)
    ws, cab, laws = (got["summary"][name] for name in ("ws", "cab", "laws"))
    first = {r["scheduler"]: r for r in got["runs"] if r["seed"] == 0}

    def ratio(s: dict[str, Any]) -> float:
        return mean(s, "makespan_cycles") / mean(ws, "makespan_cycles")

    span = "makespan_cycles"
    check_figures(
        text,
        [
            (
                "seeds, WS cycles, L3 misses and remote lines",
                r"Measured \(mean of (\d+) seeds\): WS ([\d,]+) cycles, ([\d,]+) L3 misses, "
                r"([\d,]+) remote DRAM lines",
                (
                    str(ws[span]["n"]),
                    shown(ws, span),
                    shown(ws, "L3_misses"),
                    shown(ws, "dram_remote"),
                ),
            ),
            (
                "LAWS's L3 misses and remote lines",
                r"LAWS ([\d,]+) L3 misses and ([\d,]+) remote lines",
                (shown(laws, "L3_misses"), shown(laws, "dram_remote")),
            ),
            (
                "LAWS's time saved and cycles",
                r"only (\d+) % less time, ([\d,]+) cycles",
                (percent(1 - ratio(laws)), shown(laws, span)),
            ),
            (
                "LAWS's and WS's range over seeds",
                r"seeds from ([\d.]+) M to ([\d.]+) M, against WS's ([\d.]+) M to ([\d.]+) M",
                tuple(millions(s[span][k]) for s in (laws, ws) for k in ("min", "max")),
            ),
            (
                "useful prefetches of WS and LAWS, seed 0",
                r"\(([\d.]+) M useful prefetches under either policy, seed 0\)",
                tuple({millions(first[name]["prefetch_useful"]) for name in ("ws", "laws")}),
            ),
            (
                "CAB's boundary level, cycles and ratio to WS",
                r"CAB \(boundary level (\d+)\) takes ([\d,]+) cycles, ([\d.]+)× WS's time",
                (
                    ",".join(
                        sorted({str(r["bl"]) for r in got["runs"] if r["scheduler"] == "cab"})
                    ),
                    shown(cab, span),
                    f"{ratio(cab):.2f}",
                ),
            ),
        ],
    )
