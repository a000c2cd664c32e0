"""The studies' make_figures.py helpers that the small notebooks do not reach.

``sampling_cost`` only has work on a sampled study (published.yaml) and ``link_table``
only finds a busy link on first-touch runs, so both are checked here on hand-made rows.
"""

from __future__ import annotations

import importlib.util
import json
import runpy
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simsched.experiments.scripts
from tests.experiments.script_exits import one_line_exit

ROOT = Path(__file__).resolve().parents[2]


def _script(study: str, name: str = "make_figures"):
    path = ROOT / "experiments" / study / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_{study}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sampled_row(sched: str, periods: list[int], settled: int, n: int, **kw) -> dict:
    makespan = sum(periods) + (n - len(periods)) * sum(periods[settled:]) / (len(periods) - settled)
    row = {
        "workload": "heat",
        "scheduler": sched,
        "seed": 0,
        "sampled": True,
        "sample_iterations": 2,
        "settled_at": settled,
        "detailed_iterations": len(periods),
        "trace_iterations": n,
        "makespan_cycles": makespan,
        "wall_s": 10.0 * len(periods),
        "point_wall_s": 10.0 * len(periods) + 4.0,
        "iteration_cycles": json.dumps(periods + [-1] * (n - len(periods))),
    }
    row.update(kw)
    return row


def test_sampling_cost_prices_the_precision_rule_and_reextrapolates():
    laws = _script("laws")
    periods = [150, 100, 120, 80, 100, 100]  # settled at 1: samples 100, 120 | 80 ...
    rows = [
        _sampled_row("cats", periods, settled=1, n=20),
        # a detailed run and a GE row: counted in hours, not re-extrapolated
        _sampled_row("cats", periods, settled=1, n=20, workload="ge"),
        _sampled_row("ws", [150, 100, 100], settled=1, n=20, iteration_cycles=None),
        {"scheduler": "ws", "sampled": False},
    ]
    out = {r["scheduler"]: r for r in laws.sampling_cost(pd.DataFrame(rows))}
    cats = out["cats"]
    assert cats["points"] == 2
    # 6 detailed iterations at 10 s each + 4 s outside the replay, twice
    assert cats["hours"] == round(2 * 64 / 3600, 2)
    # without the rule: settled_at + 2 samples = 3 iterations each
    assert cats["hours_without_precision_rule"] == round(2 * 34 / 3600, 2)
    # the first three periods (150, 100, 120) and 17 more at the samples' mean of 110
    est = 150 + 100 + 120 + 17 * 110
    dev = est / rows[0]["makespan_cycles"] - 1
    assert cats["estimates_compared"] == 1
    assert cats["deviation_range"] == [round(dev, 4), round(dev, 4)]
    assert cats["half_width_range"][0] > 0
    assert out["ws"]["points"] == 1 and "deviation_range" not in out["ws"]


def test_schedule_starts_points_in_the_spec_order_on_the_first_free_runner():
    laws = _script("laws")
    h = 3600.0
    rows = [
        {"point_id": "a", "point_wall_s": 1 * h},
        {"point_id": "b", "point_wall_s": 1 * h},
        {"point_id": "c", "point_wall_s": 4 * h},
        {"point_id": "x", "point_wall_s": 9 * h},  # not a point of the spec: left out
    ]
    plan = laws.schedule(pd.DataFrame(rows), ["a", "b", "c", "gone"], workers=(2, 3))
    assert plan["points"] == 3 and plan["hours_one_runner"] == 6.0
    # a and b start together, c waits for the first free runner: 1 + 4
    assert plan["2_runners"] == {"spec_order": 5.0, "longest_first": 4.0, "bound": 4.0}
    assert plan["3_runners"] == {"spec_order": 4.0, "longest_first": 4.0, "bound": 4.0}
    assert laws.schedule(pd.DataFrame(rows), ["gone"]) == {}
    assert laws.schedule(pd.DataFrame([{"point_id": "a"}]), ["a"]) == {}


def test_sampling_cost_reads_iteration_ends_of_any_policy():
    laws = _script("laws")
    periods = [150, 100, 120, 80, 100, 100]
    ends = json.dumps([sum(periods[: i + 1]) for i in range(len(periods))])
    row = _sampled_row("ws", periods, settled=1, n=20, iteration_cycles=None)
    row["iteration_ends"] = ends
    (ws,) = laws.sampling_cost(pd.DataFrame([row]))
    est = 150 + 100 + 120 + 17 * 110
    dev = round(est / row["makespan_cycles"] - 1, 4)
    assert ws["deviation_range"] == [dev, dev]


def test_sampling_cost_is_empty_for_a_detailed_study():
    laws = _script("laws")
    df = pd.DataFrame([{"scheduler": "ws", "makespan_cycles": 1}])
    assert laws.sampling_cost(df) == []


def _laws_rows(workloads, machines, scheds, **extra) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "workload": w,
                "machine": m,
                "scheduler": s,
                "seed": 0,
                "makespan_cycles": 100.0 if s == "ws" else 80.0,
                "straggler_shared_misses": 5.0,
                "straggler_dram_local": 3.0,
                "utilization": 0.9,
                "packing_mode": "cpu-bound",
                **extra,
            }
            for w in workloads
            for m in machines
            for s in scheds
        ]
    )


def test_laws_figures_of_a_partly_run_study_leave_what_lacks_ws_empty(tmp_path):
    """A study interrupted before WS ran a program (or a machine variant) draws the rest;
    each figure ended in a KeyError traceback."""
    laws = _script("laws")
    # Fig. 7: heat has no WS row yet, GE has
    df = pd.concat(
        [
            _laws_rows(["heat"], ["m"], ["laws"], makespan_ci95=json.dumps([79.0, 81.0])),
            _laws_rows(["ge"], ["m"], ["ws", "laws"], makespan_ci95=json.dumps([79.0, 81.0])),
        ]
    ).assign(packing="[]", iteration_cycles="[]", L3_misses=1.0, dram_local=1.0)
    s = laws.summary(df.assign(dram_remote=1.0, straggler_dram_remote=1.0)).set_index(
        ["workload", "scheduler"]
    )
    assert np.isnan(s.loc[("heat", "laws"), "norm_time"])
    assert np.isnan(s.loc[("heat", "laws"), "norm_ci95"])
    assert s.loc[("ge", "laws"), "norm_time"] == 0.8
    # Figs. 9-12 and 13: no WS row at all
    (row,) = laws.scaling(_laws_rows(["heat-ir[nx=66]"], ["m"], ["laws"]), tmp_path)[0]["rows"]
    assert np.isnan(row["laws_reduction_vs_ws"][0])
    (fig13,) = laws.cpu_bound(_laws_rows(["fib", "qs"], ["m"], ["laws"]), tmp_path)
    assert np.isnan(fig13["norm_time"]["m/fib"]["laws"])
    part = _laws_rows(["fib"], ["m"], ["ws", "laws"])
    (fig13,) = laws.cpu_bound(pd.concat([part, _laws_rows(["qs"], ["m"], ["laws"])]), tmp_path)
    assert fig13["norm_time"]["m/fib"]["laws"] == 0.8
    assert np.isnan(fig13["norm_time"]["m/qs"]["laws"])
    # the sensitivity study before its out-of-order variants ran
    (sens,) = laws.sensitivity(
        _laws_rows(["heat"], ["blocking", "blocking-links/2"], ["ws", "laws"]), tmp_path
    )
    assert [r["gain"] for r in sens["rows"]] == [0.25, 0.25]
    assert (tmp_path / "sensitivity.png").is_file()


def _cab_heat_rows(cab):
    """A WS and a CAB row of heat-512 alone, CAB at BL 0 (too shallow): a CAB study
    interrupted before its other programs."""
    return pd.DataFrame(
        {
            "workload": ["heat-512"] * 2,
            "machine": [cab.SCALED] * 2,
            "scheduler": ["ws", "cab"],
            "seed": [0, 0],
            "makespan_cycles": [100.0, 90.0],
            "L2_misses": [10.0, 8.0],
            "L3_misses": [5.0, 4.0],
            "bl": [float("nan"), 0.0],
            "bl_reason": ["", "too-shallow"],
        }
    )


