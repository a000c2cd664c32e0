"""Timeline figures: both panels whole on a shared axis, a colour key, checked inputs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import simsched  # noqa: E402
from simsched.cli import main  # noqa: E402
from simsched.errors import ConfigError  # noqa: E402
from simsched.plotting.allotment import load_jobs_record  # noqa: E402
from simsched.plotting.iterations import load_records  # noqa: E402
from simsched.plotting.timeline import (  # noqa: E402
    load_timeline,
    plot_timeline,
    subtree_of_frames,
)
from simsched.workloads import generate  # noqa: E402


def _arrays(ends: list[int], frames: list[int]) -> dict[str, np.ndarray]:
    n = len(ends)
    return {
        "core": np.arange(n) % 2,
        "start": np.zeros(n, np.int64),
        "end": np.asarray(ends, np.int64),
        "frame": np.asarray(frames, np.int64),
        "socket_of_core": np.array([0, 1]),
    }


def test_shared_axis_shows_the_longer_run_whole_whatever_the_order():
    long, short = _arrays([100, 440], [0, 1]), _arrays([90, 200], [0, 1])
    for first, second in ((long, short), (short, long)):
        fig, axes = plt.subplots(2, 1, sharex=True)
        plot_timeline(first, color_by="socket", ax=axes[0])
        plot_timeline(second, color_by="socket", ax=axes[1])
        assert axes[0].get_xlim()[1] >= 440 and axes[1].get_xlim()[1] >= 440
        plt.close(fig)


def test_colour_key_names_sockets_and_the_serial_bars():
    fig = plot_timeline(_arrays([10, 20, 30], [0, 1, 2]), color_by="socket")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["socket 0", "socket 1"]
    plt.close(fig)
    subtree = np.array([-1, 1, 2])
    fig = plot_timeline(_arrays([10, 20, 30], [0, 1, 2]), subtree=subtree)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == [
        "subtree of frame 1",
        "subtree of frame 2",
        "serial / start-up (above the subtrees)",
    ]
    plt.close(fig)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tl")
    trace = root / "fib.sst"
    generate("fib", trace, n=12)
    other = root / "other.sst"
    generate("fib", other, n=11)
    simsched.run(trace, "itrs-scaling-2", "ws", out_dir=root / "run", speedup=False)
    return root


def _cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    return info.value.code, capsys.readouterr().err


def test_plot_timeline_checks_the_traces_digest_and_level(run_dir, capsys):
    out = str(run_dir / "t.png")
    run = str(run_dir / "run")
    code, err = _cli(
        ["plot", "timeline", run, "-o", out, "--trace", str(run_dir / "other.sst")], capsys
    )
    assert code == 2 and "is not the run's trace" in err and len(err.strip().splitlines()) == 1
    for level in ("999", "-3", "0"):
        code, err = _cli(["plot", "timeline", run, "-o", out, "--level", level], capsys)
        assert code == 2 and f"--level {level}: the trace's frames have levels 1 to" in err
    code, err = _cli(["plot", "timeline", run, "-o", str(run_dir / "t.xyz")], capsys)
    assert code == 2 and "unsupported figure format 'xyz'" in err and "png" in err
    code, _ = _cli(
        ["plot", "timeline", run, "-o", out, "--trace", str(run_dir / "fib.sst")], capsys
    )
    assert code == 0 and (run_dir / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_a_job_sets_timeline_is_coloured_by_job_and_titled_by_its_controller(
    tmp_path, capsys, monkeypatch
):
    generate("fib", tmp_path / "fib.sst", n=10)
    (tmp_path / "jobs.yaml").write_text(
        "controller: equi\njobs:\n  - {trace: fib.sst, copies: 2, arrival: [0, 2000]}\n"
    )
    simsched.run_jobs(tmp_path / "jobs.yaml", "itrs-scaling-2", out_dir=tmp_path / "run")
    drawn = {}

    def spy(arrays, **kw):
        drawn.update(kw, fig=plot_timeline(arrays, **kw))
        return drawn["fig"]

    monkeypatch.setattr("simsched.plotting.timeline.plot_timeline", spy)
    out = str(tmp_path / "t.png")
    code, err = _cli(["plot", "timeline", str(tmp_path / "run"), "-o", out], capsys)
    assert code == 0, err
    # frame numbers are each job's own: colouring by them mixed the jobs
    assert drawn["color_by"] == "job"
    # the title read " —  on itrs-scaling-2 (seed 0)": a job set has no one program
    assert drawn["title"] == "2 jobs, controller equi on itrs-scaling-2 (seed 0)"
    labels = [t.get_text() for t in drawn["fig"].axes[0].get_legend().get_texts()]
    assert labels == ["job 0", "job 1"]
    plt.close("all")
    code, err = _cli(
        ["plot", "timeline", str(tmp_path / "run"), "-o", out, "--color-by", "socket"], capsys
    )
    assert code == 0 and drawn["color_by"] == "socket"


def test_colour_by_job_needs_a_job_set():
    with pytest.raises(ConfigError, match="not the timeline of a job-set run"):
        plot_timeline(_arrays([10, 20], [0, 1]), color_by="job")


def test_a_sweep_folder_is_named_as_such_with_where_its_runs_are(tmp_path, capsys):
    """Before: 'no result.json there (write one with `simsched run --out`)' for a sweep's
    folder, whose runs are its points."""
    sweep = tmp_path / "results"
    (sweep / "points" / "abc").mkdir(parents=True)
    with pytest.raises(ConfigError) as info:
        load_timeline(sweep)
    said = (
        f"{sweep}: a sweep's output folder, not one run's: give one of its points, "
        f"{sweep / 'points'}/<id> (`simsched results show {sweep}` lists them by point_id)"
    )
    assert str(info.value) == said
    # one check for every reader of a run folder: `plot iterations` and `plot allotment`
    # said "results/result.json: no such file"
    for args in (
        ["export", "timeline", str(sweep), "-o", str(tmp_path / "t.json")],
        ["plot", "timeline", str(sweep), "-o", str(tmp_path / "t.png")],
        ["plot", "iterations", str(sweep), "-o", str(tmp_path / "t.png")],
        ["plot", "allotment", str(sweep), "-o", str(tmp_path / "t.png")],
    ):
        code, err = _cli(args, capsys)
        assert (code, err) == (2, f"simsched: error: {said}\n"), args
    for load in (load_timeline, load_jobs_record, load_records):
        with pytest.raises(ConfigError) as info:
            load(sweep)
        assert str(info.value) == said
    with pytest.raises(ConfigError) as info:
        load_timeline(tmp_path)
    assert str(info.value) == (
        f"{tmp_path}: no result.json there (write one with `simsched run --out`)"
    )


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"arrays": 7}, "arrays=7: expected a run's timeline"),
        ({"arrays": {"core": np.zeros(1)}}, "arrays: array 'start' is missing"),
        ({"ax": "ax"}, "ax='ax': expected matplotlib axes"),
        ({"title": ["t"]}, "title=['t']: expected a text"),
        ({"color_by": np.array(["socket", "job"])}, "color_by array("),
        ({"subtree": np.array([0])}, "subtree: 1 entries, but the timeline has frame 2"),
        ({"subtree": True}, "subtree: expected an integer array"),
        # per-strand arrays of different lengths failed inside with an IndexError
        ({"end": np.array([10, 20])}, "arrays: array 'end' has 2 entries, not one per strand (3)"),
        ({"core": np.array([0, 1])}, "arrays: array 'start' has 3 entries, not one per strand (2)"),
        ({"frame": np.zeros((3, 1), int)}, "arrays: array 'frame' has shape (3, 1)"),
        ({"core": np.array([0, 1, 2])}, "arrays: array 'core' names core 2 of 2 cores"),
        ({"core": np.array([0.0, 1.0, 0.0])}, "arrays: array 'core' holds float64, not integers"),
        # what a timeline.npz is checked for: a TypeError or ValueError inside numpy
        ({"core": np.int64(0)}, "arrays: array 'core' has shape (), not one dimension"),
        ({"end": [10, [20], 30]}, "arrays: array 'end' is not an array of integers"),
        ({"end": np.array([10, 5, 30]), "start": np.array([0, 9, 0])}, "array 'end' has a strand"),
        # drawn cut off at the makespan, without a word
        ({"makespan": np.array([20])}, "arrays: array 'end' has a strand that ends after the"),
        (
            {"socket_of_core": np.array(["a", "b"]), "color_by": "socket"},
            "arrays: array 'socket_of_core' holds <U1, not integers",
        ),
    ],
)
def test_a_wrong_argument_is_named(kwargs, says):
    """Before: "'int' object is not subscriptable", "'str' object has no attribute
    'figure'", an IndexError, or an array compared element by element."""
    arrays = _arrays([10, 20, 30], [0, 1, 2])
    for k in ("core", "start", "end", "frame", "socket_of_core", "makespan"):
        if k in kwargs:
            arrays[k] = kwargs.pop(k)
    args = {"arrays": arrays, **kwargs}
    with pytest.raises(ConfigError) as info:
        plot_timeline(args.pop("arrays"), **args)
    assert says in str(info.value)
    plt.close("all")


