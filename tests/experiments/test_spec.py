"""Sweep spec: schema strictness, expansion, filters, zips, small runs and stable ids."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from simsched.errors import ConfigError, command_line
from simsched.experiments.spec import expand, load_spec, small_from_env


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


BASE = """
name: t
workloads:
  - {generator: mergesort, params: {n: 4096}, small: {n: 256}}
  - {name: hj, generator: hashjoin, grid: {records: [100, 200]}}
machines: ["itrs-scaling-{1,2,4}"]
schedulers:
  - ws
  - {name: pdf, seeds: [0]}
seeds: {count: 3}
"""


def test_product_with_scheduler_seeds(tmp_path):
    loaded = load_spec(write(tmp_path, BASE), small=False)
    points = loaded.points()
    # 3 workloads x 3 machines x (ws: 3 seeds + pdf: 1 seed)
    assert len(points) == 3 * 3 * 4
    assert len({p.id for p in points}) == len(points)
    labels = {p.workload["label"] for p in points}
    assert labels == {"mergesort", "hj[records=100]", "hj[records=200]"}
    assert {p.seed for p in points if p.scheduler["name"] == "pdf"} == {0}
    assert points[0].columns()["cores"] == 1
    assert loaded.out_dir == (tmp_path / "results" / "t").resolve()


def test_ids_stable_under_reordering_and_moves(tmp_path):
    a = load_spec(write(tmp_path, BASE), small=False).points()
    reordered = BASE.replace('["itrs-scaling-{1,2,4}"]', '["itrs-scaling-{4,2,1}"]')
    sub = tmp_path / "moved"
    sub.mkdir()
    b = load_spec(write(sub, reordered), small=False).points()
    assert {p.id for p in a} == {p.id for p in b}


def test_id_changes_with_resolved_content(tmp_path):
    a = {p.id for p in load_spec(write(tmp_path, BASE), small=False).points()}
    b = {p.id for p in load_spec(write(tmp_path, BASE), small=True).points()}
    # small changes mergesort's n only: the hashjoin points keep their ids
    assert len(a & b) == 2 * 3 * 4
    assert len(a - b) == 3 * 4


def test_small_params_and_machines(tmp_path):
    text = BASE + "small: {machines: [itrs-scaling-1], seeds: [1]}\n"
    points = load_spec(write(tmp_path, text), small=True).points()
    assert {p.machine["label"] for p in points} == {"itrs-scaling-1"}
    ms = [p for p in points if p.workload["label"] == "mergesort"]
    assert {p.workload["params"]["n"] for p in ms} == {256}
    assert {p.seed for p in points if p.scheduler["name"] == "ws"} == {1}


def test_a_small_machine_label_is_checked_in_full_size_runs_too(tmp_path):
    text = BASE + "small: {machines: [itrs-scaling-l]}\n"
    for small in (True, False):
        with pytest.raises(
            ConfigError, match="small.machines: no machine labelled 'itrs-scaling-l'"
        ):
            load_spec(write(tmp_path, text), small=small).points()


@pytest.mark.parametrize(
    ("small", "message"),
    [
        ("{machines: []}", "small.machines: an empty list keeps nothing (leave machines out"),
        ("{seeds: []}", "small.seeds: an empty list keeps nothing (leave seeds out"),
        ("{seeds: [0, 0]}", "small.seeds: 0 is given twice"),
        (
            "{machines: [itrs-scaling-1, itrs-scaling-1]}",
            "small.machines: 'itrs-scaling-1' is given twice",
        ),
    ],
)
def test_small_lists_are_neither_empty_nor_repeated(tmp_path, small, message):
    """Before: an empty small.machines left a small run "no points", an empty small.seeds
    ran the first seed, and a repeated entry was taken where seeds: refuses it."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_spec(write(tmp_path, BASE + f"small: {small}\n"), small=False)


@pytest.mark.parametrize("rule", ["include: [{seed: []}]", "exclude: [{machine: []}]"])
def test_an_empty_filter_list_is_refused(tmp_path, rule):
    """Before: an empty include list said only "the sweep has no points"; an exclude one
    dropped nothing."""
    key = rule.split(": [{")[1].split(":")[0]
    with pytest.raises(ConfigError, match=f"{rule.split(':')[0]}: {key}: an empty list matches"):
        load_spec(write(tmp_path, BASE + rule + "\n"), small=False)


def test_small_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMSCHED_SMALL", "1")
    points = load_spec(write(tmp_path, BASE)).points()
    assert {p.workload["params"]["n"] for p in points if p.workload["label"] == "mergesort"} == {
        256
    }


@pytest.mark.parametrize(
    ("value", "small"), [("", False), ("0", False), ("Off", False), (" yes ", True)]
)
def test_small_from_environment_reads_the_usual_words(monkeypatch, value, small):
    monkeypatch.setenv("SIMSCHED_SMALL", value)
    assert small_from_env() is small


@pytest.mark.parametrize("value", ["abc", "ture", "2"])
def test_small_from_environment_refuses_another_word(tmp_path, monkeypatch, value):
    # "abc" or a typo meant "not small" without a word: the study ran at full size.
    monkeypatch.setenv("SIMSCHED_SMALL", value)
    with pytest.raises(
        ConfigError, match=rf"^SIMSCHED_SMALL='{value}': expected 1 \(small runs\) or 0"
    ):
        load_spec(write(tmp_path, BASE))