def test_cab_figures_of_a_study_interrupted_before_its_first_figure_program(tmp_path):
    """Only heat-512 ran (the spec's first program): the figures that need the others
    draw empty; an empty table of Fig. 4 ended in a KeyError traceback."""
    cab = _script("cab")
    df = _cab_heat_rows(cab)
    cab.draw(df, tmp_path)
    assert (tmp_path / "fig4.png").is_file() and (tmp_path / "fig9.png").is_file()
    assert pd.read_csv(tmp_path / "table4.csv").empty
    # the per-point table: the columns the rows have, one row per point, by workload and
    # scheduler (cab before ws)
    points = pd.read_csv(tmp_path / "points.csv")
    assert list(points["scheduler"]) == ["cab", "ws"]
    assert list(points.columns[:4]) == ["workload", "machine", "scheduler", "seed"]
    assert "bl_eq4" not in points and points["makespan_cycles"].tolist() == [90.0, 100.0]
    rows = {line["figure"]: line["rows"] for line in cab.summary(df) if "rows" in line}
    assert rows["4+table4"] == [] and rows["5-6 heat"][0]["norm_time"] == 0.9


def test_saws_job_desires_are_each_jobs_median_over_its_quanta():
    saws = _script("saws")
    jobs = [
        {"name": "fib-0", "quantum_desires": [1.0, 2.0, 40.0]},
        {"name": "lu-1", "quantum_desires": [8.0, 8.0]},
        {"name": "ws-job", "quantum_desires": []},  # WS-EQUI keeps none
    ]
    df = pd.DataFrame(
        [
            {"mix": 0, "lam": 1.0, "sched": s, "seed": 0, "jobs": json.dumps(jobs)}
            for s in ("saws", "asteal")
        ]
    )
    table, summary = saws.job_desires(df)
    assert list(table.columns) == saws.DESIRE_COLUMNS
    assert table[table["sched"] == "saws"]["median_desire"].tolist() == [2.0, 8.0]
    assert table["quanta"].tolist() == [3, 2, 3, 2]
    assert summary["saws"] == {"jobs": 2, "median": 5.0, "p90": 7.4}


def test_saws_published_improvements_of_a_partly_run_study():
    """Mixes a scheduler has not run yet are left out of its comparison, a scheduler not
    run at all is left out; both ended in a KeyError traceback."""
    saws = _script("saws")
    rows = [
        {
            "lam": lam,
            "mix": mix,
            "sched": sched,
            "seed": seed,
            "makespan_cycles": 100.0 if sched == "saws" else 100.0 + 10 * (mix + 1),
            "mean_response_cycles": 50.0,
            "utilization": 0.5,
        }
        for lam in (0.0625, 1.0)
        for mix in (0, 1)
        for sched in ("saws", "asteal", "ws-equi")
        for seed in (0, 1)
    ]
    df = pd.DataFrame(rows)
    whole = saws.published_improvements(df)
    assert [r["vs_asteal"]["mixes"] for r in whole] == [4, 2, 2]
    # A-Steal has not run mix 1 at lambda 1, WS-EQUI nothing, SAWS nothing at lambda 1
    part = df[~((df["mix"] == 1) & (df["lam"] == 1.0) & (df["sched"] == "asteal"))]
    part = part[part["sched"] != "ws-equi"]
    got = saws.published_improvements(part)
    assert [r["vs_asteal"]["mixes"] for r in got] == [3, 2, 1]
    assert all("vs_ws-equi" not in r for r in got)
    assert got[2]["vs_asteal"]["makespan_pct"] == [round(100 * 10 / 110, 2), None]
    no_saws = saws.published_improvements(df[~((df["lam"] == 1.0) & (df["sched"] == "saws"))])
    assert no_saws[2] == {"figure": "published", "lam": 1.0}


