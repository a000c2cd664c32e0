"""Traces on demand: generator recipes cached by content hash, trace paths, capture errors."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pytest

from simsched.errors import CaptureError, ConfigError
from simsched.trace import open_trace
from simsched.trace.recipes import cached_trace_path, recipe_key
from simsched.trace.recipes import ensure_trace as ensure_with
from simsched.workloads import generate


def ensure_trace(workload, cache_dir, spec_dir):
    return ensure_with(workload, cache_dir, spec_dir, generate=generate)


FIB = {"label": "fib", "kind": "generator", "generator": "fib", "params": {"n": 8, "cutoff": 2}}


def test_generator_recipe_is_made_once_and_cached(tmp_path):
    path = ensure_trace(FIB, tmp_path / "cache", tmp_path)
    assert path == cached_trace_path(FIB, tmp_path / "cache")
    with open_trace(path) as t:
        assert t.header.program == "fib" and t.header.n_strands > 1
    stamp = path.stat().st_mtime_ns
    again = ensure_trace({**FIB, "label": "other label"}, tmp_path / "cache", tmp_path)
    assert again == path and path.stat().st_mtime_ns == stamp  # label is not in the key
    other = {**FIB, "params": {"n": 9, "cutoff": 2}}
    assert recipe_key(other) != recipe_key(FIB)
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".")]


def test_temporaries_of_a_killed_generation_are_removed(tmp_path):
    """A worker killed (kill -9) while generating a trace left its temporary file, and the
    generator's own one inside it, in the cache for good: every later generation of the
    trace left them where they were."""
    cache = tmp_path / "cache"
    cache.mkdir()
    name = cached_trace_path(FIB, cache).name
    orphans = [cache / f".{name}.k1ll3d.tmp.sst", cache / f"..{name}.k1ll3d.tmp.sst.x.tmp.sst"]
    other = cache / ".fib-0123456789abcdef.sst.k1ll3d.tmp.sst"  # another trace's: not ours
    for p in [*orphans, other]:
        p.write_bytes(b"half a trace")
    path = ensure_trace(FIB, cache, tmp_path)
    assert path.is_file() and not any(p.exists() for p in orphans) and other.exists()


@pytest.mark.parametrize("keep", [0, 100, -1])
def test_a_truncated_cached_trace_is_made_again(tmp_path, keep):
    """A cached trace cut short (a damaged disk, a copy that ran out of space) was returned
    as it was: every point on it failed, again with --retry-failed, until the file was
    found and deleted by hand.  The cache's own copy is remade."""
    path = ensure_trace(FIB, tmp_path / "cache", tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole[:keep])
    assert ensure_trace(FIB, tmp_path / "cache", tmp_path) == path
    assert path.read_bytes() == whole
    with open_trace(path) as t:
        assert t.header.program == "fib"


def _make(cache: str) -> str:
    return str(ensure_trace(FIB, cache, cache))


def test_concurrent_workers_share_one_generation(tmp_path):
    cache = str(tmp_path / "cache")
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        paths = list(pool.map(_make, [cache] * 4))
    assert len(set(paths)) == 1
    assert sorted(p.suffix for p in (tmp_path / "cache").iterdir()) == [".lock", ".sst"]


def test_trace_path_relative_to_spec(tmp_path):
    (tmp_path / "t.sst").write_bytes(b"x")
    assert (
        ensure_trace({"kind": "trace", "path": "t.sst"}, tmp_path / "c", tmp_path)
        == tmp_path / "t.sst"
    )
    with pytest.raises(ConfigError, match="does not exist"):
        ensure_trace({"kind": "trace", "path": "nope.sst", "label": "w"}, tmp_path / "c", tmp_path)


def test_failing_capture_recipe_names_the_command(tmp_path):
    recipe = {
        "program": ["./prog"],
        "backend": "gcc",
        "build": ["sh", "-c", "echo broken >&2; exit 3"],
        "sources": [],
    }
    with pytest.raises(CaptureError, match="exited 3: broken"):
        ensure_trace(
            {"kind": "capture", "recipe": recipe, "source_digests": {}}, tmp_path / "c", tmp_path
        )
    assert not list((tmp_path / "c").glob("*.sst"))


def test_bad_generator_parameter_is_an_error(tmp_path):
    bad = {**FIB, "params": {"n": 8, "bogus": 1}}
    with pytest.raises(ConfigError, match="bogus"):
        ensure_trace(bad, tmp_path / "c", tmp_path)
    assert not [p for p in (tmp_path / "c").iterdir() if p.suffix == ".sst"]
    assert os.path.isdir(tmp_path / "c")


def test_the_caller_supplies_the_generator(tmp_path):
    """The trace layer runs the generator it is given (it imports no workload), and the
    sweep layer's ensure_trace supplies simsched's own."""
    from simsched.experiments.traces import ensure_trace as sweep_ensure

    calls = []

    def fake(name, out, **params):
        calls.append((name, params))
        generate(name, out, **params)

    path = ensure_with(FIB, tmp_path / "c", tmp_path, generate=fake)
    assert calls == [("fib", {"n": 8, "cutoff": 2})]
    assert sweep_ensure(FIB, tmp_path / "c", tmp_path) == path  # cached: same key, same file
    assert len(calls) == 1