def test_set_overrides(tmp_path):
    loaded = load_spec(
        write(tmp_path, BASE), small=False, sets=["seeds=[5]", "workloads.0.params.n=8", "out=o"]
    )
    points = loaded.points()
    assert {p.seed for p in points if p.scheduler["name"] == "ws"} == {5}
    assert {p.workload["params"]["n"] for p in points if p.workload["label"] == "mergesort"} == {8}
    assert loaded.out_dir == (tmp_path / "o").resolve()
    with pytest.raises(ConfigError, match="expected key=value"):
        load_spec(write(tmp_path, BASE), sets=["seeds"])
    # `--set out=$OUT` with OUT unset wrote to the default folder without a word
    for item in ("out=", "out=  "):
        with pytest.raises(ConfigError, match=rf"^sets item '{item}': no value after '='"):
            load_spec(write(tmp_path, BASE), sets=[item])
        # `sweep run --set`: the option typed
        with command_line(), pytest.raises(ConfigError, match=rf"^--set '{item}': no value"):
            load_spec(write(tmp_path, BASE), sets=[item])
    with pytest.raises(ConfigError, match=r"^sets item 'machines.x=1': 'x' is not an index"):
        load_spec(write(tmp_path, BASE), sets=["machines.x=1"])


def test_set_reaches_a_machines_dotted_override_and_grid_keys(tmp_path):
    """``--set machines.0.overrides.caches.L2.size=2MB`` sets the override the path names;
    it made nested mappings, which replaced the whole list of caches (an error saying to
    use the dotted key that had been given)."""
    spec = BASE.replace(
        'machines: ["itrs-scaling-{1,2,4}"]',
        "machines: [{name: itrs-scaling-2, overrides: {caches.L2.size: 4MB, cores: 1}}]",
    )
    loaded = load_spec(
        write(tmp_path, spec),
        small=False,
        sets=[
            "machines.0.overrides.caches.L2.size=2MB",
            "machines.0.overrides.memory.placement=interleave",
        ],
    )
    assert loaded.spec.machines[0].overrides == {
        "caches.L2.size": "2MB",
        "cores": 1,
        "memory.placement": "interleave",
    }
    loaded = load_spec(
        write(
            tmp_path,
            spec.replace("overrides: {caches.L2.size: 4MB, cores: 1}", "overrides: {cores: 1}"),
        ),
        small=False,
        sets=["machines.0.grid.caches.L2.size=[1MB, 2MB]"],
    )
    assert loaded.spec.machines[0].grid == {"caches.L2.size": ["1MB", "2MB"]}
    assert len(loaded.points()) == 2 * 3 * 4


def test_a_key_set_twice_is_refused(tmp_path):
    """The last one silently won (`run --set` refused it already)."""
    twice = ["workloads.0.params.n=9", "workloads.0.params.n=10"]
    with pytest.raises(ConfigError, match=r"^sets: workloads.0.params.n is given twice$"):
        load_spec(write(tmp_path, BASE), sets=twice)
    with command_line(), pytest.raises(ConfigError, match=r"^--set workloads.0.params.n: given"):
        load_spec(write(tmp_path, BASE), sets=twice)


def test_filters(tmp_path):
    text = (
        BASE
        + "exclude:\n  - {workload: mergesort, machine: [itrs-scaling-4]}\ninclude:\n  - {scheduler: ws}\n"
    )
    points = load_spec(write(tmp_path, text), small=False).points()
    assert all(p.scheduler["name"] == "ws" for p in points)
    assert not any(
        p.workload["label"] == "mergesort" and p.machine["label"] == "itrs-scaling-4"
        for p in points
    )
    assert len(points) == 3 * 3 * 3 - 3


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("include=[{scheduler: [ws, pdff]}]", "include.0.scheduler: 'pdff' matches no point"),
        ("exclude=[{machine: itrs-scaling-44}]", "exclude.0.machine: 'itrs-scaling-44' matches"),
        ("exclude=[{workload: hj}, {seed: 7}]", "exclude.1.seed: 7 matches no point"),
        ("include=[{cores: [1, 3]}]", "include.0.cores: 3 matches no point"),
    ],
)
def test_a_filter_value_that_matches_no_point_is_refused(tmp_path, edit, message):
    # a misspelt label kept fewer points (include) or dropped none (exclude), silently
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_spec(write(tmp_path, BASE), small=False, sets=[edit]).points()
    # a grid's entry name matches its labels; small runs keep fewer values and pass
    assert load_spec(write(tmp_path, BASE), small=False, sets=["exclude=[{workload: hj}]"]).points()
    assert load_spec(write(tmp_path, BASE), small=True, sets=[edit]).points() is not None


def test_zip(tmp_path):
    text = """
    name: z
    workloads:
      - {generator: fib, params: {n: 10}}
      - {generator: fib, params: {n: 12}}
      - {generator: fib, params: {n: 14}}
    machines: [itrs-scaling-1, itrs-scaling-2, itrs-scaling-4]
    schedulers: [ws, pdf]
    zip: [[workloads, machines]]
    """
    points = load_spec(write(tmp_path, text), small=False).points()
    pairs = {(p.workload["params"]["n"], p.columns()["cores"]) for p in points}
    assert pairs == {(10, 1), (12, 2), (14, 4)}
    assert len(points) == 6
    bad = text.replace("itrs-scaling-4]", "itrs-scaling-4, itrs-scaling-8]")
    with pytest.raises(ConfigError, match="different lengths"):
        load_spec(write(tmp_path, bad), small=False).points()


