"""Redraw the PDF paper's Figs. 2 and 3 from a pdf_vs_ws sweep and print the PDF/WS ratios.

    python experiments/pdf_vs_ws/make_figures.py [RESULTS] [-o FIGDIR]

RESULTS is the sweep's output folder (default: results/full beside this file if it has
rows, else results/small).  Writes into FIGDIR, by default ``figures/`` for results/full,
``figures/medium/`` for results/medium, and ``figures/NAME`` beside any other folder
(``results/figures/small/``), fig2_scaling.png (speedup and L2 misses against cores on
the itrs-scaling machines), fig3_45nm.png (execution time against cores on the itrs-45nm
machines, with the 10-26 core zoom), normalised_time.png, ratios.csv (per machine: PDF's
speedup over WS and its L2-miss reduction) and points.csv (one row per point: the columns
the figures and ratios are computed from), and prints the per-workload ranges as the paper
quotes them ([PDF07] §5.1-5.2).
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
from pathlib import Path

from simsched.experiments import study_results
from simsched.experiments.analysis import ratio_ranges, scheduler_ratios
from simsched.experiments.scripts import (
    CMP_COUNTS,
    default_figures,
    load_figure_rows,
    run_script,
    usage_error,
    write_csv,
    write_points,
)
from simsched.plotting import (
    figure_speedup_misses,
    figure_time_vs_cores,
    normalised_time_bars,
    save,
    style,
)

HERE = Path(__file__).resolve().parent


def miss_words(lo: float, hi: float) -> str:
    """A range of L2-miss reductions (fractions, negative: more misses) in words: a range
    on both sides of 0 read "-3.2%--1.0% fewer"."""
    if lo >= 0:
        return f"{100 * lo:.1f}%-{100 * hi:.1f}% fewer"
    if hi <= 0:
        return f"{-100 * hi:.1f}%-{-100 * lo:.1f}% more"
    return f"from {-100 * lo:.1f}% more to {100 * hi:.1f}% fewer"


WORKLOADS = ["mergesort", "hashjoin", "fib"]

#: A point's columns in points.csv: what the figures and ratios.csv read, and the counts
#: behind them.
POINT_COLUMNS = [
    "workload", "machine", "cores", "scheduler", "seed", "makespan_cycles",
    "baseline_makespan_cycles", "speedup", *CMP_COUNTS, "offchip_bytes", "utilization",
    "wall_s",
]  # fmt: skip


def default_results() -> Path:
    """results/full if it holds points, else results/small."""
    return study_results(HERE, "full")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", type=Path, default=None)
    ap.add_argument("-o", "--out", type=Path, default=None, help="folder for the figures")
    args = ap.parse_args()
    results = args.results or default_results()
    # the full run's figures are figures/, another study's (medium) figures/NAME
    own = HERE / "figures" if results.name == "full" else HERE / "figures" / results.name
    args.out = args.out or default_figures(results, HERE, own)
    df = load_figure_rows(results, HERE)
    present = [w for w in WORKLOADS if w in set(df["workload"])]
    if not present:
        usage_error(f"{results}: no runs of {', '.join(WORKLOADS)}: not a pdf_vs_ws sweep")
    save(figure_speedup_misses(df, present), args.out / "fig2_scaling.png")
    save(figure_time_vs_cores(df, present), args.out / "fig3_45nm.png")
    import matplotlib.pyplot as plt

    with style():
        fig, axes = plt.subplots(len(present), 1, figsize=(9, 3 * len(present)), squeeze=False)
        for ax, wl in zip(axes[:, 0], present, strict=True):
            normalised_time_bars(df[df["workload"] == wl], ax, title=wl)
        fig.tight_layout()
    save(fig, args.out / "normalised_time.png")

    ratios = scheduler_ratios(df)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(ratios, args.out / "ratios.csv", index=False)
    write_points(
        df,
        args.out / "points.csv",
        POINT_COLUMNS,
        ["workload", "cores", "machine", "scheduler", "seed"],
    )
    for family in ("itrs-scaling-", "itrs-45nm-"):
        part = ratios[ratios["machine"].str.startswith(family)]
        ranges = ratio_ranges(part)
        print(f"\n{family}* (2+ cores): PDF over WS")
        for r in ranges.itertuples():
            print(
                f"  {r.workload:10s} speedup {r.speedup_min:.3f}-{r.speedup_max:.3f}x, "
                f"L2 misses/instr {miss_words(r.miss_reduction_min, r.miss_reduction_max)} "
                f"({r.configs} machine{'' if r.configs == 1 else 's'})"
            )
    print(f"\nfigures, ratios.csv and points.csv in {args.out}")


if __name__ == "__main__":
    run_script(main)