def _link_row(sched: str, seed: int, lines01: int, util01: float, dram: int) -> dict:
    links = [
        {"from": 0, "to": 1, "lines": lines01, "queue_delay": 10 * lines01, "utilization": util01},
        {"from": 0, "to": 2, "lines": 5, "queue_delay": 0, "utilization": 0.1},
    ]
    socks = [{"local": dram // 2, "remote": 0}, {"local": 0, "remote": dram - dram // 2}]
    return {
        "workload": "ge",
        "machine": "opteron-s16",
        "scheduler": sched,
        "seed": seed,
        "link_traffic": json.dumps(links),
        "dram_by_socket": json.dumps(socks),
    }


def test_link_table_reads_the_link_ws_loads_most():
    cab = _script("cab")
    df = pd.DataFrame(
        [
            _link_row("ws", 0, 40, 0.9, 100),
            _link_row("cab", 0, 50, 0.8, 100),
            # interleaved runs are left out
            {**_link_row("ws", 0, 1, 0.1, 100), "machine": "opteron-s16-interleave"},
        ]
    )
    t = cab.link_table(df).set_index("scheduler")
    assert list(t["link"]) == ["0->1", "0->1"]
    assert t.loc["ws", "utilization"] == pytest.approx(0.9)
    assert t.loc["cab", "share"] == pytest.approx(0.5)
    assert t.loc["cab", "queue_per_line"] == pytest.approx(10.0)


def test_a_sweep_over_two_machines_is_drawn_per_machine():
    laws = _script("laws")
    df = pd.DataFrame(
        {
            "machine": ["xeon", "xeon", "xeon-stream", "xeon-stream"],
            "scheduler": ["ws", "laws", "ws", "laws"],
            "makespan_cycles": [100, 90, 200, 150],
        }
    )
    parts = laws._by_machine(df, split=True)
    assert [name for name, _ in parts] == ["", "xeon-stream"]
    assert [list(p["makespan_cycles"]) for _, p in parts] == [[100, 90], [200, 150]]
    # one machine, or a sweep drawn otherwise (scaling, cpu): left whole
    assert laws._by_machine(df[df["machine"] == "xeon"], split=True)[0][0] == ""
    assert len(laws._by_machine(df, split=False)) == 1


def _cost_row(w: str, sched: str, seed: int, iters: int, per_it: float, outside: float = 5.0):
    return {
        "workload": w,
        "scheduler": sched,
        "seed": seed,
        "detailed_iterations": iters,
        "wall_s": iters * per_it,
        "point_wall_s": iters * per_it + outside,
    }


def test_cost_projection_keeps_run_points_and_scales_the_rest():
    laws = _script("laws")
    ref = pd.DataFrame(
        [
            _cost_row(w, s, seed, n, 1.0)
            for w in ("heat", "ge")
            for s, n in (("ws", 40), ("laws", 10), ("cats", 100))
            for seed in (0, 1)
        ]
    )
    run = pd.DataFrame(
        [
            _cost_row("heat", "ws", 0, 8, 3.0),  # 3x the cost per iteration, 8 iterations
            _cost_row("heat", "laws", 0, 10, 5.0),
            _cost_row("heat", "cats", 0, 25, 5.0),  # a quarter of the reference's count
        ]
    )
    p = laws.cost_projection(run, ref, workers=4)
    assert (p["points_run"], p["points_projected"]) == (3, 9)
    assert p["cost_ratio_per_detailed_iteration"] == {"2d/packed": 5.0, "2d/ws": 3.0}
    assert p["cats_iteration_count_ratio"] == {"2d": 0.25}
    assert p["ws_detailed_iterations"] == 8.0 and p["outside_replay_s"] == 5
    # heat at seed 1 takes seed 0's measured point; GE falls back to its policy kind's
    # ratio (no GE point ran), WS to the run WS count, CATS to a quarter of its own count
    ws = 2 * (8 * 3.0 + 5) + 2 * (8 * 1.0 * 3.0 + 5)
    laws_h = 2 * (10 * 5.0 + 5) + 2 * (10 * 1.0 * 5.0 + 5)
    cats = 2 * (25 * 5.0 + 5) + 2 * (100 * 0.25 * 5.0 + 5)
    assert p["hours_by_scheduler"] == {
        "ws": round(ws / 3600, 1),
        "laws": round(laws_h / 3600, 1),
        "cats": round(cats / 3600, 1),
    }
    total = (ws + laws_h + cats) / 3600
    assert p["hours_one_runner"] == round(total, 1)
    assert p["hours_4_workers"] == round(max(total / 4, 130 / 3600), 2)
    assert p["longest_point"] == "heat/cats/seed 0"


def test_cost_projection_needs_a_shared_sampled_point():
    laws = _script("laws")
    ref = pd.DataFrame([_cost_row("heat", "ws", 0, 40, 1.0)])
    assert laws.cost_projection(pd.DataFrame([_cost_row("sor", "ws", 0, 8, 1.0)]), ref) == {}
    detailed = pd.DataFrame([{"workload": "heat", "scheduler": "ws", "seed": 0}])
    assert laws.cost_projection(detailed, ref) == {}


def test_make_figures_projects_the_intel_study_from_the_committed_records(
    tmp_path, monkeypatch, capsys
):
    laws = _script("laws")
    records = ROOT / "experiments" / "laws" / "published-records"
    for name in ("published", "published_intel"):
        shutil.copytree(records / name, tmp_path / name / "points")
    out = tmp_path / "fig"
    argv = [str(tmp_path / "published_intel"), "--reference", str(tmp_path / "published")]
    monkeypatch.setattr(sys, "argv", ["make_figures.py", *argv, "-o", str(out)])
    laws.main()
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (line,) = [x for x in lines if x.get("figure") == "projection"]
    saved = json.loads((out / "projection.json").read_text())
    assert line == {
        "results": "published_intel",
        "figure": "projection",
        "reference": "published",
        **saved,
    }
    assert saved["points_run"] + saved["points_projected"] == 96
    assert saved["hours_one_runner"] == pytest.approx(
        sum(saved["hours_by_scheduler"].values()), abs=0.3
    )
    # every point of the spec has run: its schedule is the measured points'
    (plan,) = [x for x in lines if x.get("figure") == "schedule"]
    assert plan["points"] == 96
    assert plan["16_runners"]["bound"] <= plan["16_runners"]["longest_first"]
    assert plan["16_runners"]["longest_first"] <= plan["16_runners"]["spec_order"]


def test_a_rerun_folder_gets_its_schedule_from_the_spec_it_names(tmp_path, monkeypatch, capsys):
    """A rerun's rows kept under another name than the spec's printed no schedule line, so
    its wall time on two runners could not be had from the rows with one command."""
    laws = _script("laws")
    rows = ROOT / "experiments" / "laws" / "published-records" / "rerun-2026-12-02"
    shutil.copytree(rows, tmp_path / "rerun" / "points")
    n = sum(1 for d in rows.iterdir() if (d / "row.json").is_file())
    walls = [json.loads((d / "row.json").read_text())["point_wall_s"] for d in rows.iterdir()]

    def schedule(*extra):
        argv = ["make_figures.py", str(tmp_path / "rerun"), "-o", str(tmp_path / "fig"), *extra]
        monkeypatch.setattr(sys, "argv", argv)
        laws.main()
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        return [x for x in lines if x.get("figure") == "schedule"]

    assert schedule() == []  # no spec is named like the folder
    (plan,) = schedule("--spec", "published")
    assert plan["points"] == n
    assert plan["hours_one_runner"] == round(sum(walls) / 3600, 2)
    assert plan["2_runners"]["bound"] <= plan["2_runners"]["spec_order"]
    spec = ROOT / "experiments" / "laws" / "published.yaml"
    assert schedule("--spec", str(spec)) == [plan]
    argv = ["make_figures.py", str(tmp_path / "rerun"), "--spec", "nosuch"]
    monkeypatch.setattr(sys, "argv", argv)
    err = one_line_exit(capsys, lambda: simsched.experiments.scripts.run_script(laws.main))
    assert err.startswith("make_figures.py: --spec nosuch: no such sweep spec"), err


@pytest.mark.parametrize(
    ("study", "argv"),
    [
        ("laws", []),
        ("cab", []),
        ("cab", ["--placement"]),
        ("saws", ["--published"]),
        ("granularity", []),
        ("pdf_vs_ws", []),
    ],
)
def test_every_study_script_exits_2_on_a_study_that_has_not_run(
    study, argv, tmp_path, monkeypatch, capsys
):
    mod = _script(study)
    monkeypatch.setattr(mod, "HERE", tmp_path)  # a study folder with no results at all
    monkeypatch.setattr(sys, "argv", ["make_figures.py", *argv, "-o", str(tmp_path / "fig")])
    err = one_line_exit(capsys, mod.main)
    assert err.startswith("make_figures.py: ") and str(tmp_path / "results") in err
    assert not (tmp_path / "fig").exists()  # nothing written for a study that has not run


def test_granularity_figures_of_a_partly_run_study(tmp_path, monkeypatch, capsys):
    """WS ran, PDF not yet, and the automatic sweep has no finished point: the script
    ended in a traceback (an empty argmin; a table without a status column)."""
    from simsched.experiments.store import save_row

    mod = _script("granularity")
    monkeypatch.setattr(mod, "HERE", tmp_path)
    runs = [  # machine, scheduler, grain
        ("itrs-scaling-8", "ws", 64),
        ("itrs-scaling-8", "ws", 256),
        ("itrs-scaling-8", "pdf", 256),
        ("itrs-scaling-16", "ws", 64),
    ]
    for i, (m, sched, grain) in enumerate(runs):
        row = {
            "point_id": f"p{i}", "status": "ok", "machine": m, "cores": int(m.split("-")[-1]),
            "scheduler": sched, "seed": 0, "workload.n": 1024, "workload.grain": grain,
            "makespan_cycles": 1000, "mpki": 1.0, "L2_misses": grain, "instructions": 10**6,
        }  # fmt: skip
        save_row(tmp_path / "results" / "fig6", f"p{i}", row)
    (tmp_path / "results" / "auto" / "points").mkdir(parents=True)
    monkeypatch.setattr(sys, "argv", ["make_figures.py", "-o", str(tmp_path / "fig")])
    mod.main()
    out = capsys.readouterr().out
    assert "itrs-scaling-16: only WS has run so far; PDF/WS needs both" in out
    # both ran, but not both at the smallest grain
    assert "itrs-scaling-8: PDF/WS at their best grains 1.000x" in out
    assert "L2 misses PDF/WS at grain 64: n/a (not run by both yet)" in out
    assert (tmp_path / "fig" / "fig6_grain.png").is_file()
    assert not (tmp_path / "fig" / "fig8_auto.png").exists()


def _granularity_rows(folder, machines=("itrs-scaling-8",), auto=False):
    """Finished points of the granularity sweeps (WS and PDF at grains 64 and 256) in
    ``folder``; ``auto``: of the automatic sweep (one per machine and scheduler)."""
    from simsched.experiments.store import save_row

    i = 0
    for m in machines:
        for sched in ("ws", "pdf"):
            for grain in [None] if auto else [64, 256]:
                row = {
                    "point_id": f"p{i}", "status": "ok", "machine": m,
                    "cores": int(m.split("-")[-1]), "scheduler": sched, "seed": 0,
                    "makespan_cycles": 1000 + i, "mpki": 1.0, "L2_misses": 10 + i,
                    "instructions": 10**6,
                }  # fmt: skip
                if grain is not None:
                    row.update({"workload.n": 16384, "workload.grain": grain})
                save_row(folder, f"p{i}", row)
                i += 1


def test_granularity_figures_of_the_small_study(tmp_path, monkeypatch, capsys):
    """The small study (small.yaml writes results/small/fig6, or wherever --set out= says)
    could not be drawn: the script read results/fig6 only and took no folder."""
    mod = _script("granularity")
    monkeypatch.setattr(mod, "HERE", tmp_path)
    # a folder given on the command line, its automatic sweep beside it
    _granularity_rows(tmp_path / "elsewhere" / "g6")
    _granularity_rows(tmp_path / "elsewhere" / "auto", auto=True)
    monkeypatch.setattr(sys, "argv", ["make_figures.py", str(tmp_path / "elsewhere" / "g6")])
    mod.main()
    assert "itrs-scaling-8: PDF/WS at their best grains" in capsys.readouterr().out
    drawn = tmp_path / "elsewhere" / "figures"
    assert {p.name for p in drawn.iterdir()} == {
        "fig6_grain.png",
        "fig8_auto.png",
        "summary.csv",
        "points.csv",
        "auto_points.csv",
    }
    # one row per point of each sweep, with the columns the tables are computed from
    points = pd.read_csv(drawn / "points.csv")
    assert len(points) == 4  # WS and PDF at grains 64 and 256
    assert {"workload.grain", "makespan_cycles", "L2_misses", "mpki"} <= set(points.columns)
    auto_points = pd.read_csv(drawn / "auto_points.csv")
    assert len(auto_points) == 2
    assert not (tmp_path / "figures").exists()  # the full study's figures are left alone
    # no argument: the small study's own folders when the full one has not run
    _granularity_rows(tmp_path / "results" / "small" / "fig6", ("itrs-scaling-16",))
    monkeypatch.setattr(sys, "argv", ["make_figures.py"])
    mod.main()
    assert "itrs-scaling-16: PDF/WS" in capsys.readouterr().out
    assert (tmp_path / "results" / "small" / "figures" / "fig6_grain.png").is_file()
    # --auto names the automatic sweep; a folder that is not one is one line, status 2
    bad = ["make_figures.py", "--auto", str(tmp_path / "none"), "-o", str(tmp_path / "fig")]
    monkeypatch.setattr(sys, "argv", bad)
    err = one_line_exit(capsys, mod.main)
    assert err.startswith("make_figures.py: ") and str(tmp_path / "none") in err
    assert not (tmp_path / "fig").exists()  # refused before anything is drawn


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{tmp}/auto"], "{tmp}/auto: no column workload.n: not the grain sweep"),
        (["{tmp}/g6", "--auto", "{tmp}/g6"], "--auto {tmp}/g6: a grain sweep, not the automatic"),
        (["{tmp}/g6", "-o", "{tmp}/file"], "-o {tmp}/file: not a folder"),
    ],
)
def test_granularity_figures_refuse_the_wrong_folders(tmp_path, monkeypatch, capsys, argv, message):
    """The automatic sweep given as the grain sweep ended in a KeyError traceback, a grain
    sweep given as the automatic one was averaged over its grains, and -o naming a file
    ended in a FileExistsError traceback."""
    mod = _script("granularity")
    monkeypatch.setattr(mod, "HERE", tmp_path)
    _granularity_rows(tmp_path / "g6")
    _granularity_rows(tmp_path / "auto", auto=True)
    (tmp_path / "file").write_text("")
    args = [a.format(tmp=tmp_path) for a in argv]
    monkeypatch.setattr(sys, "argv", ["make_figures.py", *args])
    err = one_line_exit(capsys, mod.main)
    assert err.startswith(f"make_figures.py: {message.format(tmp=tmp_path)}"), err
    assert not (tmp_path / "figures").exists()


