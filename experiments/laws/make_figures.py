"""Redraw [LAWS15] §6's figures from the laws sweeps; print the numbers.

    python experiments/laws/make_figures.py [RESULTS ...] [-o FIGDIR]

Each RESULTS is a sweep's output folder (default: every one of results/medium,
results/medium_intel, results/uneven, results/scaling and results/cpu that has points, or
results/small when none has).  What is drawn depends on the sweep:

* ``laws_scaling`` (scaling.yaml): ``fig9_10.png`` (time against the input size x, Figs. 9
  and 10), ``fig11_12.png`` (the straggler socket's shared-cache misses and local DRAM
  accesses against x, Figs. 11 and 12) and ``scaling.csv`` (their means over seeds);
* ``laws_cpu`` (cpu.yaml): ``fig13.png`` and ``fig13.csv`` (CPU-bound programs, time
  normalised to WS per machine, and WS's utilisation) and what LAWS' CPU-bound rule decided;
* ``laws_sensitivity`` (sensitivity.yaml): ``sensitivity.png`` and ``sensitivity.csv``
  (WS's and LAWS's makespans and LAWS's gain per machine variant, blocking beside
  out-of-order cores);
* any other (medium, medium_intel, uneven, small, full): ``fig7.png`` (time normalised to WS
  per program and scheduler), ``table4.csv`` (the straggler socket's shared-cache misses and
  local / remote DRAM lines, and the whole machine's local share), ``fig8.png`` (per-iteration
  time under LAWS, seed 0, with the packing moves of Algorithm 1), ``summary.csv`` (one row
  per program and scheduler: means over seeds, normalised time, steady-state iteration time),
  ``points.csv`` (as every kind of sweep: one row per point, the columns the figures and
  the documentation's numbers are computed from, Algorithm 1's packing moves among them) and, for a sampled study
  (published.yaml), a ``sampling-cost`` line: per scheduler, the points' wall time with
  and without the precision rule (:func:`sampling_cost`), and a ``schedule`` line: the
  study's wall time on 2 and 16 runners with its points started in the spec's order,
  longest first, and the bound (:func:`schedule`).

With ``--reference REF`` (a finished sampled study, e.g. results/published), a partly-run
sampled study also gets a ``projection`` line and ``projection.json``: its whole cost on
one runner and on 16 workers, projected from the points it ran beside REF's
(:func:`cost_projection`).

Figures go to ``figures/<results folder name>/`` for the study's own results of a full-size
spec, to ``figures/<name>/`` beside any other folder (results/small's to
``results/figures/small/``), or to FIGDIR; one JSON line per figure.  A
memory-bound sweep that ran several machines (by label) gets one set per machine: the
first machine's in the folder, each other's in a subfolder named by its label.

Definitions: *normalised time* is a scheduler's mean makespan over WS's (Fig. 7); *gain*
is WS's over the scheduler's minus one (the paper's "faster than Cilk"); *reduction* is one
minus the normalised time (the paper's "reduces ... execution time"); the *steady*
iteration time is the mean of the iterations LAWS ran under its final packing (Algorithm 1
done), and the mean of the same iterations for CATS and LAWS-NC (WS's records carry no
iteration times).  Means are over seeds.
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
import heapq
import json
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.errors import ConfigError
from simsched.experiments import load_ok_results, study_results
from simsched.experiments.scripts import (
    default_figures,
    json_line,
    load_figure_rows,
    run_script,
    write_csv,
    write_points,
)
from simsched.files import write_json_atomic
from simsched.plotting import save

HERE = Path(__file__).resolve().parent
ORDER = [
    "heat",
    "heat-ir",
    "sor",
    "sor-ir",
    "9p",
    "9p-ir",
    "6p",
    "6p-ir",
    "25p",
    "25p-ir",
    "ge",
    "ge-ir",
]
SCHEDS = ["ws", "cats", "laws-nc", "laws"]
#: A folder none of whose rows ran one of these is not a LAWS study's.
LAWS_FAMILY = SCHEDS[1:]
STUDIES = ["medium", "medium_intel", "uneven", "scaling", "cpu"]
METRICS = [
    "makespan_cycles",
    "L3_misses",
    "dram_local",
    "dram_remote",
    "straggler_shared_misses",
    "straggler_dram_local",
    "straggler_dram_remote",
    "utilization",
]


#: The per-point table beside the figures (``points.csv``).
POINT_COLUMNS = [
    "makespan_cycles", "L3_misses", "dram_local", "dram_remote", "straggler_shared_misses",
    "straggler_dram_local", "straggler_dram_remote", "utilization", "strands", "sampled",
    "settled_at", "detailed_iterations", "makespan_ci95", "iteration_cycles", "packing",
    "wall_s",
]  # fmt: skip


def default_results() -> list[Path]:
    """Every study in STUDIES that has run, else results/small."""
    found = [HERE / "results" / n for n in STUDIES if (HERE / "results" / n / "points").is_dir()]
    return found or [study_results(HERE, "medium")]


load = load_ok_results


def _steady(rows: pd.DataFrame, final: dict[tuple[str, int], list[int]]) -> float:
    """Mean time of the iterations LAWS ran under its final packing, same seed."""
    out = []
    for _, r in rows.iterrows():
        its = json.loads(r["iteration_cycles"]) if isinstance(r["iteration_cycles"], str) else []
        idx = final.get((r["workload"], int(r["seed"])), [])
        # a sampled run's iterations after its detailed part are -1 (not replayed)
        vals = [its[i] for i in idx if i < len(its) and its[i] >= 0]
        if vals:
            out.append(np.mean(vals))
    return float(np.mean(out)) if out else float("nan")


def _half_width(ci: object) -> float:
    """Half the width of a record's ``makespan_ci95`` (NaN for a detailed run)."""
    if isinstance(ci, str):
        ci = json.loads(ci)
    if isinstance(ci, (list, tuple, np.ndarray)) and len(ci) == 2:
        return (float(ci[1]) - float(ci[0])) / 2
    return float("nan")


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (workload, scheduler): means over seeds, normalised time, steady state."""
    final: dict[tuple[str, int], list[int]] = {}
    for _, r in df[df["scheduler"] == "laws"].iterrows():
        pk = json.loads(r["packing"]) if isinstance(r["packing"], str) else []
        final[(r["workload"], int(r["seed"]))] = [
            p["iteration"] for p in pk if p["move"] == "final"
        ]
    g = df.groupby(["workload", "scheduler"])
    out = g[METRICS].mean()
    out["machine"] = g["machine"].first()
    out["seeds"] = g["seed"].nunique()
    out = out.reset_index()
    ws = out[out["scheduler"] == "ws"].set_index("workload")["makespan_cycles"]
    out["norm_time"] = out["makespan_cycles"] / out["workload"].map(ws)
    out["gain_vs_ws"] = out["workload"].map(ws) / out["makespan_cycles"] - 1
    out["local_share"] = out["dram_local"] / (out["dram_local"] + out["dram_remote"])
    # Sampled runs (published.yaml) carry the makespan's 95 % interval: its half width
    # over WS's mean makespan, averaged over seeds, is the error bar of Fig. 7.
    if "makespan_ci95" in df:
        half = df["makespan_ci95"].map(_half_width)
        h = half.groupby([df["workload"], df["scheduler"]]).mean()
        out["norm_ci95"] = [
            h.get((w, sc), float("nan")) / ws.get(w, float("nan"))
            for w, sc in zip(out["workload"], out["scheduler"], strict=True)
        ]
    out["steady_iteration_cycles"] = [
        _steady(df[(df["workload"] == w) & (df["scheduler"] == s)], final)
        if s != "ws"
        else float("nan")
        for w, s in zip(out["workload"], out["scheduler"], strict=True)
    ]
    key = {w: i for i, w in enumerate(ORDER)}
    key.update({f"{w}u": i for i, w in enumerate(ORDER)})  # uneven.yaml's heat-iru ...
    out["_o"] = out["workload"].map(lambda w: key.get(w, 99)) * 10 + out["scheduler"].map(
        lambda s: SCHEDS.index(s) if s in SCHEDS else 9
    )
    return out.sort_values("_o").drop(columns="_o").reset_index(drop=True)


def fig7(s: pd.DataFrame, path: Path) -> dict:
    import matplotlib.pyplot as plt

    t = s.pivot(index="workload", columns="scheduler", values="norm_time")
    t = t.reindex(sorted(t.index, key=_order))[[c for c in SCHEDS if c in t.columns]]
    err = None
    if "norm_ci95" in s and s["norm_ci95"].notna().any():
        e = s.pivot(index="workload", columns="scheduler", values="norm_ci95")
        err = e.reindex(t.index)[t.columns].fillna(0.0)
    ax = t.plot.bar(figsize=(9, 3.2), width=0.8, yerr=err, capsize=1.5, error_kw={"lw": 0.6})
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_ylabel("time / WS")
    ax.set_xlabel("")
    machines = sorted(set(s["machine"])) if "machine" in s else []
    scaled = any("/64" in m for m in machines)
    what = ", caches and row lengths / 64" if scaled else ", the paper's inputs (95 % intervals)"
    ax.set_title(f"Fig. 7 (simsched): {', '.join(machines)}{what}", pad=18)
    ax.legend(ncol=4, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    plt.tight_layout()
    save(plt.gcf(), path, dpi=80)
    return {"figure": "fig7", "norm_time": t.round(3).to_dict(orient="index")}


def fig8(df: pd.DataFrame, path: Path) -> dict:
    import matplotlib.pyplot as plt

    laws = df[(df["scheduler"] == "laws") & (df["seed"] == df["seed"].min())]
    wl = sorted(set(laws["workload"]), key=_order)
    fig, axes = plt.subplots(3, 4, figsize=(11, 6.5), squeeze=False)
    out = {}
    for ax, w in zip(axes.ravel(), wl, strict=False):
        r = laws[laws["workload"] == w].iloc[0]
        its = np.array(json.loads(r["iteration_cycles"]), dtype=float) / 1e6
        if (its < 0).any():  # sampled: only the detailed iterations were replayed
            its = its[: int(np.argmax(its < 0))]
        pk = [p for p in json.loads(r["packing"]) if p["iteration"] < len(its)]
        ax.plot(range(len(its)), its, marker=".", lw=0.8)
        for p in pk:
            if p["move"] in ("initial", "smaller", "larger"):
                ax.annotate(p["move"][0], (p["iteration"], its[p["iteration"]]), fontsize=7)
        ax.set_title(w, fontsize=9)
        ax.tick_params(labelsize=7)
        out[w] = {"moves": [p["move"] for p in pk], "levels": [p["cf_root_level"] for p in pk]}
    for ax in axes.ravel()[len(wl) :]:
        ax.axis("off")
    fig.supxlabel("iteration (i: initial packing, s: smaller, l: larger)", fontsize=9)
    fig.supylabel("M cycles", fontsize=9)
    plt.tight_layout()
    save(plt.gcf(), path, dpi=70)
    return {"figure": "fig8", "laws_seed0": out}


def _order(w: str) -> int:
    base = w.removesuffix("u") if w.endswith("-iru") else w
    return ORDER.index(base) if base in ORDER else len(ORDER)


def _x(label: str) -> int:
    """The input size x of a scaling point: the interior rows of ``prog[nx=N]``."""
    return int(label.split("nx=")[1].rstrip("]")) - 2


SCALING = [("heat-ir", "AMD"), ("6p", "AMD"), ("sor-ir", "Intel"), ("9p", "Intel")]


def scaling(df: pd.DataFrame, out: Path) -> list[dict]:
    """Figs. 9-12: time, straggler shared-cache misses and local DRAM accesses against x."""
    import matplotlib.pyplot as plt

    df = df.assign(program=df["workload"].str.split("[").str[0], x=df["workload"].map(_x))
    cols = ["makespan_cycles", "straggler_shared_misses", "straggler_dram_local"]
    m = df.groupby(["program", "x", "scheduler"])[cols].mean().reset_index()
    write_csv(m.round(1), out / "scaling.csv", index=False)
    progs = [(p, srv) for p, srv in SCALING if p in set(m["program"])]
    fig, axes = plt.subplots(1, len(progs), figsize=(3 * len(progs), 2.8), squeeze=False)
    fig2, axes2 = plt.subplots(2, len(progs), figsize=(3 * len(progs), 5), squeeze=False)
    res = []
    for k, (prog, srv) in enumerate(progs):
        sub = m[m["program"] == prog]
        for sched in [s for s in SCHEDS if s in set(sub["scheduler"])]:
            r = sub[sub["scheduler"] == sched].sort_values("x")
            axes[0, k].plot(r["x"], r["makespan_cycles"] / 1e6, marker="o", label=sched)
            axes2[0, k].plot(r["x"], r["straggler_shared_misses"] / 1e3, marker="o", label=sched)
            axes2[1, k].plot(r["x"], r["straggler_dram_local"] / 1e3, marker="o", label=sched)
        for ax, ylab in (
            (axes[0, k], "M cycles"),
            (axes2[0, k], "k L3 misses"),
            (axes2[1, k], "k local DRAM"),
        ):
            ax.set_xscale("log", base=2)
            ax.set_title(f"{prog} ({srv})", fontsize=9)
            ax.set_ylabel(ylab, fontsize=8)
            ax.tick_params(labelsize=7)
        piv = sub.pivot(index="x", columns="scheduler", values=cols[0])
        strag = sub.pivot(index="x", columns="scheduler", values=cols[1])
        local = sub.pivot(index="x", columns="scheduler", values=cols[2])
        row = {"program": prog, "server": srv, "x": [int(v) for v in piv.index]}
        # a partly-run study may lack WS at some x (or at all): NaN there, not a KeyError
        piv, strag, local = (
            t.reindex(columns=[*t.columns.drop("ws", errors="ignore"), "ws"])
            for t in (piv, strag, local)
        )
        for sched in ("cats", "laws"):
            if sched in piv:
                row[f"{sched}_reduction_vs_ws"] = [round(1 - v, 3) for v in piv[sched] / piv["ws"]]
        if "laws" in strag:
            row["laws_l3_miss_change"] = [round(v - 1, 3) for v in strag["laws"] / strag["ws"]]
            row["laws_local_change"] = [round(v - 1, 3) for v in local["laws"] / local["ws"]]
        res.append(row)
    axes[0, 0].legend(fontsize=7)
    axes2[0, 0].legend(fontsize=7)
    fig.supxlabel("x (rows)", fontsize=9)
    fig2.supxlabel("x (rows)", fontsize=9)
    fig.suptitle("Figs. 9-10 (simsched): time against input size", fontsize=10)
    fig2.suptitle("Figs. 11-12 (simsched): straggler socket", fontsize=10)
    fig.tight_layout()
    fig2.tight_layout()
    save(fig, out / "fig9_10.png", dpi=80)
    save(fig2, out / "fig11_12.png", dpi=80)
    return [{"figure": "fig9-12", "rows": res}]


def cpu_bound(df: pd.DataFrame, out: Path) -> list[dict]:
    """Fig. 13: CPU-bound programs, time over WS's per machine; LAWS' CPU-bound decision."""
    import matplotlib.pyplot as plt

    m = df.groupby(["machine", "workload", "scheduler"])["makespan_cycles"].mean()
    # a program without a WS row (a partly-run study) is NaN, not a KeyError
    ws = m[m.index.get_level_values("scheduler") == "ws"].droplevel("scheduler")
    norm = m / ws.reindex(m.index.droplevel("scheduler")).values
    t = norm.unstack("scheduler")[[s for s in SCHEDS if s in norm.index.get_level_values(2)]]
    util = df[df["scheduler"] == "ws"].groupby(["machine", "workload"])["utilization"].mean()
    write_csv(t.assign(ws_utilization=util).round(4), out / "fig13.csv")
    machines = list(dict.fromkeys(t.index.get_level_values(0)))
    fig, axes = plt.subplots(1, len(machines), figsize=(5 * len(machines), 3), squeeze=False)
    for ax, mach in zip(axes[0], machines, strict=True):
        t.loc[mach].plot.bar(ax=ax, width=0.8, legend=False)
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set_title(mach, fontsize=9)
        ax.set_xlabel("")
        ax.set_ylabel("time / WS")
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("Fig. 13 (simsched): CPU-bound programs", fontsize=10)
    fig.tight_layout()
    save(fig, out / "fig13.png", dpi=80)
    modes = (
        df[df["scheduler"] == "laws"].groupby(["machine", "workload"])["packing_mode"].first()
        if "packing_mode" in df
        else pd.Series(dtype=str)
    )
    return [
        {
            "figure": "fig13",
            "norm_time": {f"{a}/{b}": r.round(4).to_dict() for (a, b), r in t.iterrows()},
            "laws_overhead_max": round(float(t["laws"].max() - 1), 4) if "laws" in t else None,
            "laws_mode": {f"{a}/{b}": v for (a, b), v in modes.items()},
        }
    ]


def sensitivity(df: pd.DataFrame, out: Path) -> list[dict]:
    """LAWS's gain over WS as link and DRAM bandwidth vary, blocking and out-of-order."""
    import matplotlib.pyplot as plt

    m = df.groupby(["machine", "scheduler"])["makespan_cycles"].mean().unstack("scheduler")
    m = m.reindex(columns=[*m.columns.drop(["ws", "laws"], errors="ignore"), "laws", "ws"])
    m["gain"] = m["ws"] / m["laws"] - 1
    write_csv(m.round(4), out / "sensitivity.csv")
    variants = ["", "-links/2", "-dram/2", "-dram/8"]
    models = ["blocking", "ooo"]
    # a variant a partly-run study has not reached is drawn empty (NaN), not a KeyError
    grid = m.reindex([model + v for model in models for v in variants])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3))
    x = np.arange(len(variants))
    for i, model in enumerate(models):
        rows = [grid.loc[model + v] for v in variants]
        axes[0].bar(x + 0.4 * i, [r["gain"] * 100 for r in rows], 0.4, label=model)
        for j, sched in enumerate(("ws", "laws")):
            axes[1].bar(
                x + 0.2 * (2 * i + j),
                [r[sched] / grid.loc[model, sched] for r in rows],
                0.2,
                label=f"{model} {sched}",
            )
    for ax, title in zip(
        axes, ("LAWS gain over WS (%)", "time / same model's full rate"), strict=True
    ):
        ax.set_xticks(x + 0.3, ["full", "links / 2", "DRAM / 2", "DRAM / 8"], fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle("LAWS sensitivity (medium heat, opteron-8380-4x4 caches / 64)", fontsize=10)
    fig.tight_layout()
    save(fig, out / "sensitivity.png", dpi=80)
    return [{"figure": "sensitivity", "rows": m.round(4).reset_index().to_dict(orient="records")}]


def _periods(row: pd.Series) -> list[int]:
    """The detailed iterations' periods of a sampled row: from ``iteration_ends`` (the
    sampler's own, every policy) when the row has them, else from LAWS's
    ``iteration_cycles`` (rows written before ``iteration_ends`` existed)."""
    ends = row.get("iteration_ends")
    ends = json.loads(ends) if isinstance(ends, str) else []
    if ends:
        return np.diff(np.asarray(ends, dtype=np.int64), prepend=0).tolist()
    its = row.get("iteration_cycles")
    its = json.loads(its) if isinstance(its, str) else []
    return [int(c) for c in its if c >= 0]


def sampling_cost(df: pd.DataFrame) -> list[dict]:
    """What the 1 % precision rule of a sampled study costs, per scheduler.

    For every sampled row: its point wall time, and the wall time it would have taken
    had it stopped after ``sample_iterations`` samples with no precision rule (its own
    seconds per detailed iteration times ``settled_at + sample_iterations``).  Where the
    row carries its iterations' periods (``iteration_ends``; in older rows LAWS's,
    LAWS-NC's and CATS's ``iteration_cycles``) and the program's
    iterations are identical (not GE's shrinking pivot steps), also how far that
    shorter run's extrapolation (:func:`simsched.engine.sampled.sampled_makespan`, the same
    estimator) is from the row's makespan, and its interval's half width.
    """
    from simsched.engine.sampled import sampled_makespan
    from simsched.engine.sampling import SampleOutcome

    if "sampled" not in df or "point_wall_s" not in df:
        return []
    d = df[df["sampled"].fillna(False).astype(bool)]
    out = []
    for sched, part in d.groupby("scheduler", sort=False):
        hours = hours_k = 0.0
        devs: list[float] = []
        halves: list[float] = []
        for _, r in part.iterrows():
            det, k = int(r["detailed_iterations"]), int(r["sample_iterations"])
            stop = min(det, int(r["settled_at"]) + k)
            fixed = float(r["point_wall_s"]) - float(r["wall_s"])
            hours += float(r["point_wall_s"]) / 3600
            hours_k += (float(r["wall_s"]) / det * stop + fixed) / 3600
            periods = _periods(r)
            if len(periods) != det or str(r["workload"]).startswith("ge") or stop == det:
                continue
            n = int(r["trace_iterations"])
            ends = np.cumsum(periods[:stop]).tolist()
            outcome = SampleOutcome(
                stopped=True,
                settled_at=int(r["settled_at"]),
                settled_by="",
                detailed=stop,
                samples=stop - int(r["settled_at"]),
                iterations=n,
                ends=ends,
                weights=np.ones(n, dtype=np.int64),
                end_cycle=ends[-1],
                epilogue_instructions=0,
            )
            est = sampled_makespan(outcome, 0.0)
            devs.append(est.makespan / float(r["makespan_cycles"]) - 1)
            halves.append((est.hi - est.lo) / 2 / est.makespan)
        row = {
            "scheduler": sched,
            "points": len(part),
            "hours": round(hours, 2),
            "hours_without_precision_rule": round(hours_k, 2),
        }
        if devs:
            row["estimates_compared"] = len(devs)
            row["deviation_range"] = [round(min(devs), 4), round(max(devs), 4)]
            row["half_width_range"] = [round(min(halves), 4), round(max(halves), 4)]
        out.append(row)
    return out


def _program_kind(workload: str) -> str:
    """A program's kind for the projection: GE, 3-D (6P, 25P) or 2-D, -ir or not."""
    if workload.startswith("ge"):
        return "ge"
    return "3d" if workload.startswith(("6p", "25p")) else "2d"


# WS and LAWS-NC replay without packing; LAWS and CATS pack (their per-iteration cost
# moves together between machines, [LAWS15] §4-5).
_POLICY_KIND = {"ws": "ws", "laws-nc": "ws", "cats": "packed", "laws": "packed"}


def list_schedule_hours(seconds: list[float], workers: int) -> float:
    """Wall hours of points taking ``seconds`` when started in this order on ``workers``
    runners, each on the first runner free: what the sweep runner's pool and a Dask
    cluster do with the points it is given in order."""
    free = [0.0] * workers
    for t in seconds:
        heapq.heappush(free, heapq.heappop(free) + t)
    return max(free) / 3600


def schedule(df: pd.DataFrame, order: list[str], workers: tuple[int, ...] = (2, 16)) -> dict:
    """A study's wall time on several runners, from its points' measured wall times.

    ``order`` is the spec's point ids in the order the runner starts them.  For each count
    of runners: the list schedule in that order, started longest first (which the runner
    cannot do: a point's cost is known only once it has run), and the bound (the sum
    shared by the runners, or the longest point when that is longer).  ``{}`` when no row
    has a ``point_id`` of ``order`` and a ``point_wall_s``.
    """
    if "point_id" not in df or "point_wall_s" not in df:
        return {}
    t = df.drop_duplicates("point_id").set_index("point_id")["point_wall_s"].astype(float)
    ids = [i for i in order if i in t.index]
    if not ids:
        return {}
    spec = [float(t[i]) for i in ids]
    first = sorted(spec, reverse=True)
    out: dict = {"points": len(ids), "hours_one_runner": round(sum(spec) / 3600, 2)}
    for w in workers:
        out[f"{w}_runners"] = {
            "spec_order": round(list_schedule_hours(spec, w), 2),
            "longest_first": round(list_schedule_hours(first, w), 2),
            "bound": round(max(sum(spec) / w, first[0]) / 3600, 2),
        }
    return out


def cost_projection(df: pd.DataFrame, ref: pd.DataFrame, workers: int = 16) -> dict:
    """The wall time a partly-run sampled study would take, projected from a finished one.

    ``ref`` is a sampled study that ran every point (published.yaml on the Opteron);
    ``df`` is the rows run so far of the same programs, schedulers and seeds at other
    sizes on another machine (published_intel.yaml on one machine).  A point of ``ref``
    that ``df`` has keeps its measured point wall time.  An unrun point whose program and
    scheduler ran at other seeds takes their mean time.  Any other unrun point is its ``ref`` counterpart's
    replay time per detailed iteration, times the mean ratio of the two studies' costs
    per detailed iteration over the points both ran of the same program kind
    (:func:`_program_kind`) and policy kind (``_POLICY_KIND``), times a detailed-iteration
    count, plus the median time outside the replay (trace load, baseline) of the run
    points.  The count is the median of ``df``'s WS points for WS; for CATS, whose
    precision rule needs a number of iterations that differs most between machines,
    ``ref``'s count times the mean ratio of the two studies' counts over the CATS points
    both ran of that program kind (all kinds where that one has none); ``ref``'s own
    count for LAWS and LAWS-NC.  A kind with no run point falls back to the mean ratio
    of its policy kind over all program kinds.

    Returns
    -------
    dict
        ``{}`` when either table lacks the sampled columns or ``df`` shares no point with
        ``ref``; else the points run and projected, the hours by scheduler, on one runner
        and on ``workers`` workers (the sum over ``workers``, or the longest point when
        that is longer), the longest point, and the ratios used.
    """
    need = {"workload", "scheduler", "seed", "wall_s", "point_wall_s", "detailed_iterations"}
    if not need <= set(df.columns) or not need <= set(ref.columns):
        return {}
    key = ["workload", "scheduler", "seed"]
    m = df[df["scheduler"].isin(list(_POLICY_KIND))].drop_duplicates(key).set_index(key)
    r = ref[ref["scheduler"].isin(list(_POLICY_KIND))].drop_duplicates(key).set_index(key)
    both = m.index.intersection(r.index)
    if not len(both):
        return {}
    per_it = lambda t: t["wall_s"] / t["detailed_iterations"]  # noqa: E731
    cost = (per_it(m.loc[both]) / per_it(r.loc[both])).rename("ratio").reset_index()
    cost["pk"] = cost["workload"].map(_program_kind)
    cost["kk"] = cost["scheduler"].map(_POLICY_KIND)
    rho = cost.groupby(["pk", "kk"])["ratio"].mean().to_dict()
    rho_kind = cost.groupby("kk")["ratio"].mean().to_dict()
    cats = [k for k in both if k[1] == "cats"]
    counts = pd.DataFrame(
        {
            "pk": [_program_kind(k[0]) for k in cats],
            "ratio": [
                m.loc[k, "detailed_iterations"] / r.loc[k, "detailed_iterations"] for k in cats
            ],
        }
    )
    c_kind = counts.groupby("pk")["ratio"].mean().to_dict()
    c_all = float(counts["ratio"].mean()) if len(counts) else 1.0
    ws_run = m[m.index.get_level_values("scheduler") == "ws"]["detailed_iterations"]
    fixed = float((m["point_wall_s"] - m["wall_s"]).median())
    hours: dict[str, float] = {}
    longest, projected, unprojectable = (0.0, ""), 0, []
    # the run seeds of each (program, scheduler): an unrun seed takes their mean time
    twins = m.groupby(level=["workload", "scheduler"])["point_wall_s"].mean().to_dict()
    for k, a in r.iterrows():
        w, s, seed = k
        if k in m.index:
            v = float(m.loc[k, "point_wall_s"])
        elif (w, s) in twins:
            v = float(twins[(w, s)])
            projected += 1
        else:
            pk, kk = _program_kind(w), _POLICY_KIND[s]
            f = rho.get((pk, kk), rho_kind.get(kk))
            if f is None:
                unprojectable.append(f"{w}/{s}/{seed}")
                continue
            if s == "ws" and len(ws_run):
                n = float(ws_run.median())
            elif s == "cats":
                n = a["detailed_iterations"] * c_kind.get(pk, c_all)
            else:
                n = float(a["detailed_iterations"])
            v = n * float(per_it(a)) * f + fixed
            projected += 1
        hours[s] = hours.get(s, 0.0) + v / 3600
        if v > longest[0]:
            longest = (v, f"{w}/{s}/seed {seed}")
    total = sum(hours.values())
    out = {
        "points_run": int(len(r) - projected - len(unprojectable)),
        "points_projected": projected,
        "hours_by_scheduler": {s: round(h, 1) for s, h in hours.items()},
        "hours_one_runner": round(total, 1),
        f"hours_{workers}_workers": round(max(total / workers, longest[0] / 3600), 2),
        "longest_point": longest[1],
        "longest_point_hours": round(longest[0] / 3600, 2),
        "cost_ratio_per_detailed_iteration": {f"{p}/{q}": round(v, 2) for (p, q), v in rho.items()},
        "cats_iteration_count_ratio": {p: round(v, 2) for p, v in c_kind.items()},
        "ws_detailed_iterations": float(ws_run.median()) if len(ws_run) else None,
        "outside_replay_s": round(fixed),
    }
    if unprojectable:
        out["not_projected"] = unprojectable
    return out


def iteration_locality(point: Path) -> pd.DataFrame:
    """Per iteration of one finished sweep point: its period and its local DRAM share.

    Reads the point's ``timeline.npz`` (every strand's end and DRAM lines) and the trace
    its ``config.json`` names (which iteration each strand belongs to).  The *period* of
    an iteration is the cycles from the previous iteration's last strand end to its own
    (as sampling measures it, docs/engine.md §7); the *local share* is the share of its
    strands' DRAM lines served by their own socket's node.  What it shows: CATS packs
    like LAWS but hands its CF subtrees to whichever socket is free, so the share moves
    from one iteration to the next and the iteration's time with it (docs/experiments.md,
    "CATS at full size").

    Raises
    ------
    ConfigError
        No timeline or record there, or the trace it names is gone.
    """
    from simsched.plotting.timeline import load_timeline
    from simsched.trace import open_trace

    arrays, _ = load_timeline(point)
    try:
        path = Path(json.loads((Path(point) / "config.json").read_text())["trace"])
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"{point}: no config.json naming the point's trace ({e})") from None
    if not path.is_file():
        raise ConfigError(f"{point}: its trace {path} is gone; run the point again")
    with open_trace(path) as t:
        frame_it = np.asarray(t.frames.iteration, dtype=np.int64)
        it = frame_it[np.asarray(t.strands.frame, dtype=np.int64)]
    ran = np.asarray(arrays["end"]) >= 0
    rows, prev = [], 0
    for i in np.unique(it[(it >= 0) & ran]):
        m = (it == i) & ran
        end = int(np.asarray(arrays["end"])[m].max())
        loc = int(np.asarray(arrays["dram_local"])[m].sum())
        rem = int(np.asarray(arrays["dram_remote"])[m].sum())
        share = loc / (loc + rem) if loc + rem else float("nan")
        rows.append({"iteration": int(i), "period": end - prev, "local_share": share})
        prev = end
    return pd.DataFrame(rows)


