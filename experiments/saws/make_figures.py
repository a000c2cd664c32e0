"""Redraw [SAWS12] Figs. 4, 7, 8 and 9 from the SAWS study and print the paper's comparisons.

    python experiments/saws/make_figures.py [--small | --published] [-o FIGDIR]
    python experiments/saws/make_figures.py RESULTS... [-o FIGDIR]

Fig. 4 is replayed here (``fig4.yaml``, two seconds); Figs. 7-9 are read from the sweeps'
result stores (``results/fig7``, ``fig8``, ``fig9``; with ``--small``, ``results/small``,
whose two workloads have Fig. 8's and Fig. 9's shapes), each with its per-point table
(``fig7_points.csv`` ...: the columns its figure and JSON line are computed from).  The
figures go to ``figures/``
(with ``--small``, to ``results/figures/small/``, leaving the full run's alone) or FIGDIR.
Prints one JSON line per figure:
Fig. 4's desire sequences, and for Figs. 8-9 SAWS's improvement over A-Steal and WS-EQUI
in mean response time, utilisation and makespan (``(other - saws) / other`` for times,
``(saws - other) / other`` for utilisation, averaged over the x-axis points and seeds),
per machine (caches on, caches off) — the numbers [SAWS12] §5.2 quotes for Fig. 9.
With ``--published``, reads ``results/published`` (ten job mixes at published job
lengths, three seeds) into ``figures/published/fig9.png``, ``points.csv`` and
``job_desires.csv`` (each job's median desire) and prints SAWS's improvements with a 95 %
t interval over the mixes (each mix's mean over its seeds is one sample), the median and
90th percentile of the jobs' median desires, then the same, all lambdas together, for each core-move cost of
``results/published_moves`` (seed 0) if it was run.  Sweep folders given by name
(a spec run with ``--set out=...``) are drawn by their spec's name (``saws_fig9`` draws
Fig. 9), into ``figures/NAME`` beside the folder or FIGDIR.
The notebook ``notebooks/saws.ipynb`` uses these functions.
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.experiments.scripts import (
    default_figures,
    json_line,
    load_figure_rows,
    run_script,
    usage_error,
    write_points,
)

HERE = Path(__file__).resolve().parent
MS_EQ = 5_000  # cycles per ms-equivalent (make_jobsets.py)
METRICS = {
    "makespan_cycles": "makespan (cycles)",
    "mean_response_cycles": "mean response time (cycles)",
    "utilization": "utilisation",
}
ORDER = ["saws", "asteal", "ws-equi"]
#: The published study's per-point table (``figures/published/points.csv``).
POINT_COLUMNS = [
    "mix", "lam", "sched", "seed", "makespan_cycles", "mean_response_cycles",
    "utilization", "machine_utilization", "reallocations", "core_moves", "move_cycles",
    "refs", "wall_s",
]  # fmt: skip
#: The scaled figures' per-point tables (``figures/fig7_points.csv`` ...), beside their keys.
SCALED_COLUMNS = [
    "makespan_cycles", "mean_response_cycles", "utilization", "machine_utilization",
    "reallocations", "core_moves", "refs", "wall_s",
]  # fmt: skip


def fig4(machine: str = "sunfire-x4600-8x4") -> dict[str, Any]:
    """Replay ``fig4.yaml`` under DEQ; the multi-job record (SAWS job 0, A-Steal job 1)."""
    import simsched

    return simsched.run_jobs(HERE / "fig4.yaml", machine, controller="deq").record


def fig4_summary(rec: dict[str, Any]) -> dict[str, Any]:
    """Desire per quantum of both jobs and how SAWS settles (Fig. 4)."""
    out: dict[str, Any] = {"figure": "fig4", "N": 10}
    for j in rec["jobs"]:
        d = [round(x, 3) for x in j["quantum_desires"]]
        out[j["name"]] = {"desires": d, "response_cycles": j["response_cycles"]}
    return out


def load(study: str | Path) -> pd.DataFrame:
    """Successful rows of ``results/<study>`` (or of the sweep folder ``study``) with the
    x-axis columns parsed from names."""
    folder = study if isinstance(study, Path) else HERE / "results" / study
    df = load_figure_rows(folder, HERE, schedulers=ORDER)
    df["sched"] = df["scheduler_name"]
    parsed = df["workload"].map(_parse)
    for key in ("program", "copies", "quantum_ms", "lam", "mix"):
        df[key] = parsed.map(lambda p, k=key: p.get(k))
    return df


def _parse(name: str) -> dict[str, Any]:
    if m := re.fullmatch(r"mix(\d+)-lambda-(\d+)(?:_(\d+))?", name):
        return {"program": "mix", "mix": int(m[1]), "lam": int(m[2]) / int(m[3] or 1)}
    if m := re.fullmatch(r"(\w+)-q(\d+)ms", name):
        return {"program": m[1], "quantum_ms": int(m[2])}
    if m := re.fullmatch(r"lambda-(\d+)(?:_(\d+))?", name):
        return {"program": "mix", "lam": int(m[1]) / int(m[2] or 1)}
    if m := re.fullmatch(r"(\w+)-(\d+)", name):
        return {"program": m[1], "copies": int(m[2])}
    return {"program": name}


def curves(df: pd.DataFrame, x: str, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` over seeds per machine, program, scheduler and ``x``."""
    keys = ["machine", "program", "sched", x]
    return df.groupby(keys, sort=True)[metric].mean().reset_index()