@pytest.mark.parametrize("study", ["laws", "cab", "saws", "granularity", "pdf_vs_ws"])
def test_every_study_script_ends_ctrl_c_in_one_line(study, tmp_path, monkeypatch, capsys):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    # Ctrl-C while the rows load; the scripts import the helper when run, so they get this one
    monkeypatch.setattr(simsched.experiments.scripts, "load_figure_rows", interrupt)
    path = ROOT / "experiments" / study / "make_figures.py"
    argv = ["--published"] if study == "saws" else []
    monkeypatch.setattr(sys, "argv", [str(path), *argv, "-o", str(tmp_path / "fig")])

    def run():
        try:
            runpy.run_path(str(path), run_name="__main__")
        except KeyboardInterrupt:  # would stop the whole test session, not fail this test
            pytest.fail(f"{study}/make_figures.py lets Ctrl-C end in a traceback")

    err = one_line_exit(capsys, run, status=130)
    assert err.startswith("make_figures.py: interrupted")


def test_leaf_sharing_counts_neighbours_that_ran_near_in_time_on_the_socket():
    ls = _script("laws", "leaf_sharing")
    cols = ["iteration", "rank", "core", "socket", "start", "end", "dram"]
    table = pd.DataFrame(
        [
            (0, 0, 0, 0, 0, 5, 7777),  # the profiled first iteration: left out
            (1, 0, 0, 0, 0, 10, 100),
            (1, 1, 0, 0, 10, 20, 60),  # right after its neighbour, same core
            (1, 2, 8, 1, 0, 10, 100),  # both neighbours on socket 0
            (1, 3, 1, 0, 100, 110, 90),  # its neighbour on socket 1
        ],
        columns=cols,
    )
    line = ls.summarise(table)
    assert line["leaves"] == 4 and line["median_leaf_cycles"] == 10
    # leaf 1's neighbour 0 ran just before on its socket; leaf 0's neighbour 1 began only
    # when it ended; leaves 2 and 3 had no neighbour on their socket
    assert line["by_near_neighbours"] == {
        "0": {"leaves": 3, "dram_per_leaf": 97},
        "1": {"leaves": 1, "dram_per_leaf": 60},
    }
    assert line["neighbour_share"] == 1.0  # core 0 went from leaf 0 to its neighbour
    assert line["after_neighbour_on_core"] == {"leaves": 1, "dram_per_leaf": 60}
    assert line["not_after_neighbour_on_core"] == {"leaves": 3, "dram_per_leaf": 97}
    assert ls.summarise(table, first_iteration=True)["leaves"] == 5


def test_leaf_sharing_reads_a_run_and_refuses_another_traces(tmp_path, capsys):
    from simsched.api import run
    from simsched.workloads import generate

    ls = _script("laws", "leaf_sharing")
    trace, other = tmp_path / "t.sst", tmp_path / "o.sst"
    generate("25p", trace, nx=41, ny=12, nz=12, cutoff=8, iters=2, init=False)
    generate("25p", other, nx=49, ny=12, nz=12, cutoff=8, iters=2, init=False)
    run(trace, "xeon-x7560-4x8", "ws", out_dir=tmp_path / "r", speedup=False)
    ls.main([str(trace), str(tmp_path / "r")])
    line = json.loads(capsys.readouterr().out)
    positions, _ = ls.leaf_positions(trace)
    assert line["leaves"] == (positions["iteration"] == 1).sum() > 1
    with np.load(tmp_path / "r" / "timeline.npz") as npz:
        tl = {k: npz[k] for k in npz.files}
    leaves = set(positions.loc[positions["iteration"] == 1, "frame"])
    in_leaf = np.isin(tl["frame"], list(leaves))
    dram = int((tl["dram_local"][in_leaf] + tl["dram_remote"][in_leaf]).sum())
    groups = line["by_near_neighbours"].values()
    assert sum(g["leaves"] for g in groups) == line["leaves"]
    assert abs(sum(g["leaves"] * g["dram_per_leaf"] for g in groups) - dram) <= line["leaves"]
    err = one_line_exit(capsys, lambda: ls.main([str(other), str(tmp_path / "r")]))
    assert "another trace" in err
    err = one_line_exit(capsys, lambda: ls.main([str(trace), str(tmp_path / "nothing")]))
    assert "nothing" in err and "result.json" in err


def test_step_affinity_groups_iterations_by_the_blocks_that_kept_their_socket():
    sa = _script("cab", "step_affinity")
    # Frames: 0 main (no iteration); per iteration 0, 1, 2 two blocks (ranks 0 and 1).
    iteration = np.array([-1, 0, 0, 1, 1, 2, 2])
    table = pd.DataFrame({"frame": [1, 2, 3, 4, 5, 6], "iteration": [0, 0, 1, 1, 2, 2]})
    table["rank"] = table.groupby("iteration").cumcount()
    block = np.array([-1, 1, 2, 3, 4, 5, 6])
    # Cores 0-1 on socket 0, 2-3 on socket 1.  Iteration 1 keeps both owners and takes 50
    # cycles; in iteration 2 both blocks change socket (block 5 mostly) and it takes 150.
    rows = [  # frame, core, start, end
        (1, 0, 0, 100),
        (2, 2, 0, 100),
        (3, 1, 100, 150),
        (4, 3, 100, 150),
        (5, 2, 150, 270),
        (5, 0, 270, 300),
        (6, 0, 150, 300),
        (0, 0, 300, 900),  # main's strand after the loop: not an iteration
    ]
    f, c, s, e = (np.array(x) for x in zip(*rows, strict=True))
    tl = {"frame": f, "core": c, "start": s, "end": e, "socket_of_core": np.array([0, 0, 1, 1])}
    owned = sa.owners(tl, table, block)
    assert owned.set_index("frame")["owner"].to_dict() == {1: 0, 2: 1, 3: 0, 4: 1, 5: 1, 6: 0}
    line = sa.summarise(tl, owned, iteration)
    assert line["iterations"] == 2
    assert line["same_owner_share"] == 0.5
    assert line["by_same_owner"] == {
        "0.00": {"iterations": 1, "mean_cycles": 150},
        "1.00": {"iterations": 1, "mean_cycles": 50},
    }
    assert line["mean_iteration_cycles"] == 100
    # Block 5: 120 of its 150 cycles on its owner; the other three blocks wholly.
    assert line["concentration"] == round((50 + 50 + 120 + 150) / (50 + 50 + 150 + 150), 3)
    assert line["busy_cores_by_socket"] == [(50 + 30 + 150) / 200, (50 + 120) / 200]
    # Against a baseline twice as fast in iteration 1 and as fast in iteration 2.
    base = pd.Series([25.0, 150.0], index=[1, 2])
    paired = sa.summarise(tl, owned, iteration, baseline=base)
    assert paired["by_same_owner"]["1.00"]["mean_ratio_to_baseline"] == 2.0
    assert paired["by_same_owner"]["0.00"]["mean_ratio_to_baseline"] == 1.0
    assert paired["mean_ratio_to_baseline"] == 1.5 and paired["baseline_iterations"] == 2
    assert sa.iteration_lengths(tl, iteration).to_dict() == {1: 50, 2: 150}
    assert sa.owner_map(owned).to_numpy().tolist() == [[0, 1], [0, 1], [1, 0]]
    per = sa.per_iteration(tl, owned, iteration, baseline=base)
    assert per.to_dict("index") == {
        1: {"cycles": 50, "same_owner": 1.0, "ratio": 2.0},
        2: {"cycles": 150, "same_owner": 0.0, "ratio": 1.0},
    }


