"""Redraw the PDF paper's Figs. 6 and 8 from the granularity sweeps and print the comparison.

    python experiments/granularity/make_figures.py [FIG6] [--auto AUTO] [-o FIGDIR]

Reads FIG6, the grain sweep's folder (mergesort at several grains, WS and PDF; default
``results/fig6``, or ``results/small/fig6`` of the small study when only that has run) and
AUTO, the automatic sweep's (the coarsened traces of prepare_auto.py; default ``auto``
beside FIG6, drawn when it has run).  FIGDIR defaults to ``figures/`` for ``results/fig6``
and to ``figures`` beside FIG6 for any other folder, so a small run does not overwrite the
committed figures of the full one.  Writes
``fig6_grain.png`` (L2 misses per 1000 instructions and execution time against the task
working set, 2 × grain × 4 bytes, one column per machine), ``fig8_auto.png`` (execution time
of the automatically coarsened program against the best manual grain, per machine and
scheduler, normalised to the best manual grain), ``summary.csv`` and the per-point tables
``points.csv`` (the grain sweep) and ``auto_points.csv`` (the automatic one: the columns
the figures are computed from, one row per point), and prints the numbers
the paper quotes ([PDF07] §5.4 and §6.2): PDF over WS when each gets its best
grain (paper: 1.17× at 32 cores), PDF's L2-miss reduction at the smallest grain (paper: fewer
than half WS's misses at 32 KB tasks), and the automatic grain's distance from the best manual
one (paper: within 5 %).
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
import sys
from pathlib import Path

import pandas as pd

from simsched.experiments import load_results
from simsched.experiments.scripts import (
    CMP_COUNTS,
    load_figure_rows,
    run_script,
    usage_error,
    write_csv,
    write_points,
)
from simsched.plotting import save, style

HERE = Path(__file__).resolve().parent
ELEM = 4  # bytes per key (the generator's default elem_size)


def _machine_short(label: str) -> str:
    return label.split("[", 1)[0]


#: A point's columns in points.csv and auto_points.csv: what the tables read, and the
#: counts behind them.
POINT_COLUMNS = [
    "machine", "cores", "scheduler", "seed", "workload.n", "workload.grain", "status",
    "makespan_cycles", *CMP_COUNTS, "utilization", "wall_s",
]  # fmt: skip
POINT_ORDER = ["cores", "scheduler", "workload.n", "workload.grain", "seed"]


def fig6_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds per (machine, scheduler, grain) of the Fig. 6 metrics."""
    ok = df[df["status"] == "ok"].copy()
    # a results folder may hold a --small run beside the full one: keep the largest input
    ok = ok[ok["workload.n"] == ok["workload.n"].max()]
    ok["machine"] = ok["machine"].map(_machine_short)
    ok["grain"] = ok["workload.grain"].astype(int)
    ok["task_ws_kb"] = 2 * ok["grain"] * ELEM / 1024
    cols = ["makespan_cycles", "mpki", "L2_misses", "instructions"]
    return (
        ok.groupby(["machine", "cores", "scheduler", "grain", "task_ws_kb"])[cols]
        .mean()
        .reset_index()
        .sort_values(["cores", "scheduler", "grain"])
    )


