"""Redraw [CAB11] §V's Figs. 4-9 and Table IV from a cab sweep and print the numbers.

    python experiments/cab/make_figures.py [RESULTS ...] [-o FIGDIR]
    python experiments/cab/make_figures.py --placement [RESULTS ...] [-o FIGDIR]

RESULTS is the sweep's output folder, or several read as one table (default:
results/medium beside this file if it has rows, else results/small); medium, full and
small run the memory-bound programs on the scaled machine (``opteron-s16``),
published.yaml on the unscaled ``opteron-8380-4x4``, and the figures use whichever the
results hold.  Writes fig4.png (normalised execution time, four memory-bound
programs), table4.csv (L2/L3 misses, WS and CAB), fig5_6.png (heat and SOR over input
sizes: normalised time and miss reductions), fig7.png (heat with 128-, 64- and 32-row
leaves), fig8.png (heat under every BL, Eq. 4's choice marked), fig9.png (CPU-bound
programs) and points.csv (one row per point: the columns the figures and the
documentation's numbers are computed from) into ``figures/<results folder name>/`` (for
the study's own results of a full-size spec; beside any other folder, e.g.
``results/figures/small/``, or FIGDIR) and
prints one JSON line per figure.  notebooks/cab.ipynb imports the tables
from here.  ``--placement`` reads placement.yaml's run (default results/placement) and
draws placement.png (and its points.csv) instead: CAB over WS per program under
first-touch and interleaved pages, one JSON line, and a second (``placement-links``) on the busiest link under first
touch: its utilisation, queueing per line and share of the DRAM lines, per scheduler.

Definitions: *normalised time* is CAB's mean makespan over WS's (the paper's Figs. 4, 5,
9); *gain* is WS's over CAB's minus one ("performance gain", §V-A); a *miss reduction* is
one minus CAB's mean misses over WS's (Table IV, Fig. 6).  Means are over seeds.
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
import json
from pathlib import Path

import pandas as pd

from simsched.experiments import load_ok_results, study_results
from simsched.experiments.scripts import (
    default_figures,
    json_line,
    load_figure_rows,
    run_script,
    usage_error,
    write_csv,
    write_points,
)
from simsched.schedulers.boundary import choose_boundary_level

HERE = Path(__file__).resolve().parent
SCALED = "opteron-s16"
UNSCALED = "opteron-8380-4x4"
INTERLEAVE = "opteron-s16-interleave"
MEMORY_BOUND = ["heat-1k", "sor-1k", "ge", "mergesort"]
SIZES = ["512", "1k", "2k", "3kx2k", "4kx8k"]
PLACEMENT_ORDER = [f"heat-{s}" for s in SIZES[:4]] + ["heat-2k-leaf64", "heat-2k-leaf32"]
PLACEMENT_ORDER += [f"sor-{s}" for s in SIZES[:3]] + ["ge", "mergesort"]
CPU_BOUND = ["queens", "fft", "cholesky", "ck"]
METRICS = ["makespan_cycles", "L2_misses", "L3_misses"]
#: The per-point table beside the figures (``points.csv``): what every figure and the
#: documentation's numbers are computed from.
POINT_COLUMNS = [
    "bl", "bl_reason", "bl_eq4", *METRICS, "dram_local", "dram_remote", "sampled",
    "detailed_iterations", "makespan_ci95", "wall_s",
]  # fmt: skip
#: The columns naming a point, which points.csv leads with and is sorted by.
POINT_ORDER = ["workload", "machine", "scheduler", "seed"]


def default_results() -> Path:
    """results/medium if it holds points, else results/small."""
    return study_results(HERE, "medium")


load = load_ok_results


def study_machine(df: pd.DataFrame) -> str:
    """The machine the memory-bound programs ran on: the scaled one if the results hold it."""
    return SCALED if (df["machine"] == SCALED).any() else UNSCALED


def criterion(df: pd.DataFrame) -> list[dict]:
    """CAB (``bl=auto``) over WS per workload and machine, the issue's "never > 10 % slower".

    One dict per (machine, workload) with both schedulers: mean makespans over the common
    seeds, their ratio, the worst per-seed ratio and the BL CAB ran.
    """
    out = []
    d = df[df["scheduler"].isin(["ws", "cab"])]
    for (machine, wl), part in d.groupby(["machine", "workload"]):
        ws = part[part["scheduler"] == "ws"].set_index("seed")["makespan_cycles"]
        cab = part[part["scheduler"] == "cab"].set_index("seed")
        seeds = sorted(set(ws.index) & set(cab.index))
        if not seeds:
            continue
        per_seed = cab.loc[seeds, "makespan_cycles"] / ws.loc[seeds]
        out.append(
            {
                "machine": machine,
                "workload": wl,
                "seeds": len(seeds),
                "bl": int(cab["bl"].iloc[0]),
                "bl_reason": str(cab["bl_reason"].iloc[0]),
                "cab_over_ws": float(
                    cab.loc[seeds, "makespan_cycles"].mean() / ws.loc[seeds].mean()
                ),
                "worst_seed": float(per_seed.max()),
            }
        )
    return out


def placement_table(df: pd.DataFrame) -> pd.DataFrame:
    """placement.yaml's comparison: CAB over WS per workload under each page placement.

    One row per workload present on both machines, with the mean ratio, the per-seed
    extremes and the BL CAB ran under first touch (``ft_*``) and interleaving (``il_*``).
    """
    crit = pd.DataFrame(criterion(df))
    if crit.empty:
        return crit
    rows = []
    for wl, part in crit.groupby("workload", sort=False):
        by = part.set_index("machine")
        if not {SCALED, INTERLEAVE} <= set(by.index):
            continue
        row = {"workload": wl}
        for tag, mach in (("ft", SCALED), ("il", INTERLEAVE)):
            row[f"{tag}_cab_over_ws"] = by.loc[mach, "cab_over_ws"]
            row[f"{tag}_worst_seed"] = by.loc[mach, "worst_seed"]
            row[f"{tag}_bl"] = int(by.loc[mach, "bl"])
        rows.append(row)
    order = {w: i for i, w in enumerate(PLACEMENT_ORDER)}
    rows.sort(key=lambda r: (order.get(r["workload"], len(order)), r["workload"]))
    return pd.DataFrame(rows)


def _json_list(value) -> list:
    """A nested record field: a list as stored, or its JSON text in a flat table."""
    return json.loads(value) if isinstance(value, str) else list(value)


def link_table(df: pd.DataFrame) -> pd.DataFrame:
    """Where WS and CAB meet the busiest inter-socket link, per workload and seed.

    For the runs with first-touch pages: the link WS loads most (by utilisation, the
    mean over its seeds), then for each scheduler and seed that link's utilisation, its
    queueing delay per line, and its *share*: the lines it carried over all DRAM lines
    of the run (local and remote).  Utilisation, share and delay per line are rates of
    the same (detailed) part of the run, so they compare between sampled runs that
    replayed different numbers of iterations in detail; raw counts would not.
    """
    d = df[df["machine"].isin([SCALED, UNSCALED]) & df["scheduler"].isin(["ws", "cab"])]
    rows = []
    for wl, part in d.groupby("workload", sort=False):
        util: dict[tuple[int, int], list[float]] = {}
        for links in part.loc[part["scheduler"] == "ws", "link_traffic"]:
            for link in _json_list(links):
                util.setdefault((link["from"], link["to"]), []).append(link["utilization"])
        if not util:
            continue
        busiest = max(util, key=lambda k: sum(util[k]) / len(util[k]))
        for _, r in part.iterrows():
            link = next(x for x in _json_list(r["link_traffic"]) if (x["from"], x["to"]) == busiest)
            dram = sum(s["local"] + s["remote"] for s in _json_list(r["dram_by_socket"]))
            rows.append(
                {
                    "workload": wl,
                    "machine": r["machine"],
                    "scheduler": r["scheduler"],
                    "seed": int(r["seed"]),
                    "link": f"{busiest[0]}->{busiest[1]}",
                    "utilization": float(link["utilization"]),
                    "queue_per_line": link["queue_delay"] / max(link["lines"], 1),
                    "share": link["lines"] / max(dram, 1),
                }
            )
    return pd.DataFrame(rows).sort_values(["workload", "machine", "scheduler", "seed"])


def draw_placement(table: pd.DataFrame, out: Path) -> None:
    """placement.png: CAB / WS per workload, first touch beside interleaved pages."""
    import matplotlib.pyplot as plt

    from simsched.plotting import save, style

    out.mkdir(parents=True, exist_ok=True)
    with style():
        fig, ax = plt.subplots(figsize=(10, 3.8))
        x = range(len(table))
        for k, (tag, label) in enumerate((("ft", "first touch"), ("il", "interleaved"))):
            xs = [i - 0.2 + 0.4 * k for i in x]
            ax.bar(
                xs,
                table[f"{tag}_cab_over_ws"],
                width=0.4,
                label=f"{label} (bar: mean; tick: worst seed)",
            )
            ax.plot(xs, table[f"{tag}_worst_seed"], "k_", ms=10)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(1.1, color="r", lw=0.8, ls=":", label="10 % slower")
        ax.set_ylim(0.85, 1.15)
        ax.set_xticks(list(x), list(table["workload"]), rotation=30)
        ax.set_ylabel("CAB makespan / WS makespan")
        ax.set_title("CAB vs WS by page placement (opteron-s16, caches and inputs / 16)")
        ax.legend(fontsize=7, loc="lower left")
        fig.tight_layout()
        save(fig, out / "placement.png")


def means(df: pd.DataFrame) -> pd.DataFrame:
    """Mean makespan and misses per (workload, machine, scheduler), with seeds and ``bl``."""
    g = df.groupby(["workload", "machine", "scheduler"])
    out = g[METRICS].mean()
    out["seeds"] = g["seed"].nunique()
    if "bl" in df:
        out["bl"] = g["bl"].first()
    return out.reset_index()


VERSUS_COLUMNS = [
    "workload",
    "seeds",
    "bl",
    "time_ws",
    "time_cab",
    "norm_time",
    "gain",
    "L2_ws",
    "L2_cab",
    "L2_reduction",
    "L3_ws",
    "L3_cab",
    "L3_reduction",
]


def versus_ws(df: pd.DataFrame, workloads: list[str], machine: str = SCALED, other: str = "cab"):
    """Per workload: WS and ``other``'s means, normalised time, gain and miss reductions."""
    m = means(df[(df["machine"] == machine) & df["workload"].isin(workloads)])
    rows = []
    for wl in workloads:
        a = m[(m["workload"] == wl) & (m["scheduler"] == "ws")]
        b = m[(m["workload"] == wl) & (m["scheduler"] == other)]
        if a.empty or b.empty:
            continue
        a, b = a.iloc[0], b.iloc[0]
        rows.append(
            {
                "workload": wl,
                "seeds": int(min(a["seeds"], b["seeds"])),
                "bl": b.get("bl"),
                "time_ws": a["makespan_cycles"],
                "time_cab": b["makespan_cycles"],
                "norm_time": b["makespan_cycles"] / a["makespan_cycles"],
                "gain": a["makespan_cycles"] / b["makespan_cycles"] - 1,
                "L2_ws": a["L2_misses"],
                "L2_cab": b["L2_misses"],
                "L2_reduction": 1 - b["L2_misses"] / max(a["L2_misses"], 1),
                "L3_ws": a["L3_misses"],
                "L3_cab": b["L3_misses"],
                "L3_reduction": 1 - b["L3_misses"] / max(a["L3_misses"], 1),
            }
        )
    # the columns also when no workload has both runs yet (a partly-run study): the
    # figures index them, which ended an empty table in a KeyError traceback
    table = pd.DataFrame(rows, columns=VERSUS_COLUMNS)
    # WS's rows carry no bl, which made the column float: a level printed as 0.0
    table["bl"] = pd.to_numeric(table["bl"]).astype("Int64")
    return table


