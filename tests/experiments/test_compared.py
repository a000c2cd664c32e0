"""A comparison saved as a results store (``simsched compare --out``)."""

from __future__ import annotations

import simsched
from simsched.experiments import load_results
from simsched.experiments.compared import save_comparison
from simsched.workloads import generate


def test_machine_overrides_label_the_machine_as_in_a_sweep(tmp_path):
    trace = tmp_path / "fib.sst"
    generate("fib", trace, n=8)
    out = tmp_path / "cmp"
    for overrides in (None, {"caches.L1.size": "1KB"}):
        runs = simsched.compare(trace, "itrs-scaling-1", ["ws"], overrides=overrides)
        save_comparison(out, runs, trace, "itrs-scaling-1", overrides)
    df = load_results(out)
    # both used to be labelled itrs-scaling-1: two machines under one label
    assert sorted(df["machine"]) == ["itrs-scaling-1", "itrs-scaling-1[caches.L1.size=1KB]"]
    assert len(set(df["point_id"])) == 2


def test_scheduler_parameters_label_the_scheduler_as_in_a_sweep(tmp_path):
    trace = tmp_path / "fib.sst"
    generate("fib", trace, n=8)
    out = tmp_path / "cmp"
    for params in (None, {"spawn_policy": "parent-first"}, {"spawn_policy": "child-first"}):
        runs = simsched.compare(trace, "itrs-scaling-1", ["ws"], params=params)
        save_comparison(out, runs, trace, "itrs-scaling-1", None)
    df = load_results(out)
    # the first and the last give the defaults: one point, saved twice; the second was
    # labelled ws too, two policies under one label
    assert sorted(df["scheduler"]) == ["ws", "ws[spawn_policy=parent-first]"]
    assert len(set(df["point_id"])) == 2