def auto_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds per (machine, scheduler) of the automatically coarsened runs."""
    ok = df[df["status"] == "ok"].copy()
    ok["machine"] = ok["machine"].map(_machine_short)
    return (
        ok.groupby(["machine", "cores", "scheduler"])[["makespan_cycles", "mpki"]]
        .mean()
        .reset_index()
    )


def draw_fig6(t: pd.DataFrame):
    import matplotlib.pyplot as plt

    machines = t.drop_duplicates("machine").sort_values("cores")["machine"].tolist()
    with style():
        fig, axes = plt.subplots(2, len(machines), figsize=(4 * len(machines), 6), squeeze=False)
        for j, m in enumerate(machines):
            part = t[t["machine"] == m]
            for sched, g in part.groupby("scheduler"):
                axes[0, j].plot(g["task_ws_kb"], g["mpki"], marker="o", label=sched)
                axes[1, j].plot(
                    g["task_ws_kb"], g["makespan_cycles"] / 1e6, marker="o", label=sched
                )
            for i in range(2):
                axes[i, j].set_xscale("log", base=2)
                axes[i, j].set_xlabel("task working set (KB)")
            axes[0, j].set_title(m)
            axes[0, j].set_ylabel("L2 misses / 1000 instructions")
            axes[1, j].set_ylabel("execution time (M cycles)")
            axes[0, j].legend()
        fig.suptitle("Mergesort: task granularity (PDF paper Fig. 6, caches / 32)")
        fig.tight_layout()
    return fig


def fig8_table(t6: pd.DataFrame, ta: pd.DataFrame) -> pd.DataFrame:
    """Best manual grain against the automatic one, per machine and scheduler."""
    best = t6.loc[t6.groupby(["machine", "scheduler"])["makespan_cycles"].idxmin()]
    best = best[["machine", "cores", "scheduler", "grain", "makespan_cycles"]].rename(
        columns={"grain": "best_grain", "makespan_cycles": "best_manual_cycles"}
    )
    out = best.merge(
        ta[["machine", "scheduler", "makespan_cycles"]].rename(
            columns={"makespan_cycles": "auto_cycles"}
        ),
        on=["machine", "scheduler"],
        how="left",
    )
    out["auto_over_best"] = out["auto_cycles"] / out["best_manual_cycles"]
    return out.sort_values(["cores", "scheduler"])


def draw_fig8(t8: pd.DataFrame):
    import matplotlib.pyplot as plt
    import numpy as np

    with style():
        fig, ax = plt.subplots(figsize=(7, 3.5))
        labels = [f"{m}\n{s}" for m, s in zip(t8["machine"], t8["scheduler"], strict=True)]
        x = np.arange(len(t8))
        ax.bar(x - 0.2, np.ones(len(t8)), width=0.4, label="best manual grain")
        ax.bar(x + 0.2, t8["auto_over_best"], width=0.4, label="automatic (regrained)")
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel("execution time / best manual")
        ax.axhline(1.05, color="grey", lw=0.8, ls="--")
        ax.legend()
        ax.set_title("Automatic task coarsening (PDF paper Fig. 8, middle bars)")
        fig.tight_layout()
    return fig


def default_fig6() -> Path:
    """results/fig6 if it holds points, else results/small/fig6 if that does (the small
    study, whose spec writes there), else results/fig6 (whose error says what to run)."""
    full, small = HERE / "results" / "fig6", HERE / "results" / "small" / "fig6"
    return small if not (full / "points").is_dir() and (small / "points").is_dir() else full


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fig6", nargs="?", type=Path, default=None, help="the grain sweep's folder")
    ap.add_argument("--auto", type=Path, default=None, help="the automatic sweep's folder")
    ap.add_argument("-o", "--out", type=Path, default=None, help="folder for the figures")
    args = ap.parse_args()
    fig6 = args.fig6 or default_fig6()
    full = fig6.resolve() == (HERE / "results" / "fig6").resolve()
    out = args.out or (HERE / "figures" if full else fig6.parent / "figures")
    if out.exists() and not out.is_dir():
        usage_error(f"-o {out}: not a folder (the figures are written into one)")
    rows = load_figure_rows(fig6, HERE)
    missing = [c for c in ("workload.n", "workload.grain") if c not in rows]
    if missing:
        # the automatic sweep's folder, or another study's, given for the grain sweep's
        usage_error(
            f"{fig6}: no column {missing[0]}: not the grain sweep (small.yaml, fig6.yaml); "
            "give the automatic one with --auto"
        )
    t6 = fig6_table(rows)
    if args.auto is not None:
        auto = load_figure_rows(args.auto, HERE)
        if "workload.grain" in auto:
            # its mean over every grain would have stood for the automatic grain
            usage_error(f"--auto {args.auto}: a grain sweep, not the automatic one (auto.yaml)")
    else:
        auto_dir = fig6.parent / "auto"
        auto = load_results(auto_dir) if (auto_dir / "points").is_dir() else pd.DataFrame()
    out.mkdir(parents=True, exist_ok=True)
    save(draw_fig6(t6), out / "fig6_grain.png")
    write_points(rows, out / "points.csv", POINT_COLUMNS, POINT_ORDER)
    print(t6.to_string(index=False))
    for m, part in t6.groupby("machine"):
        ws = part[part["scheduler"] == "ws"].set_index("grain")
        pdf = part[part["scheduler"] == "pdf"].set_index("grain")
        if ws.empty or pdf.empty:
            # a partly-run study: an empty argmin ended the script in a traceback
            ran = "WS" if pdf.empty else "PDF"
            print(f"{m}: only {ran} has run so far; PDF/WS needs both")
            continue
        g0 = int(part["grain"].min())
        l2 = (
            f"{pdf.loc[g0, 'L2_misses'] / ws.loc[g0, 'L2_misses']:.3f}"
            if g0 in ws.index and g0 in pdf.index
            else "n/a (not run by both yet)"
        )
        print(
            f"{m}: PDF/WS at their best grains {ws['makespan_cycles'].min() / pdf['makespan_cycles'].min():.3f}x "
            f"(best WS grain {int(ws['makespan_cycles'].idxmin())}, best PDF grain "
            f"{int(pdf['makespan_cycles'].idxmin())}); L2 misses PDF/WS at grain {g0}: {l2}"
        )
    if "status" in auto and (auto["status"] == "ok").any():  # a run point, not only failures
        t8 = fig8_table(t6, auto_table(auto))
        save(draw_fig8(t8), out / "fig8_auto.png")
        write_csv(t8, out / "summary.csv", index=False)
        write_points(auto, out / "auto_points.csv", POINT_COLUMNS, POINT_ORDER)
        print(t8.to_string(index=False))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    run_script(main)