def draw(df: pd.DataFrame, x: str, metrics: list[str], *, logx: bool = False):
    """One row per metric, one column per (machine, program); a line per scheduler."""
    import matplotlib.pyplot as plt

    from simsched.plotting import style

    cols = sorted({(m, p) for m, p in zip(df["machine"], df["program"], strict=True)})
    with style():
        fig, axes = plt.subplots(
            len(metrics), len(cols), figsize=(3.2 * len(cols), 2.6 * len(metrics)),
            squeeze=False,
        )  # fmt: skip
        for i, metric in enumerate(metrics):
            c = curves(df, x, metric)
            for k, (mach, prog) in enumerate(cols):
                ax = axes[i, k]
                for s in ORDER:
                    g = c[(c["machine"] == mach) & (c["program"] == prog) & (c["sched"] == s)]
                    if not g.empty:
                        ax.plot(g[x], g[metric], marker="o", label=s)
                if logx:
                    ax.set_xscale("log")
                if i == 0:
                    ax.set_title(f"{prog}, {mach}")
                if k == 0:
                    ax.set_ylabel(METRICS[metric])
                if i == len(metrics) - 1:
                    ax.set_xlabel(x)
        axes[0, 0].legend()
        fig.tight_layout()
    return fig


def improvements(df: pd.DataFrame, x: str, figure: str) -> list[dict[str, Any]]:
    """SAWS over A-Steal and WS-EQUI per machine (and program), as [SAWS12] §5.2 quotes."""
    rows = []
    for (mach, prog), part in df.groupby(["machine", "program"], sort=True):
        mean = part.groupby(["sched", x])[list(METRICS)].mean()
        row: dict[str, Any] = {"figure": figure, "machine": mach, "program": prog}
        for other in ("asteal", "ws-equi"):
            if "saws" not in mean.index or other not in mean.index:
                continue
            s, o = mean.loc["saws"], mean.loc[other]
            pts = s.index.intersection(o.index)
            gains = _gains(s.loc[pts], o.loc[pts])
            row[f"vs_{other}"] = {k: round(v.mean(), 2) for k, v in gains.items()}
            row[f"vs_{other}"]["points"] = len(pts)
        rows.append(row)
    return rows


def _gains(s: pd.DataFrame, o: pd.DataFrame) -> dict[str, pd.Series]:
    """SAWS's improvement over the other scheduler per row, in per cent:
    ``(other - saws) / other`` for times, ``(saws - other) / other`` for utilisation."""
    return {
        "response_pct": 100 * ((o.mean_response_cycles - s.mean_response_cycles)
                               / o.mean_response_cycles),
        "utilization_pct": 100 * ((s.utilization - o.utilization) / o.utilization),
        "makespan_pct": 100 * ((o.makespan_cycles - s.makespan_cycles) / o.makespan_cycles),
    }  # fmt: skip