def test_machine_overrides_and_grid(tmp_path):
    text = """
    name: m
    workloads: [fib]
    machines:
      - {name: itrs-scaling-16, grid: {caches.L2.size: [5MB, 10MB]}}
      - {name: itrs-scaling-16, label: big, overrides: {cores: 8}}
    schedulers: [ws]
    """
    points = load_spec(write(tmp_path, text), small=False).points()
    cols = [p.columns() for p in points]
    assert [c["L2_size"] for c in cols[:2]] == [5 * 2**20, 10 * 2**20]
    assert cols[0]["machine"] == "itrs-scaling-16[caches.L2.size=5MB]"
    assert cols[2]["machine"] == "big" and cols[2]["cores"] == 8
    assert cols[0]["machine.caches.L2.size"] == "5MB"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("workloads:\n  - {generator: fib, bogus: 1}", r"workloads\.0\.bogus: unknown key"),
        ("workloads:\n  - {generator: fib, trace: a.sst}", "exactly one of trace, generator"),
        ("machines: [no-such-machine]", "no-such-machine"),
        ("seeds: {count: 0}", r"seeds.*greater than or equal to 1"),
        ("colour: red", "colour: unknown key"),
        ("exclude: [{flavour: x}]", "unknown filter key 'flavour'"),
        ("zip: [[workloads]]", "at least two axes"),
        # an empty folder name silently meant the default folder
        ("out: ''", "out: must not be empty"),
        ("trace_cache: ''", "trace_cache: must not be empty"),
    ],
)
def test_errors_name_the_field(tmp_path, edit, message):
    base = "name: e\nworkloads: [fib]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n"
    key = edit.split(":")[0]
    lines = [ln for ln in base.splitlines() if not ln.startswith(key + ":")]
    path = write(tmp_path, "\n".join(lines) + "\n" + edit + "\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_spec(path, small=False).points()
    assert str(path) in str(info.value) or "no-such-machine" in str(info.value)


def test_invalid_yaml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_spec(write(tmp_path, "name: [unclosed\n"))
    with pytest.raises(ConfigError, match="no such file"):
        load_spec(tmp_path / "nope.yaml")


def test_duplicate_points_rejected(tmp_path):
    text = "name: d\nworkloads: [fib, fib]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n"
    with pytest.raises(ConfigError, match="same point"):
        load_spec(write(tmp_path, text), small=False).points()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("true", "sample_precision: Input should be a valid number, got True$"),
        ('"1"', "sample_precision: Input should be a valid number, got the text '1'$"),
        (".nan", "sample_precision: Input should be a finite number$"),
        (".inf", "sample_precision: Input should be a finite number$"),
        ("-0.5", "sample_precision: Input should be greater than or equal to 0$"),
        ("100.5", "sample_precision: Input should be less than or equal to 100$"),
        ("1", None),
        ("0.25", None),
    ],
)
def test_sample_precision_is_a_finite_number_in_range(tmp_path, value, message):
    """`true` and the text "1" were taken for 1 %, and nan was "less than or equal to 100"."""
    text = "name: d\nworkloads: [heat]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n"
    path = write(tmp_path, f"{text}sample_iterations: 2\nsample_precision: {value}\n")
    if message is None:
        assert load_spec(path, small=False).spec.sample_precision == float(value)
        return
    with pytest.raises(ConfigError, match=message):
        load_spec(path, small=False)


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        (
            "3",
            "seeds: expected a list of seeds ([0, 1, 2]) or a range ({count: 3, start: 0}), got 3",
        ),
        (
            "y" * 200,
            "seeds: expected a list of seeds ([0, 1, 2]) or a range ({count: 3, start: 0}), "
            f"got '{'y' * 27}...{'y' * 28}'",
        ),
        ("[]", "seeds: List should have at least 1 item after validation, not 0"),
        ("[0, -1]", "seeds: item 1: Input should be greater than or equal to 0"),
        ('[0, "1"]', "seeds: item 1: Input should be a valid integer, got the text '1'"),
        ("{count: 0}", "seeds: count: Input should be greater than or equal to 1"),
        ("{count: 2, stop: 3}", "seeds: stop: unknown key"),
    ],
)
def test_bad_seeds_are_named_in_the_form_written(tmp_path, seeds, message):
    """pydantic named both forms of the union in its own type names: `seeds: 3` said
    "seeds.list[constrained-int]: Input should be a valid list; seeds.SeedRange: Input
    should be a valid dictionary or instance of SeedRange"."""
    text = (
        f"name: d\nworkloads: [fib]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\nseeds: {seeds}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_spec(write(tmp_path, text), small=False)
    assert str(info.value) == f"{tmp_path / 's.yaml'}: {message}"


def test_a_small_seed_the_sweep_does_not_have_is_an_error(tmp_path):
    """It ran the first seed instead, without a word (a small machine label that is not
    one is an error already)."""
    text = (
        "name: d\nworkloads: [fib]\nmachines: [itrs-scaling-1]\n"
        "schedulers: [ws, {name: pdf, seeds: [7]}]\nseeds: {count: 3}\nsmall: {seeds: SMALL}\n"
    )
    path = write(tmp_path, text.replace("SMALL", "[1, 5]"))
    # checked in full-size runs too: a misspelt seed surfaced only in the small run of CI
    for small in (True, False):
        with pytest.raises(ConfigError, match=re.escape(
            "small.seeds: 5 is not a seed of the sweep (its seeds: 0..2; the schedulers' own: 7)"
        )):  # fmt: skip
            load_spec(path, small=small).points()
    path = write(tmp_path, text.replace("SMALL", "[1]"))
    assert len(load_spec(path, small=False).points()) == 4  # only --small keeps fewer
    # a scheduler's own seed is one of the sweep's: pdf keeps it, the axis its first seed
    path = write(tmp_path, text.replace("SMALL", "[7]"))
    assert [(p.scheduler["name"], p.seed) for p in load_spec(path, small=True).points()] == [
        ("ws", 0),
        ("pdf", 7),
    ]


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ("seeds: [0, 1, 0]", "s.yaml: seeds: seed 0 is given twice$"),
        (
            "schedulers: [ws, {name: pdf, seeds: [2, 2]}]",
            "schedulers.1.seeds: seed 2 is given twice",
        ),
    ],
)
def test_a_seed_given_twice_is_named(tmp_path, seeds, message):
    """It was "two entries resolve to the same point", naming one point's labels twice."""
    text = "name: d\nworkloads: [fib]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n"
    key = seeds.split(":")[0]
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(key)) + "\n" + seeds
    with pytest.raises(ConfigError, match=message):
        load_spec(write(tmp_path, text), small=False)