def test_timeline_arrays_from_python_are_checked_as_a_file_is(run_dir):
    """Arrays changed in Python failed inside numpy (a ValueError of a socket 'a', a
    TypeError of a core that was one number); a timeline.npz with the same damage was
    refused by name: one check, plot_timeline's and read_timeline's."""
    arrays = dict(load_timeline(run_dir / "run")[0])
    for change, says in (
        (
            {"socket_of_core": np.array(["a", "b"])},
            "arrays: array 'socket_of_core' holds <U1, not integers",
        ),
        ({"core": np.int64(0)}, "arrays: array 'core' has shape (), not one dimension"),
    ):
        with pytest.raises(ConfigError) as info:
            plot_timeline({**arrays, **change}, color_by="socket")
        assert str(info.value) == says
    plt.close("all")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("/etc/passwd", 1),
            "parent='/etc/passwd': a path; give the trace's frame tree, "
            "open_trace(path).frames.parent and .level",
        ),
        (
            (5, [0]),
            "parent=5: expected an integer array, one entry per frame (Trace.frames.parent)",
        ),
        (
            ([-1, 0], ["a", "b"]),
            "level=['a', 'b']: expected an integer array, one entry per frame (Trace.frames.level)",
        ),
        (([-1, 0], [0]), "level: 1 entries, but parent has 2 frames"),
        (
            ([-1, 2, 0], [0, 1, 1]),
            "parent: frame 1 has parent 2: not a tree rooted at frame 0 (each parent "
            "precedes its children)",
        ),
        (([-1, 0], [0, -1]), "level: frame 1 has level -1"),
        (([-1, 0], [0, 1], "1"), "at_level='1': expected an integer"),
    ],
)
def test_subtree_of_frames_names_what_is_no_frame_tree(args, says):
    """Before: numpy's "object of too small depth for desired array" for a path, an
    IndexError for a parent that is not a frame."""
    with pytest.raises(ConfigError) as info:
        subtree_of_frames(*args)
    assert str(info.value) == says


def test_subtree_of_frames_of_a_trace(run_dir):
    from simsched.trace import open_trace

    with open_trace(run_dir / "fib.sst") as t:
        sub = subtree_of_frames(t.frames.parent, t.frames.level, np.int64(2))
        assert (sub[t.frames.level == 2] == np.flatnonzero(t.frames.level == 2)).all()
        assert (sub[t.frames.level < 2] == -1).all()