def fig8_table(df: pd.DataFrame, machine: str = SCALED) -> pd.DataFrame:
    """Heat under every BL: mean makespan per (workload, bl), WS's, Eq. 4's and the best BL."""
    d = df[(df["machine"] == machine) & df["scheduler"].str.startswith("cab-bl")]
    rows = []
    for wl, part in d.groupby("workload"):
        t = part.groupby("bl")["makespan_cycles"].mean()
        ws = df[(df["workload"] == wl) & (df["machine"] == machine) & (df["scheduler"] == "ws")]
        auto = df[(df["workload"] == wl) & (df["machine"] == machine) & (df["scheduler"] == "cab")]
        eq4 = int(auto["bl"].iloc[0]) if not auto.empty else None
        best = int(t.idxmin())
        # Eq. 4 with the paper's Sd, one input grid of doubles (§V-C: 3k x 2k -> 48 MB),
        # beside simsched's default, the footprint (both grids of the Jacobi sweep).
        r0 = part.iloc[0]
        grid = (int(r0["workload.nx"]) - 2) * (int(r0["workload.ny"]) - 2) * 8
        paper = choose_boundary_level(
            int(r0["bl_branching"]), int(r0["sockets"]), int(r0["bl_shared_cache"]), grid
        ).bl
        rows.append(
            {
                "workload": wl,
                "times": {int(k): float(v) for k, v in t.items()},
                "ws": float(ws["makespan_cycles"].mean()) if not ws.empty else None,
                "eq4_bl": eq4,
                "eq4_bl_one_grid": paper,
                "best_bl": best,
                "eq4_over_best": float(t[eq4] / t[best]) if eq4 in t.index else None,
                "one_grid_over_best": float(t[paper] / t[best]) if paper in t.index else None,
            }
        )
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame) -> list[dict]:
    """One JSON-able dict per figure (what docs/experiments.md quotes)."""
    out = []
    mach = study_machine(df)
    f4 = versus_ws(df, MEMORY_BOUND, mach)
    out.append({"figure": "4+table4", "rows": f4.round(4).to_dict("records")})
    for prog in ("heat", "sor"):
        f5 = versus_ws(df, [f"{prog}-{s}" for s in SIZES], mach)
        out.append({"figure": f"5-6 {prog}", "rows": f5.round(4).to_dict("records")})
    f7 = versus_ws(df, ["heat-2k", "heat-2k-leaf64", "heat-2k-leaf32"], mach)
    out.append({"figure": "7", "rows": f7.round(4).to_dict("records")})
    out.append({"figure": "8", "rows": fig8_table(df, mach).to_dict("records")})
    out.append({"figure": "criterion", "rows": criterion(df)})
    for machine in (SCALED, UNSCALED):
        for other in ("cab", "cab-no-cpu-rule"):
            f9 = versus_ws(df, CPU_BOUND, machine, other)
            if f9.empty:  # published.yaml leaves Fig. 9 to medium.yaml's unscaled points
                continue
            out.append(
                {
                    "figure": "9",
                    "machine": machine,
                    "scheduler": other,
                    "rows": f9[["workload", "seeds", "bl", "norm_time"]]
                    .round(4)
                    .to_dict("records"),
                }
            )
    return out