@pytest.mark.parametrize(
    "entries",
    [
        # two schedulers both labelled ws (parameters do not enter the label)
        "workloads: [fib]\nmachines: [itrs-scaling-1]\n"
        "schedulers: [ws, {name: ws, params: {spawn_policy: parent-first}}]\n",
        # two different machines under one label
        "workloads: [fib]\nmachines: [itrs-scaling-1, {name: itrs-scaling-2, label: itrs-scaling-1}]\n"
        "schedulers: [ws]\n",
        # two different workloads under one name
        "workloads: [fib, {name: fib, generator: fib, params: {n: 12}}]\n"
        "machines: [itrs-scaling-1]\nschedulers: [ws]\n",
    ],
)
def test_points_that_share_every_label_are_rejected(tmp_path, entries):
    with pytest.raises(ConfigError, match="both labelled 'fib / itrs-scaling-1 / ws / seed 0'"):
        load_spec(write(tmp_path, "name: d\n" + entries), small=False).points()


CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "sweeps").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
@pytest.mark.parametrize("small", [False, True])
def test_bundled_sweep_configs_expand(path, small):
    points = load_spec(path, small=small).points()
    assert points and len({p.id for p in points}) == len(points)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("schedulers.0={name: nope}", "schedulers.0: unknown scheduler 'nope' (known: "),
        (
            "schedulers.0={name: ws, params: {child_first: false}}",
            "schedulers.0: scheduler 'ws': unknown parameter(s) child_first",
        ),
        ("schedulers.1.params={quantum: 3}", "schedulers.1: scheduler 'pdf': unknown parameter"),
        (
            "schedulers.0={name: ws, grid: {spawn_policy: [parent-first, sideways]}}",
            "schedulers.0: scheduler 'ws': spawn_policy='sideways' is not",
        ),
    ],
)
def test_load_spec_refuses_a_scheduler_not_installed_or_a_bad_parameter(tmp_path, edit, message):
    """docs/sweeps.md says load_spec validates; it accepted both, and only sweep status or
    run_sweep refused them."""
    spec = write(tmp_path, BASE)
    with pytest.raises(ConfigError, match="^" + re.escape(f"{spec}: {message}")):
        load_spec(spec, sets=[edit])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("seeds=[-1]", "seeds: item 0: Input should be greater than or equal to 0"),
        ("seeds=[]", "seeds: List should have at least 1 item"),
        ("seeds={count: 2, start: -5}", "seeds: start: Input should be greater than or equal to 0"),
        # the range's last seed too (status passed it and every point failed in run)
        (
            "seeds={count: 2, start: 9223372036854775807}",
            "seeds: 9223372036854775807..9223372036854775808 go past the largest seed",
        ),
        ("schedulers.1.seeds=[true]", "schedulers.1.seeds.0: Input should be a valid integer"),
    ],
)
def test_seeds_are_non_negative_integers(tmp_path, edit, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_spec(write(tmp_path, BASE), sets=[edit])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("workloads.0.generator=nosuch", "workloads.0: unknown workload 'nosuch'"),
        ("workloads.0.params={n: 4096, bogus: 1}", "workloads.0: workload mergesort: unknown"),
        ("workloads.1.grid={n_build: [100, -3]}", "workloads.1: workload hashjoin"),
        ("workloads.0={trace: missing.sst}", "workloads.0: trace missing.sst: no such file"),
        # a trace that every point would fail to open (only its existence was checked)
        ("workloads.0={trace: empty.sst}", "empty.sst: truncated: 0 bytes"),
        ("workloads.0={trace: notes.sst}", "notes.sst: not a simsched trace (bad magic"),
        ("workloads.0={trace: afolder}", "workloads.0: trace afolder: is a folder, not a trace"),
        # a job set's traces, relative to its own folder (only their existence was checked)
        (
            "workloads.0={jobs: sub/js.yaml}",
            "sub/empty.sst: truncated: 0 bytes",
        ),
        (
            "workloads.0={jobs: sub/bad.yaml}",
            "sub/notes.sst: not a simsched trace (bad magic",
        ),
        ("exclude=[{scheduler: [ws, pdf]}]", "the sweep has no points"),
        # every generated point failed making its trace
        ("trace_cache=s.yaml", "s.yaml: exists and is not a folder"),
        ("trace_cache=s.yaml/traces", "s.yaml is a file, not a folder"),
        ("trace_cache=gone", "gone is a symbolic link to nowhere, which does not exist"),
        # a name too long for the file system: the CLI echoed the whole path alone
        ("trace_cache=" + "x" * 5000, "trace_cache '/"),
        ("out=" + "x" * 5000, "xxx/traces': "),
    ],
)
def test_check_spec_reports_the_first_problem_before_any_point(tmp_path, edit, message):
    from simsched.experiments.spec import check_spec

    valid = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    assert check_spec(load_spec(write(tmp_path, valid), small=True))
    (tmp_path / "gone").symlink_to("nowhere")  # a dangling link: mkdir fails on it per point
    (tmp_path / "empty.sst").write_bytes(b"")
    (tmp_path / "notes.sst").write_text("not a trace at all, but long enough to hold a header" * 9)
    (tmp_path / "afolder").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "empty.sst").write_bytes(b"")
    (tmp_path / "sub" / "js.yaml").write_text(
        "jobs:\n  - {generator: fib, params: {n: 10}}\n  - {trace: empty.sst}\n"
    )
    (tmp_path / "sub" / "notes.sst").write_text("not a trace, but long enough for a header" * 9)
    (tmp_path / "sub" / "bad.yaml").write_text("jobs:\n  - {trace: notes.sst}\n")
    loaded = load_spec(write(tmp_path, valid), small=True, sets=[edit])
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_spec(loaded)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # an alias beside its name ran every point twice, as two "schedulers"
        ("schedulers=[ws, cilk]", "/ ws / seed 0' and 'mergesort / itrs-scaling-1 / cilk"),
        ("schedulers=[ws, cilk]", "are one point: their schedulers both mean ws with the same"),
        (
            "schedulers=[{name: ws, grid: {spawn_policy: [child-first, parent-first]}}, "
            "{name: cilk, params: {spawn_policy: parent-first}}]",
            "ws[spawn_policy=parent-first] / seed 0' and 'mergesort / itrs-scaling-1 / cilk",
        ),
        # the third entry runs the second's policy at its seed
        (
            "schedulers=[{name: ws, seeds: [0]}, {name: cilk, seeds: [1]}, "
            "{name: ws, label: w3, seeds: [1]}]",
            "/ cilk / seed 1' and 'mergesort / itrs-scaling-1 / w3 / seed 1' are one point",
        ),
        # results/.. is the spec's own folder
        ("name=..", "name: '..' names a folder (results/..), not a sweep"),
        # read as a preset's name or a generator's: "no such preset", "unknown workload"
        ("machines=[../m.sst]", "machines.0: '../m.sst' is a path, not a preset"),
        # an entry is named as the file has it (as --set machines.N edits it), not by its
        # place once braces expanded (it said machines.3)
        (
            "machines=['itrs-scaling-{1,2,4}', {name: itrs-scaling-16, overrides: {caches.L2.size: 2MB}}]",
            "machines.1: itrs-scaling-16: caches.1 (L2): size: 2097152 bytes is not a multiple",
        ),
        (
            "machines=['itrs-scaling-{1,2,4}', x/m.sst]",
            "machines.1: 'x/m.sst' is a path, not a preset",
        ),
        ("workloads=[../w.bin]", "workloads.0: '../w.bin' is a path, not a generator"),
        # pydantic's own class names (MachineSpec, SmallSpec) and types (tuple)
        ("machines=[5]", "machines.0: expected a mapping of keys and values, got 5"),
        ("small=5", "small: expected a mapping of keys and values, got 5"),
        ("workloads=5", "workloads: expected a list, got 5"),
    ],
)
def test_spec_entries_that_would_mislead(tmp_path, edit, message):
    from simsched.experiments.spec import check_spec

    valid = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_spec(load_spec(write(tmp_path, valid), small=True, sets=[edit]))


