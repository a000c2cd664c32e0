"""A comparison saved as a results store (``simsched compare --out``)."""

from __future__ import annotations

import os

import pytest

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


def test_sampled_and_detailed_runs_of_one_comparison_are_points_of_their_own(tmp_path):
    """The point id left out the sampling settings: a sampled comparison saved into the
    folder of a detailed one replaced its rows without a word.  Now each setting is a point
    of its own (as in a sweep), its columns say which, and loading the folder warns that
    the rows share their labels."""
    trace = tmp_path / "heat.sst"
    generate("heat", trace, nx=34, ny=10, cutoff=4, iters=8, init=False)
    out = tmp_path / "cmp"
    for k, precision in ((None, None), (2, 0), (3, 0)):
        kw = {} if k is None else {"sample_iterations": k, "sample_precision": precision}
        runs = simsched.compare(trace, "itrs-scaling-2", ["ws"], **kw)
        save_comparison(out, runs, trace, "itrs-scaling-2")
    save_comparison(out, runs, trace, "itrs-scaling-2")  # the same again: replaced
    said = []
    df = load_results(out, warn=said.append)
    assert len(df) == len(set(df["point_id"])) == 3
    assert sorted(df["sample_iterations"]) == [0, 2, 3]
    assert len(said) == 1 and "3 rows share 1 set of labels" in said[0]


def test_a_trace_whose_file_name_is_not_utf8_labels_its_rows_in_utf8(tmp_path):
    """The label was the file's stem as Python reads it (b"fib\\xff" as 'fib\\udcff'), which
    the Parquet table could not hold: compare --out and every later `results show` of the
    folder ended in a UnicodeEncodeError and its traceback."""
    trace = tmp_path / os.fsdecode(b"fib\xff.sst")
    generate("fib", trace, n=8)
    out = tmp_path / "cmp"
    save_comparison(out, simsched.compare(trace, "itrs-scaling-1", ["ws"]), trace, "itrs-scaling-1")
    assert list(load_results(out)["workload"]) == ["fib\\xff"]


def test_what_is_not_a_comparison_of_this_trace_is_refused(tmp_path):
    """Another trace's runs were stored under this trace's name (fib's runs as heat), and
    a wrong type ended in a TypeError or KeyError from inside."""
    import re

    import pytest

    from simsched.errors import ConfigError

    fib, heat = tmp_path / "fib.sst", tmp_path / "heat.sst"
    generate("fib", fib, n=8)
    generate("heat", heat, nx=34, ny=18, iters=2)
    runs = simsched.compare(fib, "itrs-scaling-1", ["ws"])
    out = tmp_path / "cmp"
    for args, message in (
        ((runs, heat), f"results[0]: replayed another trace than {heat}"),
        ((runs[0], fib), "expected the list of RunResult that compare() returns"),
        (([None], fib), "results[0]: None is not a RunResult of compare()"),
        ((runs, None), "trace=None: expected"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            save_comparison(out, args[0], args[1], "itrs-scaling-1")
    with pytest.raises(ConfigError, match=re.escape("out_dir=None")):
        save_comparison(None, runs, fib, "itrs-scaling-1")
    # it told a Python caller of --out, the command line's option
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError) as info:
        save_comparison(tmp_path / "file", runs, fib, "itrs-scaling-1")
    assert str(info.value) == f"out_dir={str(tmp_path / 'file')!r}: exists and is not a folder"
    # another machine, or overrides the runs did not have: the rows were labelled with
    # them (and a machine argument was not read at all)
    for machine, overrides, said in (
        ("itrs-scaling-2", None, "another machine than 'itrs-scaling-2' (the run's was"),
        ("itrs-scaling-1", {"caches.L1.size": "1KB"}, "with overrides caches.L1.size=1KB"),
    ):
        with pytest.raises(ConfigError, match=re.escape(said)):
            save_comparison(out, runs, fib, machine, overrides)
    assert not out.exists()
    assert save_comparison(out, runs, fib, "itrs-scaling-1").is_file()


def test_the_runs_that_finished_are_kept_when_a_later_one_fails(tmp_path, monkeypatch):
    """``compare --out`` saved the runs only once all had run: a failed or interrupted
    comparison left nothing, however many runs had finished; and a name its file system
    refuses was found only then."""
    import simsched.api
    from simsched.cli import main

    trace = tmp_path / "fib.sst"
    generate("fib", trace, n=8)
    import functools

    real, calls = simsched.api.run, []

    @functools.wraps(real)  # compare reads run's signature
    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(simsched.api, "run", second_fails)
    out = tmp_path / "cmp"
    args = ["compare", "-t", str(trace), "-m", "itrs-scaling-2", "-s", "ws", "--seeds", "3"]

    with pytest.raises(SystemExit) as info:
        main([*args, "--out", str(out)])
    assert info.value.code == 130
    assert list(load_results(out)["seed"]) == [0]  # the run before the interrupt
    with pytest.raises(SystemExit) as info:
        main([*args, "--out", str(tmp_path / ("a" * 256))])
    assert info.value.code == 2 and len(calls) == 2  # refused before any run
    seen = []
    simsched.compare(trace, "itrs-scaling-2", "ws", seeds=1, on_result=seen.append)
    assert [r.record["seed"] for r in seen] == [0]