def _bars(ax, table: pd.DataFrame, col: str, title: str, ylabel: str) -> None:
    ax.bar(table["workload"], table[col], color="tab:blue")
    ax.axhline(1.0 if col == "norm_time" else 0.0, color="k", lw=0.8)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", rotation=30)


def draw(df: pd.DataFrame, out: Path) -> None:
    """Write every figure and table4.csv into ``out``."""
    import matplotlib.pyplot as plt

    from simsched.plotting import save, style

    out.mkdir(parents=True, exist_ok=True)
    mach = study_machine(df)
    write_points(df, out / "points.csv", [*POINT_ORDER, *POINT_COLUMNS], POINT_ORDER)
    with style():
        f4 = versus_ws(df, MEMORY_BOUND, mach)
        write_csv(f4, out / "table4.csv", index=False)
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
        _bars(axes[0], f4, "norm_time", "Fig. 4: CAB time / WS time", "normalised time")
        _bars(axes[1], f4, "L2_reduction", "Table IV: L2 miss reduction", "1 - CAB/WS")
        _bars(axes[2], f4, "L3_reduction", "Table IV: L3 miss reduction", "1 - CAB/WS")
        fig.tight_layout()
        save(fig, out / "fig4.png")

        fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
        for prog, mk in (("heat", "o"), ("sor", "s")):
            t = versus_ws(df, [f"{prog}-{s}" for s in SIZES], mach)
            if t.empty:
                continue
            x = t["workload"].str.replace(f"{prog}-", "")
            axes[0].plot(x, t["norm_time"], marker=mk, label=prog)
            axes[1].plot(x, t["L2_reduction"], marker=mk, label=f"{prog} L2")
            axes[1].plot(x, t["L3_reduction"], marker=mk, ls="--", label=f"{prog} L3")
        axes[0].axhline(1.0, color="k", lw=0.8)
        axes[0].set_title("Fig. 5: CAB time / WS time by input size")
        axes[1].set_title("Fig. 6: miss reduction (1 - CAB/WS)")
        for ax in axes:
            ax.set_xlabel("input" + (" (paper's size; simulated / 16)" if mach == SCALED else ""))
            if ax.get_legend_handles_labels()[0]:  # a partly-run study may have neither
                ax.legend()
        fig.tight_layout()
        save(fig, out / "fig5_6.png")

        f7 = versus_ws(df, ["heat-2k", "heat-2k-leaf64", "heat-2k-leaf32"], mach)
        fig, ax = plt.subplots(figsize=(6, 3.5))
        if not f7.empty:
            x = range(len(f7))
            ax.bar([i - 0.2 for i in x], f7["time_ws"], width=0.4, label="WS")
            ax.bar([i + 0.2 for i in x], f7["time_cab"], width=0.4, label="CAB")
            ax.set_xticks(list(x), ["128 rows", "64 rows", "32 rows"][: len(f7)])
        ax.set_ylabel("makespan (cycles)")
        ax.set_title("Fig. 7: heat 2k, leaf size (paper's rows)")
        if not f7.empty:
            ax.legend()
        fig.tight_layout()
        save(fig, out / "fig7.png")

        f8 = fig8_table(df, mach)
        fig, axes = plt.subplots(
            1, max(len(f8), 1), figsize=(4 * max(len(f8), 1), 3.5), squeeze=False
        )
        for ax, (_, r) in zip(axes[0], f8.iterrows(), strict=False):
            bls = sorted(r["times"])
            ax.plot(bls, [r["times"][b] for b in bls], marker="o", label="CAB, BL given")
            if r["ws"]:
                ax.axhline(r["ws"], color="gray", ls=":", label="WS")
            if r["eq4_bl"] in r["times"]:
                ax.plot([r["eq4_bl"]], [r["times"][r["eq4_bl"]]], "r*", ms=14, label="Eq. 4")
            if r["eq4_bl_one_grid"] in r["times"]:
                b = r["eq4_bl_one_grid"]
                ax.plot([b], [r["times"][b]], "gD", ms=8, mfc="none", label="Eq. 4, Sd = one grid")
            ax.set_title(f"Fig. 8: {r['workload']}")
            ax.set_xlabel("BL")
            ax.set_ylabel("makespan (cycles)")
            ax.legend(fontsize=7)
        fig.tight_layout()
        save(fig, out / "fig8.png")

        fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
        for ax, machine in zip(axes, (SCALED, UNSCALED), strict=True):
            for k, other in enumerate(("cab", "cab-no-cpu-rule")):
                t = versus_ws(df, CPU_BOUND, machine, other)
                if t.empty:
                    continue
                x = range(len(t))
                ax.bar([i - 0.2 + 0.4 * k for i in x], t["norm_time"], width=0.4, label=other)
                ax.set_xticks(list(x), list(t["workload"]))
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_title(f"Fig. 9: CPU-bound, {machine}")
            ax.set_ylabel("CAB time / WS time")
            if ax.get_legend_handles_labels()[0]:  # published.yaml has no scaled machine
                ax.legend(fontsize=7)
        fig.tight_layout()
        save(fig, out / "fig9.png")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="*", type=Path, help="one or more sweep output folders")
    ap.add_argument("-o", "--out", type=Path, default=None)
    ap.add_argument(
        "--placement", action="store_true", help="placement.yaml's run: placement.png only"
    )
    a = ap.parse_args()
    if a.placement:
        res = a.results or [HERE / "results" / "placement"]
        df = load_figure_rows(res, HERE, schedulers=["cab"])
        table = placement_table(df)
        if table.empty:
            usage_error(
                f"{res[0]}: no program with WS and CAB under both placements; run "
                "`simsched sweep run experiments/cab/placement.yaml` first"
            )
        figdir = a.out or default_figures(res[0], HERE, HERE / "figures" / "placement")
        draw_placement(table, figdir)
        # the link columns too: the placement-links line is computed from them
        cols = [*POINT_ORDER, *POINT_COLUMNS, "link_traffic", "dram_by_socket"]
        write_points(df, figdir / "points.csv", cols, POINT_ORDER)
        print(json_line({"figure": "placement", "rows": table.round(4).to_dict("records")}))
        links = link_table(df)
        if not links.empty:
            g = links.groupby(["workload", "machine", "scheduler", "link"])
            agg = g[["utilization", "queue_per_line", "share"]].mean().round(4)
            agg["seeds"] = g["seed"].nunique()
            recs = agg.reset_index().to_dict("records")
            print(json_line({"figure": "placement-links", "rows": recs}))
        return
    res = a.results or [default_results()]
    # published.yaml and published_whole.yaml write two folders: one table of both
    df = load_figure_rows(res, HERE, schedulers=["cab"])
    draw(df, a.out or default_figures(res[0], HERE, HERE / "figures" / Path(res[0]).name))
    for row in summary(df):
        print(json_line(row))


if __name__ == "__main__":
    run_script(main)
