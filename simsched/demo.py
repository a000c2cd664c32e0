"""The README's main job: replay the bundled mergesort trace under WS and PDF.

``python -m simsched.demo [--out DIR]`` (what ``make demo`` runs) replays
``traces/samples/mergesort-131072-512.synthetic.sst`` on the 16-core ITRS chip of the PDF
paper ([PDF07] Table 2) under work stealing (three seeds) and parallel
depth-first, prints the comparison, and writes a figure of both schedules.

The bundled trace sorts 512 KB of keys so the demo runs in seconds; the chip's 20 MB L2
would hold all of it and the two schedulers would only differ by cold misses.  The demo
therefore scales the L2 by 1/32 (640 KB, same associativity, line and latency), which keeps
the ratio of working set to cache of the paper's experiments (§5.1: inputs larger than the
L2).  Every run's resolved config, result record and timeline are written under ``--out``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.figure import Figure

    from simsched.api import RunResult
    from simsched.trace import Trace

DEMO_TRACE = "mergesort-131072-512.synthetic.sst"
MACHINE = "itrs-scaling-16"
OVERRIDES = {"caches.L2.size": "640KB"}
WS_SEEDS = 3


def _trace_path() -> Path:
    here = Path(__file__).resolve().parents[1] / "traces" / "samples" / DEMO_TRACE
    if here.exists():
        return here
    # installed without the source tree: make the same trace (deterministic generator)
    from simsched.workloads import generate

    out = Path.cwd() / DEMO_TRACE
    if not out.exists():
        print(f"generating {out.name} (bundled trace not found)", file=sys.stderr)
        generate("mergesort", out, n=131072, grain=512)
    return out


def _subtrees(t: Trace, groups: int) -> np.ndarray:
    """Colour key: the shallowest level at which no subtree holds more than 2/groups of the work."""
    import numpy as np

    from simsched.plotting.timeline import subtree_of_frames

    parent, level = t.frames.parent, t.frames.level
    work = np.bincount(t.strands.frame, weights=t.strands.instr, minlength=len(parent))
    sub = subtree_of_frames(parent, level, at_level=1)
    for lv in range(1, int(level.max()) + 1):
        sub = subtree_of_frames(parent, level, at_level=lv)
        inside = sub >= 0
        per = np.bincount(sub[inside], weights=work[inside], minlength=len(parent))
        if per.max() <= 2 * work.sum() / groups:
            break
    return sub


def parallel_start(arrays: dict[str, np.ndarray], subtree: np.ndarray) -> int:
    """First cycle of the parallel region: the start of the first strand that belongs to a
    subtree (everything before it is the program's serial start-up)."""
    import numpy as np

    inside = subtree[np.asarray(arrays["frame"])] >= 0
    return int(np.asarray(arrays["start"])[inside].min()) if inside.any() else 0


def demo_figure(t: Trace, runs: dict[str, list[RunResult]]) -> Figure:
    """The demo's figure: the parallel region of WS's first seed and of PDF, strands by core
    coloured by subtree, above a bar panel of L2 misses (WS: mean and range over its seeds).

    The x axis starts where the parallel region does: mergesort's serial start-up (making
    the input) is the same under both schedulers and would otherwise take much of the width.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import StrMethodFormatter

    from simsched.plotting.figures import style
    from simsched.plotting.timeline import plot_timeline

    subtree = _subtrees(t, groups=16)
    ws, pdf = runs["ws"], runs["pdf"]
    shown = (("ws", ws[0]), ("pdf", pdf[0]))
    arrays = {name: r.timeline_arrays() for name, r in shown}
    left = min(parallel_start(a, subtree) for a in arrays.values())
    right = max(int(r.record["makespan_cycles"]) for _, r in shown)
    with style():
        fig = Figure(figsize=(11, 9.5))
        grid = fig.add_gridspec(3, 1, height_ratios=[3, 3, 1.3])
        top = fig.add_subplot(grid[0])
        axes = (top, fig.add_subplot(grid[1], sharex=top))
        for ax, (name, r) in zip(axes, shown, strict=True):
            rec = r.record
            which = (
                f"seed {rec['seed']}, one of the {len(ws)} seeds the table averages"
                if name == "ws"
                else "deterministic: one run"
            )
            plot_timeline(
                arrays[name],
                subtree=subtree,
                ax=ax,
                title=(
                    f"{name.upper()} ({which}): {rec['makespan_cycles']:,} cycles, "
                    f"{rec['L2_misses']:,} L2 misses"
                ),
            )
        top.set_xlim(left - (right - left) * 0.01, right)
        top.set_xlabel("")
        for ax in axes:  # whole cycle numbers: an offset ("1e6") would collide with the label
            ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        serial = 100 * left / ws[0].record["makespan_cycles"]
        axes[1].set_xlabel(
            f"cycle (from {left:,}; the serial start-up before it, {serial:.0f} % of the WS "
            "run, is the same under both and not drawn)"
        )
        _miss_bars(fig.add_subplot(grid[2]), ws, pdf)
        fig.suptitle(
            f"{t.header.program} n=131072 on {MACHINE}, L2 {OVERRIDES['caches.L2.size']}: "
            "the parallel region, strands by core, coloured by subtree"
        )
        fig.tight_layout()
    return fig


def _miss_bars(ax: Any, ws: list[RunResult], pdf: list[RunResult]) -> None:
    """Horizontal bars of L2 misses: WS's mean with its range over seeds, and PDF's."""
    w = [int(r.record["L2_misses"]) for r in ws]
    p = [int(r.record["L2_misses"]) for r in pdf]
    mean_w, mean_p = statistics.fmean(w), statistics.fmean(p)
    ax.barh(
        [1, 0],
        [mean_w, mean_p],
        xerr=[[mean_w - min(w), mean_p - min(p)], [max(w) - mean_w, max(p) - mean_p]],
        color=["tab:blue", "tab:orange"],
        height=0.6,
        capsize=3,
    )
    ax.set_yticks([1, 0], [f"WS (mean of {len(w)} seeds, range)", "PDF"])
    ax.set_xlabel("L2 misses")
    ax.set_xlim(0, max(max(w), max(p)) * 1.25)
    change = 100 * (mean_p / mean_w - 1)
    ax.annotate(
        f"{mean_p:,.0f}  ({change:+.0f} % vs WS)",
        (mean_p, 0),
        xytext=(6, 0),
        textcoords="offset points",
        va="center",
        fontsize=9,
    )
    ax.annotate(
        f"{mean_w:,.0f}", (max(w), 1), xytext=(6, 0), textcoords="offset points", va="center"
    )
    ax.set_title("L2 misses: the difference the schedules make", fontsize="medium")


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m simsched.demo", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--out", type=Path, default=Path("demo-out"), help="output folder")
    args = ap.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    from rich.console import Console
    from rich.table import Table

    import simsched
    from simsched.files import atomic_output, make_output_dir
    from simsched.trace import open_trace

    console = Console(width=120)
    out: Path = args.out
    make_output_dir(out)
    trace = _trace_path()
    t = open_trace(trace)
    h = t.header
    console.print(
        f"[bold]simsched demo[/bold]: {h.program} {' '.join(h.args)} — {h.n_strands:,} strands, "
        f"{h.n_refs:,} references ({trace.name})"
    )
    console.print(
        f"machine: {MACHINE} (PDF paper Table 2) with the L2 scaled to "
        f"{OVERRIDES['caches.L2.size']}"
    )
    runs: dict[str, list[RunResult]] = {"ws": [], "pdf": []}
    t0 = time.perf_counter()
    for sched, seeds in (("ws", range(WS_SEEDS)), ("pdf", range(1))):
        for seed in seeds:
            r = simsched.run(
                t,
                MACHINE,
                sched,
                seed=seed,
                overrides=OVERRIDES,
                out_dir=out / f"{sched}-seed{seed}",
            )
            runs[sched].append(r)
            rec = r.record
            console.print(
                f"  {sched:3s} seed {seed}: {rec['makespan_cycles']:>12,} cycles, "
                f"L2 misses {rec['L2_misses']:>8,}  ({rec['wall_s']:.1f} s)"
            )

    walls = [r.record["wall_s"] for rs in runs.values() for r in rs]
    if len(walls) > 1 and walls[0] - statistics.median(walls[1:]) > 2.0:
        # Numba compiles on first use unless its cache has the kernels already.
        console.print(
            f"  (the first run included compiling the simulator's kernels, about "
            f"{walls[0] - statistics.median(walls[1:]):.0f} s; later runs reuse them)"
        )

    def mean(name: str, key: str) -> float:
        return statistics.fmean(r.record[key] for r in runs[name])

    table = Table(
        title=f"{h.program} on {MACHINE} (L2 {OVERRIDES['caches.L2.size']}), mean over seeds"
    )
    cols = [
        ("makespan (cycles)", "makespan_cycles", "{:,.0f}"),
        ("speedup vs 1 core", "speedup", "{:.2f}"),
        ("L1 misses", "L1_misses", "{:,.0f}"),
        ("L2 misses", "L2_misses", "{:,.0f}"),
        ("L2 mpki", "mpki", "{:.3f}"),
        ("off-chip MB", "offchip_bytes", "{:.1f}"),
        ("mem. util.", "mem_utilization", "{:.1%}"),
        ("steals", "steals", "{:,.0f}"),
    ]
    table.add_column("scheduler")
    table.add_column("runs", justify="right")
    for title, _, _ in cols:
        table.add_column(title, justify="right")
    for name in ("ws", "pdf"):
        cells = []
        for _, key, f in cols:
            v = mean(name, key)
            cells.append(f.format(v / 2**20 if key == "offchip_bytes" else v))
        table.add_row(name, str(len(runs[name])), *cells)
    console.print(table)
    speed = mean("ws", "makespan_cycles") / mean("pdf", "makespan_cycles")
    fewer = 1 - mean("pdf", "L2_misses") / mean("ws", "L2_misses")
    console.print(
        f"PDF over WS: {speed:.2f}x faster, {fewer:.0%} fewer L2 misses "
        f"(the PDF paper reports 1.03-1.19x and 13-41 % fewer L2 misses for mergesort)"
    )

    fig = demo_figure(t, runs)
    fig_path = out / "timeline.png"
    with atomic_output(fig_path) as tmp:
        fig.savefig(tmp, dpi=110)
    t.close()
    console.print(
        f"wrote {fig_path} and run records under {out}/ ({time.perf_counter() - t0:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    from simsched.errors import SimschedError

    try:
        sys.exit(main())
    except SimschedError as exc:
        print(f"simsched demo: error: {exc}", file=sys.stderr)
        sys.exit(2)