def memory_bound(df: pd.DataFrame, out: Path) -> list[dict]:
    """Fig. 7, Table IV and Fig. 8 of one sweep."""
    s = summary(df)
    write_csv(s.round(4), out / "summary.csv", index=False)
    t4 = s[
        [
            "workload",
            "scheduler",
            "straggler_shared_misses",
            "straggler_dram_local",
            "straggler_dram_remote",
            "local_share",
        ]
    ]
    write_csv(t4.round(3), out / "table4.csv", index=False)
    lines = [
        fig7(s, out / "fig7.png"),
        {"figure": "table4", "rows": t4.round(3).to_dict(orient="records")},
        fig8(df, out / "fig8.png"),
    ]
    cost = sampling_cost(df)
    if cost:
        lines.append({"figure": "sampling-cost", "rows": cost})
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="*", type=Path)
    ap.add_argument("-o", "--out", type=Path, default=None)
    ap.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="a finished sampled study to project a partly-run one from (cost_projection)",
    )
    ap.add_argument(
        "--spec",
        default=None,
        help="the spec whose point order the schedule line uses (a name in this folder, "
        "e.g. published, or a path); default: the one named like the results folder",
    )
    a = ap.parse_args()
    spec = _spec_path(a.spec) if a.spec else None
    ref = load_figure_rows(a.reference, HERE, schedulers=LAWS_FAMILY) if a.reference else None
    for res in a.results or default_results():
        out = a.out or default_figures(res, HERE, HERE / "figures" / res.name)
        # before any folder is made: a bad path leaves none
        df = load_figure_rows(res, HERE, schedulers=LAWS_FAMILY)
        sweep = str(df["sweep"].iloc[0]) if "sweep" in df and len(df) else ""
        draw = {
            "laws_scaling": scaling,
            "laws_cpu": cpu_bound,
            "laws_sensitivity": sensitivity,
        }.get(sweep, memory_bound)
        for sub, part in _by_machine(df, draw is memory_bound):
            (out / sub).mkdir(parents=True, exist_ok=True)
            lines = draw(part, out / sub)
            order = ["workload", "machine", "scheduler", "seed"]
            write_points(part, out / sub / "points.csv", [*order, *POINT_COLUMNS], order)
            if ref is not None and draw is memory_bound and not sub:
                proj = cost_projection(part, ref)
                if proj:
                    write_json_atomic(out / "projection.json", proj, sort_keys=False)
                    lines.append({"figure": "projection", "reference": a.reference.name, **proj})
            for line in lines:
                tag = {"machine": sub} if sub else {}
                print(json_line({"results": res.name, **tag, **line}))
        drawn = draw is memory_bound and _sampled(df)
        order = _spec_order(spec or HERE / f"{res.name}.yaml") if drawn else []
        plan = schedule(df, order)
        if plan:
            print(json_line({"results": res.name, "figure": "schedule", **plan}))