def test_step_affinity_reads_a_cab_run_and_refuses_bad_input(tmp_path, capsys):
    from simsched.api import run
    from simsched.workloads import generate

    sa = _script("cab", "step_affinity")
    trace, other = tmp_path / "t.sst", tmp_path / "o.sst"
    generate("ge", trace, n=128, cutoff=16, steps=6)
    generate("ge", other, n=128, cutoff=16, steps=5)
    run(trace, "opteron-8380-4x4", "cab", {"bl": 3}, out_dir=tmp_path / "cab", speedup=False)
    run(trace, "opteron-8380-4x4", "ws", out_dir=tmp_path / "ws", speedup=False)
    sa.main(
        [
            str(trace),
            str(tmp_path / "cab"),
            str(tmp_path / "ws"),
            "--baseline",
            str(tmp_path / "ws"),
            "--figure",
            str(tmp_path / "fig" / "affinity.png"),
        ]
    )
    assert (tmp_path / "fig" / "affinity.png").read_bytes()[:4] == b"\x89PNG"
    assert not [x for x in (tmp_path / "fig").iterdir() if x.name != "affinity.png"]
    cab, ws = (json.loads(x) for x in capsys.readouterr().out.splitlines())
    assert ws["mean_ratio_to_baseline"] == 1.0 and ws["baseline_iterations"] == 5
    assert cab["level"] == ws["level"] == 3
    assert cab["blocks_per_iteration"] == 4
    assert cab["iterations"] == ws["iterations"] == 5  # six steps, the first left out
    assert cab["concentration"] == 1.0  # a squad runs its inter-socket task alone
    assert sum(g["iterations"] for g in cab["by_same_owner"].values()) == 5
    err = one_line_exit(capsys, lambda: sa.main([str(trace), str(tmp_path / "ws")]))
    assert "--level" in err
    err = one_line_exit(capsys, lambda: sa.main([str(other), str(tmp_path / "cab")]))
    assert "another trace" in err
    err = one_line_exit(capsys, lambda: sa.main([str(trace), str(tmp_path / "ws"), "--level", "9"]))
    assert "no frame at level 9" in err
    bad = [str(trace), str(tmp_path / "cab"), "--figure", str(tmp_path / "f.nope")]
    err = one_line_exit(capsys, lambda: sa.main(bad))
    assert "f.nope" in err and "unsupported figure format" in err


def test_pdf_vs_ws_figures_of_another_sweep_exit_2_naming_it(tmp_path, monkeypatch, capsys):
    mod = _script("pdf_vs_ws")
    rows = tmp_path / "other.csv"  # a sweep of another study: none of its workloads
    rows.write_text(
        "workload,machine,cores,scheduler,seed,status,makespan_cycles\n"
        "heat,itrs-scaling-1,1,ws,0,ok,100\n"
    )
    monkeypatch.setattr(sys, "argv", ["make_figures.py", str(rows), "-o", str(tmp_path / "fig")])
    err = one_line_exit(capsys, mod.main)  # a traceback from the figure code, before
    assert err == (
        f"make_figures.py: {rows}: no runs of mergesort, hashjoin, fib: not a pdf_vs_ws sweep\n"
    )
    assert not (tmp_path / "fig").exists()


def test_pdf_vs_ws_writes_a_row_per_point(tmp_path, monkeypatch, capsys):
    """points.csv: one row per point with the columns ratios.csv is computed from."""
    from simsched.experiments.store import save_row

    mod = _script("pdf_vs_ws")
    monkeypatch.setattr(mod, "HERE", tmp_path)
    i = 0
    for machine, cores in (("itrs-scaling-1", 1), ("itrs-scaling-2", 2), ("itrs-45nm-2", 2)):
        for sched, seeds in (("ws", (0, 1)), ("pdf", (0,))):
            for seed in seeds:
                row = {
                    "point_id": f"p{i}", "status": "ok", "workload": "mergesort",
                    "machine": machine, "cores": cores, "scheduler": sched, "seed": seed,
                    "makespan_cycles": 1000 - 10 * cores - i, "speedup": cores * 0.9,
                    "mpki": 1.0 + i, "L2_misses": 10 + i, "instructions": 10**6,
                }  # fmt: skip
                save_row(tmp_path / "results" / "medium", f"p{i}", row)
                i += 1
    monkeypatch.setattr(sys, "argv", ["make_figures.py", str(tmp_path / "results" / "medium")])
    mod.main()
    points = pd.read_csv(tmp_path / "results" / "figures" / "medium" / "points.csv")
    assert len(points) == i
    assert list(points.columns[:5]) == ["workload", "machine", "cores", "scheduler", "seed"]
    assert {"makespan_cycles", "speedup", "mpki", "L2_misses"} <= set(points.columns)
    assert "points.csv" in capsys.readouterr().out


def test_pdf_vs_ws_says_more_or_fewer_misses_in_words():
    # A range below 0 printed "-3.2%--1.0% fewer".
    words = _script("pdf_vs_ws").miss_words
    assert words(0.1, 0.47) == "10.0%-47.0% fewer"
    assert words(-0.032, -0.01) == "1.0%-3.2% more"
    assert words(-0.032, 0.2) == "from 3.2% more to 20.0% fewer"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--small", "--grain", "0"], "", "parameter grain: must be at least 1, got 0"),
        (["--small", "-K", "0"], "", "-K 0: the factor is a positive finite number"),
        (["--small", "-K", "-1"], "", "-K -1: the factor is a positive finite number"),
        (["--small", "-K", "x"], "", "-K x: not a number"),
        ([], "ture", "SIMSCHED_SMALL='ture'"),
    ],
)
def test_prepare_auto_exits_2_in_one_line_on_bad_input(
    argv, env, message, tmp_path, monkeypatch, capsys
):
    """It exited with status 1, -K 0 only after the trace was generated and profiled, and
    SIMSCHED_SMALL=ture ran the full-size study."""
    path = ROOT / "experiments" / "granularity" / "prepare_auto.py"
    profiled = []
    monkeypatch.setattr("simsched.profile.profile_trace", lambda *a, **k: profiled.append(1))
    monkeypatch.setenv("SIMSCHED_SMALL", env)
    monkeypatch.setattr(sys, "argv", [str(path), *argv])
    err = one_line_exit(capsys, lambda: runpy.run_path(str(path), run_name="__main__"))
    assert err.startswith("prepare_auto.py: ") and message in err, err
    assert not profiled


