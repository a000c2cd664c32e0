"""Redraw [LAWS15] §6.2-6.3's Fig. 7, Table IV and Fig. 8 from a laws sweep; print the numbers.

    python experiments/laws/make_figures.py [RESULTS] [-o FIGDIR]

RESULTS is the sweep's output folder (default: results/medium beside this file if it has
points, else results/small).  Writes ``fig7.png`` (time normalised to WS per program and
scheduler), ``table4.csv`` (the straggler socket's shared-cache misses and local / remote
DRAM lines, and the whole machine's local share), ``fig8.png`` (per-iteration time under
LAWS, seed 0, with the packing moves of Algorithm 1), ``summary.csv`` (one row per program
and scheduler: means over seeds, normalised time, steady-state iteration time) and prints
one JSON line per figure.

Definitions: *normalised time* is a scheduler's mean makespan over WS's (Fig. 7); *gain*
is WS's over the scheduler's minus one (the paper's "faster than Cilk"); the *steady*
iteration time is the mean of the iterations LAWS ran under its final packing (Algorithm 1
done), and the mean of the same iterations for CATS and LAWS-NC (WS's records carry no
iteration times).  Means are over seeds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.experiments import load_ok_results, study_results

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


def default_results() -> Path:
    """results/medium if it holds points, else results/small."""
    return study_results(HERE, "medium")


load = load_ok_results


def _steady(rows: pd.DataFrame, final: dict[tuple[str, int], list[int]]) -> float:
    """Mean time of the iterations LAWS ran under its final packing, same seed."""
    out = []
    for _, r in rows.iterrows():
        its = json.loads(r["iteration_cycles"]) if isinstance(r["iteration_cycles"], str) else []
        idx = final.get((r["workload"], int(r["seed"])), [])
        vals = [its[i] for i in idx if i < len(its)]
        if vals:
            out.append(np.mean(vals))
    return float(np.mean(out)) if out else float("nan")


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
    out["seeds"] = g["seed"].nunique()
    out = out.reset_index()
    ws = out[out["scheduler"] == "ws"].set_index("workload")["makespan_cycles"]
    out["norm_time"] = out["makespan_cycles"] / out["workload"].map(ws)
    out["gain_vs_ws"] = out["workload"].map(ws) / out["makespan_cycles"] - 1
    out["local_share"] = out["dram_local"] / (out["dram_local"] + out["dram_remote"])
    out["steady_iteration_cycles"] = [
        _steady(df[(df["workload"] == w) & (df["scheduler"] == s)], final)
        if s != "ws"
        else float("nan")
        for w, s in zip(out["workload"], out["scheduler"], strict=True)
    ]
    key = {w: i for i, w in enumerate(ORDER)}
    out["_o"] = out["workload"].map(lambda w: key.get(w, 99)) * 10 + out["scheduler"].map(
        lambda s: SCHEDS.index(s) if s in SCHEDS else 9
    )
    return out.sort_values("_o").drop(columns="_o").reset_index(drop=True)


def fig7(s: pd.DataFrame, path: Path) -> dict:
    import matplotlib.pyplot as plt

    t = s.pivot(index="workload", columns="scheduler", values="norm_time")
    t = t.reindex([w for w in ORDER if w in t.index])[[c for c in SCHEDS if c in t.columns]]
    ax = t.plot.bar(figsize=(9, 3.2), width=0.8)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_ylabel("time / WS")
    ax.set_xlabel("")
    ax.set_title("Fig. 7 (simsched): opteron-8380-4x4, caches and row lengths / 64")
    ax.legend(ncol=4, fontsize=8)
    plt.tight_layout()
    plt.savefig(path, dpi=80)
    plt.close()
    return {"figure": "fig7", "norm_time": t.round(3).to_dict(orient="index")}


def fig8(df: pd.DataFrame, path: Path) -> dict:
    import matplotlib.pyplot as plt

    laws = df[(df["scheduler"] == "laws") & (df["seed"] == df["seed"].min())]
    wl = [w for w in ORDER if w in set(laws["workload"])]
    fig, axes = plt.subplots(3, 4, figsize=(11, 6.5), squeeze=False)
    out = {}
    for ax, w in zip(axes.ravel(), wl, strict=False):
        r = laws[laws["workload"] == w].iloc[0]
        its = np.array(json.loads(r["iteration_cycles"]), dtype=float) / 1e6
        pk = json.loads(r["packing"])
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
    plt.savefig(path, dpi=70)
    plt.close()
    return {"figure": "fig8", "laws_seed0": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", type=Path, default=None)
    ap.add_argument("-o", "--out", type=Path, default=None)
    a = ap.parse_args()
    res = a.results or default_results()
    out = a.out or HERE / "figures" / res.name
    out.mkdir(parents=True, exist_ok=True)
    df = load(res)
    s = summary(df)
    s.round(4).to_csv(out / "summary.csv", index=False)
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
    t4.round(3).to_csv(out / "table4.csv", index=False)
    print(json.dumps(fig7(s, out / "fig7.png")))
    print(json.dumps({"figure": "table4", "rows": t4.round(3).to_dict(orient="records")}))
    print(json.dumps(fig8(df, out / "fig8.png")))


if __name__ == "__main__":
    main()