def _sampled(df: pd.DataFrame) -> bool:
    return "sampled" in df and bool(df["sampled"].fillna(False).astype(bool).any())


def _spec_order(spec: Path) -> list[str]:
    """The point ids of the sweep spec ``spec``, in the runner's order; empty when there is
    no such file (a results folder named like no spec of the study)."""
    from simsched.experiments import load_spec

    return [p.id for p in load_spec(spec).points()] if spec.is_file() else []


def _spec_path(name: str) -> Path:
    """``--spec``: a spec of this study by name (``published``) or a path to one; a
    :class:`ConfigError` naming it when there is no such file.  A rerun's rows copied to a
    folder named otherwise (``rerun-2026-12-02``) then still get their ``schedule`` line."""
    path = Path(name)
    for cand in (path, HERE / name, HERE / f"{name}.yaml"):
        if cand.is_file():
            return cand
    raise ConfigError(f"--spec {name}: no such sweep spec (a name in {HERE}, or a path)")


def _by_machine(df: pd.DataFrame, split: bool) -> list[tuple[str, pd.DataFrame]]:
    """A memory-bound sweep over several machines, one part per machine (its label).

    Fig. 7 and Table IV normalise to WS per program; a sweep that ran a program on two
    machine variants (published_intel.yaml with the measured-STREAM memory rate) would
    otherwise average the variants together.  The first machine in the store's row order
    (``sort_rows``: by workload, then machine name) keeps the top of the folder, the others
    go to a subfolder named by the machine's label.
    """
    machines = list(dict.fromkeys(df["machine"])) if split and "machine" in df else []
    if len(machines) < 2:
        return [("", df)]
    return [("" if i == 0 else m, df[df["machine"] == m]) for i, m in enumerate(machines)]


if __name__ == "__main__":
    run_script(main)