def test_prepare_auto_reports_no_grain_when_no_sort_task_is_merged(tmp_path):
    """On an input that fits the cache share whole, the merged groups held no sort task,
    and the log said "median working set of the merged sort tasks 0 KB (~ grain 0 keys)"."""
    import shutil

    from simsched.experiments import load_spec

    pa = _script("granularity", "prepare_auto")
    study = ROOT / "experiments" / "granularity"
    for name in ("small.yaml", "small-auto.yaml"):  # their outputs land beside the copies
        shutil.copy(study / name, tmp_path / name)
    grain_spec = load_spec(tmp_path / "small.yaml", small=False)
    auto_spec = load_spec(tmp_path / "small-auto.yaml", small=False)
    lines: list[str] = []
    pa.prepare(grain_spec, auto_spec, n=100, log=lines.append)
    machines = [line for line in lines if line.startswith("itrs-scaling-")]
    assert len(machines) == 2
    assert all(line.endswith("no sort task among the merged groups: no grain to report")
               for line in machines), machines  # fmt: skip


def test_a_small_run_is_drawn_beside_its_results_not_over_the_committed_figures(tmp_path):
    """Each study's script wrote a small run's figures into the committed figures/ folder,
    over the full run's; the study's own full-size results keep figures/."""
    from simsched.experiments.scripts import default_figures

    (tmp_path / "medium.yaml").write_text("")
    (tmp_path / "small.yaml").write_text("")
    committed = tmp_path / "figures" / "medium"
    results = tmp_path / "results"
    assert default_figures(results / "medium", tmp_path, committed) == committed
    assert default_figures(results / "small", tmp_path, committed) == (
        results / "figures" / "small"
    )
    # a folder elsewhere, or one no spec of the study writes
    other = tmp_path / "copy" / "medium"
    assert default_figures(other, tmp_path, committed) == tmp_path / "copy" / "figures" / "medium"
    assert default_figures(results / "mine", tmp_path, committed) == results / "figures" / "mine"


class _Drawn(Exception):
    """Where a script was about to write its first figure."""


@pytest.mark.parametrize("study", ["laws", "cab", "saws", "pdf_vs_ws"])
def test_every_study_script_draws_its_small_run_outside_figures(study, tmp_path, monkeypatch):
    mod = _script(study)
    monkeypatch.setattr(mod, "HERE", tmp_path)
    (tmp_path / "small.yaml").write_text("")

    def drawn(*args, **kwargs):
        raise _Drawn(*[a for a in (*args, *kwargs.values()) if isinstance(a, Path)])

    rows = pd.DataFrame({"workload": ["fib"], "sweep": ["s"], "scheduler_name": ["saws"]})
    monkeypatch.setattr(mod, "load_figure_rows", lambda *a, **k: rows, raising=False)
    if study == "laws":
        monkeypatch.setattr(mod, "memory_bound", drawn)
    elif study == "cab":
        monkeypatch.setattr(mod, "draw", drawn)
    elif study == "saws":
        monkeypatch.setattr(mod, "fig4", dict)
        monkeypatch.setattr("simsched.plotting.allotment.plot_allotment", lambda *a, **k: None)
        monkeypatch.setattr("simsched.plotting.save", drawn)
    else:
        monkeypatch.setattr(mod, "figure_speedup_misses", lambda *a: None)
        monkeypatch.setattr(mod, "save", drawn)
    argv = ["--small"] if study == "saws" else [str(tmp_path / "results" / "small")]
    monkeypatch.setattr(sys, "argv", ["make_figures.py", *argv])
    with pytest.raises(_Drawn) as got:
        mod.main()
    (path,) = got.value.args
    assert tmp_path / "results" / "figures" / "small" in (path, *path.parents), path


def test_figures_and_tables_are_written_through_a_temporary_file(tmp_path, monkeypatch):
    """The laws and cab scripts saved PNGs and CSVs in place: an interrupted script left
    half a file over the previous one."""
    import simsched.files

    written: list[Path] = []
    real = simsched.files.atomic_output

    def recording(path, **kwargs):
        written.append(Path(path))
        return real(path, **kwargs)

    monkeypatch.setattr(simsched.files, "atomic_output", recording)
    laws, cab = _script("laws"), _script("cab")
    for sub in ("s", "c", "x"):  # main makes them
        (tmp_path / sub).mkdir()
    laws.sensitivity(_laws_rows(["heat"], ["blocking"], ["ws", "laws"]), tmp_path / "s")
    laws.cpu_bound(_laws_rows(["fib"], ["m"], ["ws", "laws"]), tmp_path / "c")
    rows = _laws_rows(["heat-ir[nx=66]"], ["m"], ["ws", "laws"])
    laws.scaling(rows.assign(L3_misses=1.0, dram_local=1.0), tmp_path / "x")
    df = _cab_heat_rows(cab)
    cab.draw(df, tmp_path / "cab")
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert {p.suffix for p in files} == {".png", ".csv"}
    assert files == sorted(written)


def test_cab_prints_a_boundary_level_as_an_integer():
    """WS's rows carry no bl, so Fig. 9's JSON printed CAB's level as 0.0."""
    cab = _script("cab")
    df = pd.DataFrame(
        {
            "workload": ["fib"] * 4,
            "machine": [cab.SCALED] * 4,
            "scheduler": ["ws", "cab", "ws", "cab"],
            "seed": [0, 0, 1, 1],
            "makespan_cycles": [100.0, 90.0, 100.0, 90.0],
            "L2_misses": [10.0] * 4,
            "L3_misses": [5.0] * 4,
            "bl": [float("nan"), 0.0, float("nan"), 0.0],
        }
    )
    f9 = cab.versus_ws(df, ["fib"])
    line = simsched.experiments.scripts.json_line(f9.round(4).to_dict("records"))
    assert '"bl": 0,' in line, line
    assert cab.versus_ws(df, ["ge"])["bl"].dtype == "Int64"  # none run yet: still a level


@pytest.mark.parametrize(("study", "expected"), [("laws", "cats, laws, laws-nc"), ("cab", "cab")])
def test_laws_and_cab_figures_refuse_another_studys_folder(
    study, expected, tmp_path, monkeypatch, capsys
):
    """Given a PDF-vs-WS sweep the LAWS and CAB scripts ended in a KeyError on the L3
    columns (its machines have two cache levels), and left an empty figure folder."""
    rows = {"status": ["ok"] * 2, "scheduler_name": ["ws", "pdf"], "scheduler": ["ws", "pdf"]}
    pd.DataFrame(rows).to_csv(tmp_path / "pdf.csv")
    mod = _script(study)
    argv = ["make_figures.py", str(tmp_path / "pdf.csv"), "-o", str(tmp_path / "fig")]
    monkeypatch.setattr(sys, "argv", argv)
    err = one_line_exit(capsys, mod.main)
    assert f"not a {study} sweep: no successful run of {expected} (it ran pdf, ws)" in err, err
    assert not (tmp_path / "fig").exists()


def test_saws_figures_of_named_folders_and_of_studies_not_run(tmp_path, monkeypatch, capsys):
    """The SAWS script read only results/NAME, so a sweep run with ``--set out=...`` could
    not be drawn, and it skipped a study that had not run without a word."""
    saws = _script("saws")
    monkeypatch.setattr(saws, "HERE", tmp_path)
    drawn: list[tuple[str, Path]] = []
    monkeypatch.setattr(saws, "draw_study", lambda fig, df, out: drawn.append((fig, out)))
    monkeypatch.setattr(saws, "fig4", dict)
    monkeypatch.setattr(saws, "fig4_summary", lambda rec: {"figure": "fig4"})
    monkeypatch.setattr("simsched.plotting.save", lambda *a, **k: None)
    monkeypatch.setattr("simsched.plotting.allotment.plot_allotment", lambda *a, **k: None)
    rows = {
        "status": ["ok"] * 3,
        "sweep": ["saws_fig9"] * 3,
        "scheduler_name": ["saws", "asteal", "ws-equi"],
        "workload": ["lambda-1", "lambda-1", "lambda-1"],
    }
    pd.DataFrame(rows).to_csv(tmp_path / "mine.csv")
    monkeypatch.setattr(sys, "argv", ["make_figures.py", str(tmp_path / "mine.csv")])
    saws.main()
    assert drawn == [("fig9", tmp_path / "figures" / "mine.csv")]
    # another sweep's rows are refused by name
    rows["sweep"] = ["saws_other"] * 3
    pd.DataFrame(rows).to_csv(tmp_path / "other.csv")
    monkeypatch.setattr(sys, "argv", ["make_figures.py", str(tmp_path / "other.csv")])
    err = one_line_exit(capsys, saws.main)
    assert "a sweep of other, not one of this study's specs" in err, err
    # every folder is checked before the first figure is drawn
    drawn.clear()
    argv = ["make_figures.py", str(tmp_path / "mine.csv"), str(tmp_path / "other.csv")]
    monkeypatch.setattr(sys, "argv", argv)
    one_line_exit(capsys, saws.main)
    assert drawn == []
    # the default figures: Fig. 4 is drawn, every study not run is named on stderr
    drawn.clear()
    monkeypatch.setattr(sys, "argv", ["make_figures.py", "-o", str(tmp_path / "fig")])
    saws.main()
    err = capsys.readouterr().err
    assert drawn == [] and err.count("has not run") == 3 and "fig7.png not drawn" in err