def published_improvements(df: pd.DataFrame, figure: str = "published") -> list[dict[str, Any]]:
    """SAWS over A-Steal and WS-EQUI on the published-length mixes, all lambdas together
    and per lambda: the mean over mixes of each mix's seed-mean improvement, with a 95 %
    t interval over the mixes (the mixes, not the seeds, are the independent draws)."""
    from simsched.stats import t_quantile

    mean = df.groupby(["lam", "mix", "sched"])[list(METRICS)].mean()
    rows = []
    for lam in [None, *sorted(df["lam"].unique())]:
        part = mean if lam is None else mean.loc[[lam]]
        row: dict[str, Any] = {"figure": figure, "lam": lam or "all"}
        rows.append(row)
        # a partly-run study compares the mixes both schedulers ran (as improvements()
        # does), and leaves out a scheduler not run yet: a KeyError traceback before
        scheds = set(part.index.get_level_values("sched"))
        if "saws" not in scheds:
            continue
        saws = part.xs("saws", level="sched")
        for other in ("asteal", "ws-equi"):
            if other not in scheds:
                continue
            o = part.xs(other, level="sched")
            both = saws.index.intersection(o.index)
            out: dict[str, Any] = {"mixes": len(both)}
            for key, v in _gains(saws.loc[both], o.loc[both]).items():
                half = (
                    round(t_quantile(0.975, len(v) - 1) * v.std(ddof=1) / len(v) ** 0.5, 2)
                    if len(v) > 1
                    else None  # one mix: no interval
                )
                out[key] = [round(v.mean(), 2), half]
            row[f"vs_{other}"] = out
    return rows


#: The per-job desire table of the published study (``figures/published/job_desires.csv``).
DESIRE_COLUMNS = ["mix", "lam", "sched", "seed", "job", "quanta", "median_desire"]