def test_a_machine_named_by_a_yaml_path_is_read_relative_to_the_spec(tmp_path, monkeypatch):
    """`{name: m/m.yaml}` was read relative to the current folder, unlike `file:`."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "m.yaml").write_text(
        "name: mine\ncores_per_socket: 2\ncaches:\n  - {name: L1, scope: core, size: 16KB, "
        "assoc: 4, line: 64, hit_latency: 1}\nmemory: {latency: 50, service_interval: 5}\n"
    )
    spec = write(tmp_path, BASE)
    monkeypatch.chdir(tmp_path.parent)
    loaded = load_spec(spec, small=True, sets=["machines=[{name: m/m.yaml, label: mine}]"])
    assert {p.columns()["cores"] for p in loaded.points()} == {2}


def test_twins_dropped_by_the_filters_are_no_error(tmp_path):
    edits = [
        "schedulers=[ws, cilk]",
        "exclude=[{scheduler: cilk, machine: itrs-scaling-1}, {scheduler: ws, machine: "
        "[itrs-scaling-2, itrs-scaling-4]}]",
    ]
    points = load_spec(write(tmp_path, BASE), small=True, sets=edits).points()
    assert {(p.scheduler["label"], p.machine["label"]) for p in points} == {
        ("ws", "itrs-scaling-1"),
        ("cilk", "itrs-scaling-2"),
        ("cilk", "itrs-scaling-4"),
    }


@pytest.mark.parametrize(
    "edits",
    [
        ["schedulers=[{name: ws, seeds: [0]}, {name: cilk, seeds: [1]}]"],
        ["schedulers=[ws, {name: cilk, seeds: [5]}]"],  # the sweep's seeds are 0..2
        # zipped with the machines, each entry runs on its own machine
        ["schedulers=[ws, cilk]", "zip=[[machines, schedulers]]", "machines=[a, b]"],
    ],
)
def test_one_policy_twice_without_a_shared_point_is_allowed(tmp_path, edits):
    from simsched.experiments.spec import check_spec

    valid = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    edits = [
        e.replace("machines=[a, b]", "machines=[itrs-scaling-1, itrs-scaling-2]") for e in edits
    ]
    assert check_spec(load_spec(write(tmp_path, valid), small=True, sets=edits))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_trace_cache_the_file_system_refuses_is_refused_up_front(tmp_path):
    """access() says yes to root, and /proc refuses any new folder: every generated point
    failed alike, after the results folder was made."""
    from simsched.experiments.spec import check_spec, check_trace_cache

    valid = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    loaded = load_spec(write(tmp_path, valid), small=True, sets=["trace_cache=/proc/simsched"])
    points = check_spec(loaded)
    with pytest.raises(ConfigError, match=r"trace_cache /proc/simsched: cannot create the folder"):
        check_trace_cache(loaded, points)


@pytest.mark.parametrize(
    ("n", "most_refs", "message"),
    [
        ("2^28", None, r"mergesort \(n=268435456, .*needs about 13\.4 GB of memory"),
        ("4096", 1000, r"mergesort \(n=4096, .*its trace would hold 146,369 references"),
    ],
)
def test_a_generated_trace_too_large_is_refused_before_any_point(
    tmp_path, monkeypatch, capsys, n, most_refs, message
):
    """Every point of it made the results folder, then failed alike ("needs about 13.4 GB
    of memory"); a trace already in the cache is not made again, so it is not refused.  The
    same check counts the references the trace would hold."""
    import simsched.workloads as workloads
    from simsched import host
    from simsched.cli import main

    valid = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    spec = write(tmp_path, valid.replace("params: {n: 4096}", f"params: {{n: {n}}}"))
    monkeypatch.setattr(host, "available_bytes", lambda: 2**30)
    if most_refs is not None:
        monkeypatch.setattr(workloads, "MAX_GENERATED_REFS", most_refs)
    monkeypatch.delenv("SIMSCHED_SMALL", raising=False)  # CI's small run takes n=256
    with pytest.raises(SystemExit) as info:
        main(["sweep", "run", str(spec), "--workers", "0"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert re.search(r"^simsched: error: .*s\.yaml: " + message, err), err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            "workloads.0.small={nn: 256}",
            "workloads.0: small: workload mergesort: unknown parameter",
        ),
        ("workloads.0.small={n: -1}", "workloads.0: small: workload mergesort: parameter n"),
    ],
)
def test_check_spec_checks_the_small_values_of_a_full_run(tmp_path, edit, message):
    from simsched.experiments.spec import check_spec

    valid = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    assert check_spec(load_spec(write(tmp_path, valid), small=False))
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_spec(load_spec(write(tmp_path, valid), small=False, sets=[edit]))


def test_sweep_run_and_status_check_the_spec_first(tmp_path, capsys):
    from simsched.cli import main

    text = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    spec = write(tmp_path, text.replace("  - ws\n", "  - {name: ws, params: {child_first: no}}\n"))
    for cmd in (["sweep", "status", str(spec)], ["sweep", "run", str(spec), "--workers", "0"]):
        with pytest.raises(SystemExit) as info:
            main(cmd)
        err = capsys.readouterr().err.strip().splitlines()
        assert info.value.code == 2 and len(err) == 1 and "child_first" in err[0]
    assert not (tmp_path / "results").exists()


def test_filter_by_grid_entry_name(tmp_path):
    text = """
    name: g
    workloads:
      - {name: fib, generator: fib, grid: {n: [10, 12]}}
      - {name: other, generator: fib, params: {n: 8}}
    machines: [itrs-scaling-1, itrs-scaling-2]
    schedulers: [ws]
    exclude:
      - {workload: fib, machine: itrs-scaling-2}
    """
    points = load_spec(write(tmp_path, text), small=False).points()
    # a grid label does not match an entry without that grid: "other" has no [n=8]
    other = text.rstrip(" ") + '      - {workload: "other[n=8]"}\n'
    with pytest.raises(ConfigError, match=r"exclude.1.workload: 'other\[n=8\]' matches no"):
        load_spec(write(tmp_path, other), small=False).points()
    labels = sorted((p.workload["label"], p.machine["label"]) for p in points)
    assert labels == [
        ("fib[n=10]", "itrs-scaling-1"),
        ("fib[n=12]", "itrs-scaling-1"),
        ("other", "itrs-scaling-1"),
        ("other", "itrs-scaling-2"),
    ]


BIG = """
name: big
workloads:
  - {generator: fib, grid: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}
machines: [itrs-scaling-1]
schedulers: [ws]
seeds: {count: 1000000}
"""


def test_sweep_size_is_refused_before_expanding(tmp_path, capsys):
    """10 grid values × a million seeds: refused at once, naming the product and factors."""
    import time

    from simsched.cli import main
    from simsched.experiments.spec import MAX_POINTS, check_size

    path = write(tmp_path, BIG)
    t0 = time.perf_counter()
    message = (
        "the sweep's axes multiply to 10,000,000 points (workloads 10 × machines 1 × schedulers 1 × "
        f"seeds 1,000,000), more than the {MAX_POINTS:,} a sweep may have"
    )
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_spec(path, small=False).points()
    with pytest.raises(SystemExit) as info:
        main(["sweep", "status", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and message in err[0]
    assert time.perf_counter() - t0 < 5.0  # the expansion itself took minutes
    # named as the user gave it, as the schema's errors name it (it named the resolved path)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        with pytest.raises(SystemExit):
            main(["sweep", "status", "s.yaml"])
    assert capsys.readouterr().err.startswith("simsched: error: s.yaml: the sweep's axes")
    # the product counts zipped axes once and a scheduler's own seeds as its seed axis
    zipped = BIG.replace("seeds: {count: 1000000}", "seeds: {count: 10}\nzip: [[workloads, seeds]]")
    assert check_size(load_spec(write(tmp_path, zipped), small=False)) == 10
    own = BIG.replace("schedulers: [ws]", "schedulers: [{name: pdf, seeds: [0, 1, 2]}]")
    own = own.replace("{count: 1000000}", "[0]")
    assert check_size(load_spec(write(tmp_path, own), small=False)) == 30
    assert len(load_spec(write(tmp_path, own), small=False).points()) == 30


def test_sweep_size_limit_is_exact(tmp_path):
    from simsched.experiments.spec import check_size

    at = BIG.replace("{count: 1000000}", "{count: 10000}")
    assert check_size(load_spec(write(tmp_path, at), small=False)) == 100_000
    over = BIG.replace("{count: 1000000}", "{count: 10001}")
    with pytest.raises(ConfigError, match="100,010 points"):
        check_size(load_spec(write(tmp_path, over), small=False))
    # small runs count what they keep: the small seed list, not the million
    small = BIG + "small: {seeds: [3]}\n"
    assert check_size(load_spec(write(tmp_path, small), small=True)) == 10


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("workloads.1.grid={records: []}", "workloads.1.grid: axis 'records' has no values"),
        ("machines.0={name: itrs-scaling-1, grid: {cores: []}}", "machines.0.grid: axis 'cores'"),
        ("schedulers.0={name: ws, grid: {steal: []}}", "schedulers.0.grid: axis 'steal'"),
    ],
)
def test_empty_grid_axis_is_refused(tmp_path, edit, message):
    """``grid: {grain: []}`` used to drop the workload silently (12 -> 6 points)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_spec(write(tmp_path, BASE), sets=[edit])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            "workloads.1={name: hj, generator: hashjoin, params: {grain: 64}, "
            "grid: {grain: [32, 128]}}",
            "workloads.1: grain: given in both params and grid",
        ),
        (
            "machines.0={name: itrs-scaling-4, overrides: {caches.L2.hit_latency: 9}, "
            "grid: {caches.L2.hit_latency: [7, 13]}}",
            "machines.0: caches.L2.hit_latency: given in both overrides and grid",
        ),
        (
            "schedulers.0={name: ws, params: {spawn_policy: parent-first}, "
            "grid: {spawn_policy: [child-first, parent-first]}}",
            "schedulers.0: spawn_policy: given in both params and grid",
        ),
    ],
)
def test_a_key_both_fixed_and_swept_is_refused(tmp_path, edit, message):
    """The grid's values replaced the fixed one without a word."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_spec(write(tmp_path, BASE), sets=[edit])


def test_dangling_symlink_out_creates_nothing_at_its_target(tmp_path):
    from simsched.errors import OutputError
    from simsched.experiments import run_sweep

    spec = write(
        tmp_path,
        "name: l\nworkloads: [fib]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\nout: dl\n",
    )
    (tmp_path / "dl").symlink_to(tmp_path / "elsewhere" / "deep")
    loaded = load_spec(spec, small=True)
    assert loaded.out_dir == tmp_path / "dl"
    # the trace cache (dl/traces by default) is asked first, before any point
    with pytest.raises(
        ConfigError, match="traces: .*dl is a symbolic link to .*elsewhere/deep, which does not"
    ):
        run_sweep(loaded, workers=0, progress=False)
    elsewhere = load_spec(spec, small=True, sets=[f"trace_cache={tmp_path / 'tc'}"])
    with pytest.raises(
        OutputError, match="dl is a symbolic link to .*elsewhere/deep, which does not"
    ):
        run_sweep(elsewhere, workers=0, progress=False)
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize(
    "sets, message",
    [
        (5, r"sets=5: expected a list of 'key=value' strings"),
        ([5], r"sets: item 5 is not a 'key=value' string"),
        ("seeds=[0]", r"sets='seeds=\[0\]': expected a list"),
    ],
)
def test_sets_must_be_a_list_of_strings(tmp_path, sets, message):
    with pytest.raises(ConfigError, match=message):
        load_spec(write(tmp_path, BASE), sets=sets)


def test_spec_path_and_loaded_spec_are_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"path=None: expected a path"):
        load_spec(None)
    path = write(tmp_path, BASE)
    with pytest.raises(
        ConfigError, match=r"expected a loaded spec \(simsched.experiments.load_spec"
    ):
        expand(str(path))


@pytest.mark.parametrize("small", ["no", [1], 2.5, 1, pd.DataFrame()])
def test_small_must_be_true_false_or_none(tmp_path, small):
    # a string such as "no" used to be read as true, and the sweep ran small
    with pytest.raises(ConfigError, match=r"small=.*: expected True, False or None"):
        load_spec(write(tmp_path, BASE), small=small)


def test_a_trace_cache_that_cannot_be_written_is_refused_while_traces_are_missing(
    tmp_path, monkeypatch, capsys
):
    """Every point of a missing trace would fail alike making it: said once, up front.
    (Root writes into read-only folders, so the folder's permission is what os.access
    is asked, and the test answers for it.)"""
    import os

    from simsched.cli import main
    from simsched.experiments import run_sweep
    from simsched.experiments import spec as spec_module
    from simsched.trace.recipes import cached_trace_path
    from tests.experiments import sweep_pointfns

    text = BASE.replace("records: [100, 200]", "n_build: [100, 200]")
    path = write(tmp_path, text)
    cache = tmp_path / "traces"
    cache.mkdir()
    real = os.access
    monkeypatch.setattr(
        spec_module.os, "access", lambda p, m: False if Path(p) == cache else real(p, m)
    )
    loaded = load_spec(path, small=True, sets=[f"trace_cache={cache}"])
    with pytest.raises(ConfigError, match=r"traces is not writable, and 3 trace\(s\) are still"):
        run_sweep(loaded, workers=0, progress=False)
    args = ["--small", "--set", f"trace_cache={cache}"]
    with pytest.raises(SystemExit) as info:
        main(["sweep", "run", str(path), *args, "--workers", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and "not writable" in err[0]
    assert not (tmp_path / "results").exists()
    with pytest.raises(SystemExit) as info:  # status only reads
        main(["sweep", "status", str(path), *args])
    assert info.value.code == 0, capsys.readouterr().err
    # a missing cache is made in its nearest existing folder: that one is asked
    deeper = load_spec(path, small=True, sets=[f"trace_cache={cache}/a/b"])
    with pytest.raises(ConfigError, match=r"traces/a/b: .*traces is not writable"):
        run_sweep(deeper, workers=0, progress=False)
    # a job set's generated jobs are made there too
    (tmp_path / "js.yaml").write_text("jobs:\n  - {generator: fib, params: {n: 10}}\n")
    jobs = write(
        tmp_path,
        "name: j\nworkloads: [{jobs: js.yaml}]\nmachines: [itrs-scaling-2]\n"
        "schedulers: [ws]\nseeds: [0]\n",
        "j.yaml",
    )
    loaded_jobs = load_spec(jobs, sets=[f"trace_cache={cache}"])
    with pytest.raises(ConfigError, match=r"traces is not writable, and 1 trace\(s\) .*\(fib-"):
        spec_module.check_trace_cache(loaded_jobs, loaded_jobs.points())
    # without the size check (a Dask sweep) a writable cache needs no recipe: the job
    # set's files are not read for them
    (tmp_path / "other").mkdir()
    writable = load_spec(jobs, sets=[f"trace_cache={tmp_path / 'other'}"])
    read, recipes = [], spec_module._recipes
    monkeypatch.setattr(spec_module, "_recipes", lambda points: read.append(1) or [])
    spec_module.check_trace_cache(writable, writable.points(), sizes=False)
    assert read == []
    spec_module.check_trace_cache(writable, writable.points())
    assert read == [1]
    monkeypatch.setattr(spec_module, "_recipes", recipes)
    # a point function of one's own makes no trace
    report = run_sweep(loaded, workers=0, point_fn=sweep_pointfns.fake_point, progress=False)
    assert report.ran == len(loaded.points())
    # once every trace is there, reading them needs no write: the check passes (the
    # empty files then fail as traces, point by point, which is not this check's business)
    for p in loaded.points():
        if p.workload["kind"] == "generator":
            cached_trace_path(p.workload, cache).write_bytes(b"")
    spec_module.check_trace_cache(loaded, loaded.points())


def test_sampling_a_generator_that_marks_no_iterations_is_refused_up_front(tmp_path):
    """sample_iterations on fib or mergesort failed every such point once it ran ("the
    trace has no iterations"); the generator says so before any trace is made."""
    from simsched.experiments.spec import check_spec
    from simsched.workloads import WORKLOADS

    text = (
        "name: d\nworkloads: [{name: h, generator: heat, params: {nx: 10, ny: 10}}, "
        "{name: f, generator: fib, params: {n: 8}}]\nmachines: [itrs-scaling-1]\n"
        "schedulers: [ws]\nsample_iterations: 3\n"
    )
    loaded = load_spec(write(tmp_path, text), small=False)
    with pytest.raises(ConfigError) as info:
        check_spec(loaded)
    assert str(info.value).endswith(
        "workloads.1: generator fib marks no iterations in its traces, so sample_iterations "
        "cannot sample it (drop the workload or sample_iterations)"
    )
    assert not (tmp_path / "results").exists()
    # without sampling the same workloads pass; a generator that marks them passes sampled
    check_spec(load_spec(write(tmp_path, text.replace("sample_iterations: 3\n", "")), small=False))
    check_spec(
        load_spec(
            write(tmp_path, text.replace(", {name: f, generator: fib, params: {n: 8}}", "")),
            small=False,
        )
    )
    # every built-in generator says whether it marks iterations
    assert {n for n, w in WORKLOADS.items() if w.marks_iterations is None} == set()
    assert not WORKLOADS["mergesort"].marks_iterations and WORKLOADS["ge"].marks_iterations


def test_sampling_a_trace_file_without_iterations_is_refused_up_front(tmp_path):
    """The check opened a trace file, and the points still each failed on it ("the trace
    has no iterations")."""
    from simsched.experiments.spec import check_spec

    fib = Path(__file__).resolve().parents[2] / "traces" / "samples" / "fib-16-6.valgrind.sst"
    text = (
        f"name: d\nworkloads: [{{trace: {fib}}}]\nmachines: [itrs-scaling-1]\n"
        "schedulers: [ws]\nsample_iterations: 3\n"
    )
    with pytest.raises(ConfigError) as info:
        check_spec(load_spec(write(tmp_path, text), small=False))
    assert str(info.value).endswith(
        "has no iterations, so sample_iterations cannot sample it (mark them with SS_ITER, "
        "or drop the workload or sample_iterations)"
    )
    check_spec(load_spec(write(tmp_path, text.replace("sample_iterations: 3\n", "")), small=False))