def test_saws_scaled_figures_write_their_per_point_table(tmp_path):
    """Only the published study kept a per-point table, so the scaled figures' numbers
    could not be recomputed from what was committed."""
    saws = _script("saws")
    df = pd.DataFrame(
        {
            "machine": ["m"] * 4,
            "workload": ["lu-q2ms", "lu-q1ms", "lu-q2ms", "lu-q1ms"],
            "scheduler_name": ["saws", "saws", "asteal", "asteal"],
            "seed": [0] * 4,
            "makespan_cycles": [40.0, 30.0, 20.0, 10.0],
            "allotments": ["[...]"] * 4,  # a job set's rows carry far more than the figures use
        }
    )
    df["sched"] = df["scheduler_name"]
    df["program"] = "lu"
    df["quantum_ms"] = [2, 1, 2, 1]
    saws.draw_study("fig7", df, tmp_path)
    points = pd.read_csv(tmp_path / "fig7_points.csv")
    assert list(points.columns) == [
        "machine", "program", "quantum_ms", "sched", "seed", "makespan_cycles",
    ]  # fmt: skip
    assert points["makespan_cycles"].tolist() == [10.0, 30.0, 20.0, 40.0]


def _experiments_text() -> str:
    """docs/experiments.md with its line breaks made spaces (a quoted figure may wrap)."""
    return " ".join((ROOT / "docs" / "experiments.md").read_text().split())


def _committed_rows(study: str, folder: str) -> list[dict]:
    """The rows committed in ``experiments/<study>/published-records/<folder>/``."""
    records = ROOT / "experiments" / study / "published-records" / folder
    return [json.loads(f.read_text()) for f in sorted(records.glob("*/row.json"))]


def test_the_ge_rows_replayed_in_detail_give_the_figures_the_docs_quote():
    """docs/experiments.md ("GE replayed in detail") quotes CAB/WS of GE at the paper's size
    with every step replayed in detail, and the errors of the same points sampled: the
    committed rows must give those figures, so neither can change alone."""
    docs = _experiments_text()

    def load(name):
        got = {
            (r["scheduler"], r["seed"]): r for r in _committed_rows("cab", f"ge-detailed/{name}")
        }
        assert sorted(got) == [(s, i) for s in ("cab", "ws") for i in range(3)], name
        return got

    quoted = []
    for name in ("links-4", "links-8.8"):
        d = load(name)
        assert all(not r["sampled"] and r["detailed_iterations"] == 256 for r in d.values())
        span = {s: [d[(s, i)]["makespan_cycles"] for i in range(3)] for s in ("ws", "cab")}
        ratio = sum(span["cab"]) / sum(span["ws"])
        worst = max(c / w for c, w in zip(span["cab"], span["ws"], strict=True))
        quoted.append(f"{ratio:.3f} [{worst:.3f}]")
        if name == "links-4":
            detailed = d
    assert f"CAB/WS is {quoted[0]} at 4 GB/s and {quoted[1]} at 8.8 GB/s" in docs
    sampled = load("sampled-4")
    errors = []
    for key, r in sampled.items():
        exact = detailed[key]["makespan_cycles"]
        lo, hi = r["makespan_ci95"]
        assert r["sampled"] and lo <= exact <= hi, key
        errors.append(100 * (r["makespan_cycles"] - exact) / exact)
    assert (
        f"the errors {min(errors):.2f} to +{max(errors):.2f} % at 4 GB/s".replace("-", "−") in docs
    )


def test_the_laws_ge_rows_replayed_in_detail_give_the_figures_the_docs_quote():
    """docs/experiments.md ("GE and GE-ir replayed in detail") quotes LAWS / WS on the AMD
    study's GE with every step replayed, and how far the study's sampled LAWS and LAWS-NC
    makespans are from those: the committed rows must give those figures."""
    docs = _experiments_text()

    def load(name):
        return {
            (r["workload"], r["scheduler"], r["seed"]): r
            for r in _committed_rows("laws", name)
            if r["workload"] in ("ge", "ge-ir")
        }

    detailed, study = load("ge-detailed"), load("published")
    assert sorted(detailed) == sorted(study) and len(detailed) == 16
    assert all(not r["sampled"] and r["detailed_iterations"] == 200 for r in detailed.values())
    span = {k: r["makespan_cycles"] for k, r in detailed.items()}
    ratio = [span[(w, "laws", 0)] / span[(w, "ws", 0)] for w in ("ge", "ge-ir")]
    gain = [100 * (1 / x - 1) for x in ratio]
    assert (
        f"LAWS {ratio[0]:.3f}x and {ratio[1]:.3f}x WS's time at seed 0 (gain {gain[0]:.1f} % "
        f"and {gain[1]:.1f} %)" in docs
    )
    errors = [
        100 * (study[k]["makespan_cycles"] - span[k]) / span[k]
        for k in study
        if k[1] in ("laws", "laws-nc")
    ]
    assert all(e < 0 for e in errors)
    assert f"makespans are {-max(errors):.2f}–{-min(errors):.2f} % low" in docs


def test_the_heat_1k_rows_replayed_in_detail_give_the_gains_the_docs_quote():
    """docs/experiments.md quotes the paper's BL 3 on heat 1k x 1k against WS with all 20
    sweeps replayed in detail; the committed rows must give those gains."""
    docs = _experiments_text()
    ws, bl3, auto = {}, None, {}
    for r in _committed_rows("cab", "heat1k-detailed"):
        assert r["workload"] == "heat-1k" and not r["sampled"] and r["detailed_iterations"] == 20
        if r["scheduler"] == "ws":
            ws[r["seed"]] = r["makespan_cycles"]
        elif r.get("scheduler.bl") == 3 or (r.get("scheduler_params") or {}).get("bl") == 3:
            bl3 = r["makespan_cycles"]
        else:
            auto[r["seed"]] = r["makespan_cycles"]
    assert sorted(ws) == [0, 1, 2] and auto == ws and bl3 is not None
    seed0, mean = 100 * (ws[0] / bl3 - 1), 100 * (sum(ws.values()) / 3 / bl3 - 1)
    assert (
        f"BL 3 gains {seed0:.1f} % against WS's seed 0 and {mean:.1f} % against WS's mean" in docs
    )


def test_the_intel_laws_ge_row_replayed_in_detail_gives_the_figure_the_docs_quote():
    """docs/experiments.md quotes the Intel study's GE under LAWS replayed in detail against
    its sampled record: the committed rows must give that figure."""
    docs = _experiments_text()
    (row,) = _committed_rows("laws", "ge-detailed-intel")
    (study,) = [
        r
        for r in _committed_rows("laws", "published_intel")
        if r["workload"] == "ge"
        and r["scheduler"] == "laws"
        and r["seed"] == 0
        and r["machine"] == "xeon-x7560-4x8"
    ]
    exact, sampled = row["makespan_cycles"], study["makespan_cycles"]
    assert not row["sampled"] and row["detailed_iterations"] == 200
    assert (
        f"takes {exact / 1e9:.3f} G cycles, {100 * (exact - sampled) / exact:.2f} % above the "
        f"sampled {sampled / 1e9:.3f}" in docs
    )