def job_desires(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Each job's median desire over its quanta (SAWS and A-Steal keep every quantum's
    desire, ``quantum_desires``), and per scheduler the median and 90th percentile of
    those medians over all jobs of all mixes and seeds: how far Eq. 1 of [SAWS12]
    overshoots on deep DAGs (docs/experiments.md, "Where and why simsched differs")."""
    import json

    import numpy as np

    rows = []
    for r in df.itertuples(index=False):
        jobs = json.loads(r.jobs) if isinstance(r.jobs, str) else r.jobs
        for j in jobs or []:
            d = j.get("quantum_desires")
            if d:
                rows.append((r.mix, r.lam, r.sched, r.seed, j["name"], len(d), float(np.median(d))))
    table = pd.DataFrame(rows, columns=DESIRE_COLUMNS)
    summary: dict[str, Any] = {"figure": "published desires"}
    for sched, g in table.groupby("sched", sort=True):
        m = g["median_desire"]
        summary[str(sched)] = {
            "jobs": len(m),
            "median": round(float(m.median()), 1),
            "p90": round(float(np.percentile(m, 90)), 1),
        }
    return table, summary


def draw_published(df: pd.DataFrame):
    """Fig. 9 at published job lengths: one marker per mix (mean over seeds), a line
    through the per-lambda means, per scheduler; one panel per metric."""
    import matplotlib.pyplot as plt

    from simsched.plotting import style

    per_mix = df.groupby(["sched", "lam", "mix"])[list(METRICS)].mean().reset_index()
    with style():
        fig, axes = plt.subplots(1, len(METRICS), figsize=(3.6 * len(METRICS), 3.0))
        for ax, metric in zip(axes, METRICS, strict=True):
            for i, s in enumerate(ORDER):
                g = per_mix[per_mix["sched"] == s]
                if g.empty:
                    continue
                color = f"C{i}"
                ax.scatter(g["lam"], g[metric], s=12, color=color, alpha=0.6)
                line = g.groupby("lam")[metric].mean()
                ax.plot(line.index, line.values, marker="o", color=color, label=s)
            ax.set_xscale("log")
            ax.set_xlabel("lambda (jobs per TAU)")
            ax.set_ylabel(METRICS[metric])
        axes[0].legend()
        fig.suptitle("[SAWS12] Fig. 9 at published job lengths (10 mixes, 3 seeds)")
        fig.tight_layout()
    return fig


#: The x axis of each figure drawn from a sweep, by the sweep's name less ``saws_``.
X_AXIS = {"fig7": "quantum_ms", "fig8": "copies", "fig9": "lam", "small": "copies"}
#: What ``main`` draws when told no folder, by flag.
DEFAULT_STUDIES = {"small": ["small"], "published": ["published"], "": ["fig7", "fig8", "fig9"]}


def figure_of(df: pd.DataFrame, folder: Path) -> str:
    """Which figure a sweep folder's rows draw: its spec's name less ``saws_`` (``fig7``,
    ``fig8``, ``fig9``, ``small``, ``published`` or ``published_moves``)."""
    names = sorted({str(n).removeprefix("saws_") for n in df["sweep"]}) if "sweep" in df else []
    known = [*X_AXIS, "published", "published_moves"]
    if len(names) != 1 or names[0] not in known:
        usage_error(
            f"{folder}: a sweep of {', '.join(names) or 'no name'}, not one of this study's "
            f"specs ({', '.join(f'saws_{k}' for k in known)})"
        )
    return names[0]


def draw_study(figure: str, df: pd.DataFrame, out: Path) -> None:
    """Draw one sweep's figure into ``out`` and print its JSON lines."""
    from simsched.plotting import save

    if figure == "published":
        save(draw_published(df), out / "published" / "fig9.png")
        # The rows carry every allotment (0.5 MB each); the figure's numbers fit a table.
        write_points(df, out / "published" / "points.csv", POINT_COLUMNS, ["mix", "sched", "seed"])
        for row in published_improvements(df):
            print(json_line(row))
        if "jobs" in df:
            desires, summary = job_desires(df)
            order = ["mix", "sched", "seed", "job"]
            write_points(desires, out / "published" / "job_desires.csv", DESIRE_COLUMNS, order)
            print(json_line(summary))
        return
    if figure == "published_moves":
        order = ["machine", "mix", "sched", "seed"]
        write_points(df, out / "published_moves" / "points.csv", [*order, *POINT_COLUMNS], order)
        for mach, part in df.groupby("machine", sort=True):
            print(json_line(published_improvements(part, f"published {mach}")[0]))
        return
    x = X_AXIS[figure]
    if figure == "small":
        df["copies"] = df["copies"].fillna(0)
    order = ["machine", "program", x, "sched", "seed"]
    write_points(df, out / f"{figure}_points.csv", [*order, *SCALED_COLUMNS], order)
    metrics = ["makespan_cycles"] if figure == "fig7" else list(METRICS)
    save(draw(df, x, metrics, logx=figure in ("fig7", "fig9")), out / f"{figure}.png")
    if figure == "fig7":
        c = curves(df, x, "makespan_cycles")
        print(json_line({"figure": "fig7", "makespan": c.to_dict(orient="records")}))
        return
    by = df if figure != "fig9" else df.assign(program="mix")
    for row in improvements(by, x, figure):
        print(json_line(row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "results",
        nargs="*",
        type=Path,
        help="sweep folders to draw, each by its spec's name (default: results/fig7, "
        "fig8 and fig9, or the folder of --small or --published)",
    )
    ap.add_argument("--small", action="store_true", help="read results/small")
    ap.add_argument("--published", action="store_true", help="read results/published")
    ap.add_argument("-o", "--out", type=Path, default=None, help="folder for the figures")
    args = ap.parse_args()
    if args.small and args.published:
        usage_error("--small and --published: give one of them")
    if args.results:
        # every folder is read before a figure is drawn: a bad one leaves nothing behind
        named = [(folder, load(folder)) for folder in args.results]
        figures = [figure_of(df, folder) for folder, df in named]
        for (folder, df), figure in zip(named, figures, strict=True):
            out = args.out or default_figures(folder, HERE, HERE / "figures")
            draw_study(figure, df, out)
        return
    flag = "small" if args.small else "published" if args.published else ""
    studies = DEFAULT_STUDIES[flag]
    if args.out is None:
        args.out = (
            default_figures(HERE / "results" / "small", HERE, HERE)
            if args.small
            else (HERE / "figures")
        )
    if flag:
        # the one study asked for must have run: load() says how to run it, before Fig. 4
        frames = {studies[0]: load(studies[0])}
    else:
        frames = {}
        for study in studies:
            if (HERE / "results" / study / "points").is_dir():
                frames[study] = load(study)
            else:
                print(
                    f"make_figures.py: results/{study} has not run (`simsched sweep run "
                    f"experiments/saws/{study}.yaml`): {study}.png not drawn",
                    file=sys.stderr,
                )
    if flag != "published":
        from simsched.plotting import save
        from simsched.plotting.allotment import plot_allotment

        rec = fig4()
        save(plot_allotment(rec, title="[SAWS12] Fig. 4: N = 10 under DEQ"), args.out / "fig4.png")
        print(json_line(fig4_summary(rec)))
    for study, df in frames.items():
        draw_study(study, df, args.out)
    if flag == "published" and (HERE / "results" / "published_moves" / "points").is_dir():
        draw_study("published_moves", load("published_moves"), args.out)


if __name__ == "__main__":
    run_script(main)