def test_the_laws_ge_steps_give_the_remote_shares_the_docs_quote():
    """docs/experiments.md ("Why it rises") quotes, per range of GE's pivot steps, the share
    of DRAM lines LAWS's tasks get from another socket's node beside the share of rows
    Eq. 1's even split has moved past their pages (1.5k of 2047 - k at step k): the
    committed per-step rows must give those figures."""
    docs = _experiments_text()
    steps = pd.read_csv(
        ROOT / "experiments" / "laws" / "published-records" / "ge-steps" / "steps.csv"
    )
    bins = [(4, 9), (9, 50), (50, 100), (100, 150), (150, 200)]

    def remote(workload, scheduler):
        part = steps[(steps["workload"] == workload) & (steps["scheduler"] == scheduler)]
        assert part["iteration"].tolist() == list(range(200))
        share = 100 * (1 - part["local_share"].to_numpy())
        return [float(share[a:b].mean()) for a, b in bins]

    ge = remote("ge", "laws")
    moved = [100 * float(np.mean([1.5 * k / (2047 - k) for k in range(a, b)])) for a, b in bins]
    quoted = (
        f"is {ge[0]:.1f} % over steps 4–8, {ge[1]:.1f} % over 9–49, {ge[2]:.1f} % over "
        f"50–99, {ge[3]:.1f} % over 100–149 and {ge[4]:.1f} % over 150–199, where the rows "
        f"moved are {moved[0]:.1f}, {moved[1]:.1f}, {moved[2]:.1f}, {moved[3]:.1f} and "
        f"{moved[4]:.1f} %"
    )
    assert quoted in docs
    ir = remote("ge-ir", "laws")
    assert f"gives {ir[0]:.1f} % to {ir[-1]:.1f} % over the same steps" in docs
    ws = remote("ge", "ws")
    assert f"stays at {min(ws):.0f}–{max(ws):.0f} % with no trend" in docs
    # the periods are the committed detailed rows' own: the same replays
    rows = {
        (r["workload"], r["scheduler"]): r
        for r in _committed_rows("laws", "ge-detailed")
        if r["seed"] == 0
    }
    for (w, sched), part in steps.groupby(["workload", "scheduler"]):
        assert int(part["period"].sum()) == rows[(w, sched)]["makespan_cycles"], (w, sched)


def _sampled_cell(sampled: dict, detailed: dict) -> str:
    """A sampled row's cell beside its detailed replay in docs/experiments.md: the error,
    the iterations replayed in detail, ``*`` when the detailed makespan is outside the
    interval (``−0.25 % (51)``)."""
    exact = detailed["makespan_cycles"]
    lo, hi = sampled["makespan_ci95"]
    error = 100 * (sampled["makespan_cycles"] - exact) / exact
    outside = "" if lo <= exact <= hi else " *"
    return f"{error:+.2f} % ({sampled['detailed_iterations']}){outside}".replace("-", "−")


def test_where_ws_settles_is_read_from_its_detailed_runs_as_the_sampler_read_it():
    """WS does not tune itself: the sampler reads where it settles from the iterations'
    cycles per reference, and ``untuned_settled_at`` of each detailed WS stencil run gives
    the committed sampled run's ``settled_at``."""
    import numpy as np

    from simsched.engine.sampling import untuned_settled_at

    sampled = {
        r["workload"]: r
        for r in _committed_rows("laws", "rerun-2026-12-02")
        if r["seed"] == 0 and r["scheduler"] == "ws"
    }
    detailed = [
        r
        for r in _committed_rows("laws", "stencils-detailed")
        if r["seed"] == 0 and r["scheduler"] == "ws"
    ]
    assert len(detailed) == 8
    for r in detailed:
        ends = r["iteration_ends"]
        assert untuned_settled_at(ends, np.ones(len(ends))) == sampled[r["workload"]]["settled_at"]


def test_laws_nc_and_cats_on_the_2d_stencils_in_detail_give_the_table_the_docs_quote():
    """docs/experiments.md ("LAWS-NC and CATS on the 2-D stencils replayed in detail") sets
    the AMD study's sampled LAWS-NC and CATS makespans of the six 2-D programs beside
    detailed replays, and their ratios to WS's: every row must come from the committed
    rows."""
    docs = _experiments_text()
    programs = ["heat", "heat-ir", "sor", "sor-ir", "9p", "9p-ir"]
    policies = ("ws", "laws-nc", "cats")

    def load(name):
        return {
            (r["workload"], r["scheduler"]): r
            for r in _committed_rows("laws", name)
            if r["seed"] == 0 and r["workload"] in programs and r["scheduler"] in policies
        }

    detailed, sampled = load("stencils-detailed"), load("rerun-2026-12-02")
    assert len(detailed) == 18 and set(detailed) <= set(sampled)
    assert all(r["detailed_iterations"] == 200 and not r["sampled"] for r in detailed.values())

    def cell(key):
        return _sampled_cell(sampled[key], detailed[key])

    for w in programs:
        ws, nc, ca = (detailed[(w, p)]["makespan_cycles"] for p in policies)
        sws, snc, sca = (sampled[(w, p)]["makespan_cycles"] for p in policies)
        line = (
            f"| {w} | {nc / 1e6:,.2f} | {cell((w, 'laws-nc'))} | {ca / 1e6:,.2f} | "
            f"{cell((w, 'cats'))} | {nc / ws:.3f} | {snc / sws:.3f} | {ca / ws:.3f} | "
            f"{sca / sws:.3f} |"
        )
        assert line in docs, line


def test_the_stencils_replayed_in_detail_give_the_table_the_docs_quote():
    """docs/experiments.md ("The 2-D stencils and 6P replayed in detail") sets the AMD
    study's sampled WS and LAWS makespans of the six 2-D programs and 6P beside detailed
    replays: the committed rows must give every cell of its table, and the 9P and 6P gains
    it quotes."""
    docs = _experiments_text()
    programs = ["heat", "heat-ir", "sor", "sor-ir", "9p", "9p-ir", "6p", "6p-ir"]

    def load(name):
        return {
            (r["workload"], r["scheduler"]): r
            for r in _committed_rows("laws", name)
            if r["seed"] == 0 and r["workload"] in programs and r["scheduler"] in ("ws", "laws")
        }

    detailed, sampled = load("stencils-detailed"), load("rerun-2026-12-02")
    assert sorted(detailed) == sorted(sampled) and len(detailed) == 16
    assert all(not r["sampled"] and r["detailed_iterations"] == 200 for r in detailed.values())
    assert all(len(r["iteration_ends"]) == 200 for r in detailed.values())

    def cell(key):
        return _sampled_cell(sampled[key], detailed[key])

    span = {k: (detailed[k]["makespan_cycles"], sampled[k]["makespan_cycles"]) for k in detailed}
    for w in programs:
        ws, laws = span[(w, "ws")], span[(w, "laws")]
        line = (
            f"| {w} | {ws[0] / 1e6:,.2f} | {cell((w, 'ws'))} | {laws[0] / 1e6:,.2f} | "
            f"{cell((w, 'laws'))} | {laws[0] / ws[0]:.3f} | {laws[1] / ws[1]:.3f} |"
        )
        assert line in docs, line

    def gain(w):
        return [100 * (span[(w, "ws")][i] / span[(w, "laws")][i] - 1) for i in (0, 1)]

    nine, six = gain("9p"), gain("6p")
    assert f"9P's LAWS gain {nine[0]:.1f} % in detail against the study's {nine[1]:.1f} %" in docs
    assert f"6P's LAWS gain is {six[0]:.1f} % in detail against {six[1]:.1f} % from the" in docs
    (ir,) = [
        r
        for r in _committed_rows("laws", "stencils-detailed")
        if (r["workload"], r["scheduler"]) == ("6p-ir", "ws")
    ]
    (ir_sampled,) = [
        r
        for r in _committed_rows("laws", "rerun-2026-12-02")
        if (r["workload"], r["scheduler"], r["seed"]) == ("6p-ir", "ws", 0)
    ]
    assert (ir["scheduler"], ir["seed"], ir["detailed_iterations"]) == ("ws", 0, 200)
    exact, est = ir["makespan_cycles"], ir_sampled["makespan_cycles"]
    lo, hi = ir_sampled["makespan_ci95"]
    assert lo <= exact <= hi
    half = 100 * (hi - lo) / 2 / est
    quoted = (
        f"gives {exact / 1e6:,.2f} M cycles under WS: its sampled makespan is "
        f"{100 * (est - exact) / exact:+.2f} % off, inside its interval of ±{half:.2f} %"
    ).replace("-", "−")
    assert quoted in docs, quoted
    assert f"9P {nine[0]:.1f} % and 6P {six[0]:.1f} % with every iteration replayed" in docs
