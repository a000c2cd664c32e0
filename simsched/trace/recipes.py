"""Traces on demand: a workload recipe becomes a trace file, made once and cached.

A point carries a *recipe*, never trace data: a path (used as is), a generator with its
parameters, or a capture command.  Generated and captured traces live in a cache folder under
a name derived from the content hash of the recipe, so every worker that shares the folder
makes each trace at most once, and workers that do not share it rebuild the same bytes (the
generators are deterministic).  Concurrent workers on one host or on a shared file system are
serialised by an ``fcntl`` lock on ``<trace>.lock``; the trace itself is written to a temporary
name and renamed, so a reader never sees half a trace, and the temporaries of a maker killed
mid-way are removed by the next one (under the lock).  A cached trace whose sections no longer
fit in its file (cut short after the fact) is made again.

The trace layer does not know the generators (they sit above it, on
:class:`~simsched.trace.TraceBuilder`): :func:`ensure_trace` is handed the function that
runs one (``simsched.workloads.generate``) by its caller.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from simsched.canonical import content_hash
from simsched.errors import CaptureError, ConfigError, TraceFormatError
from simsched.files import atomic_output, make_output_dir, remove_orphan_temporaries
from simsched.registry import registered_source
from simsched.trace.format import HEADER_SIZE, section_within, unpack_header

# Bump when the way a recipe turns into a trace changes, so old cache entries are not reused.
_CACHE_FORMAT = 1

# How a subprocess runs the simsched CLI without relying on the console script being on PATH.
SIMSCHED_CMD = [
    sys.executable,
    "-c",
    "import sys; from simsched.cli import main; sys.argv[0] = 'simsched'; main(sys.argv[1:])",
]


def recipe_key(workload: dict[str, Any]) -> str:
    """Cache key of a generator or capture recipe.

    A hash of the recipe and of the code that turns it into a trace (the generators, the
    trace writer and the capture backends, :func:`simsched.identity.source_identity`, and
    for a plug-in generator its own package: found by its entry point
    (:func:`_plugin_generator_identity`) or, for one registered in this process, through
    :func:`simsched.registry.registered_source`), so an edited generator never returns a
    trace it made before.
    """
    from simsched.identity import source_identity

    body = {k: v for k, v in workload.items() if k != "label"}
    code = source_identity(TRACE_MAKING_PACKAGES)
    keyed = {"recipe": body, "code": code, "fmt": _CACHE_FORMAT}
    gen = workload.get("generator") if workload.get("kind") == "generator" else None
    plugin = None
    if isinstance(gen, str):
        # an installed plug-in by its entry point, else one registered in this process
        plugin = _plugin_generator_identity(gen) or registered_source("workload", gen)
    if plugin is not None:  # built-in generators keep the keys they had
        keyed["plugin"] = plugin
    return content_hash(keyed)


@functools.cache
def _plugin_generator_identity(name: str) -> str | None:
    """:func:`~simsched.identity.outside_source_identity` of the installed generator
    plug-in called ``name``, found by its entry point without loading it (the trace layer
    does not know the generators); None for a built-in generator or an unknown name.
    Read once per process, as the plug-ins are."""
    from importlib import metadata

    from simsched.identity import outside_source_identity
    from simsched.registry import PLUGIN_GROUPS, name_key

    key = name_key(name)
    for ep in metadata.entry_points(group=PLUGIN_GROUPS["workload"]):
        if name_key(ep.name) == key:
            return outside_source_identity(ep.module)
    return None


#: Sub-packages whose source decides the trace a recipe makes.
TRACE_MAKING_PACKAGES = ("workloads", "trace", "capture")


def cached_trace_path(workload: dict[str, Any], cache_dir: str | Path) -> Path:
    """Where the trace of a generator or capture recipe lives in ``cache_dir``."""
    stem = workload.get("generator") or "capture"
    return Path(cache_dir) / f"{stem}-{recipe_key(workload)}.sst"


def trace_file(workload: dict[str, Any], spec_dir: str | Path) -> Path:
    """The file a ``{"kind": "trace", "path"}`` recipe names (a relative path is relative
    to ``spec_dir``, the folder of the spec it comes from)."""
    path = Path(workload["path"])
    return path if path.is_absolute() else Path(spec_dir) / path


def _command(argv: list[str], workdir: Path) -> list[str]:
    argv = [a.replace("{workdir}", str(workdir)) for a in argv]
    if argv and argv[0] == "simsched":
        return SIMSCHED_CMD + argv[1:]
    return argv


def _capture(workload: dict[str, Any], out: Path, spec_dir: Path) -> None:
    recipe = workload["recipe"]
    with tempfile.TemporaryDirectory(prefix="simsched-capture-") as tmp:
        workdir = Path(tmp)
        steps = []
        if recipe.get("build"):
            steps.append(_command(recipe["build"], workdir))
        steps.append(
            SIMSCHED_CMD
            + ["capture", "--backend", recipe["backend"], "-o", str(out), "--"]
            + _command(recipe["program"], workdir)
        )
        for argv in steps:
            proc = subprocess.run(argv, cwd=spec_dir, capture_output=True, text=True)
            if proc.returncode != 0:
                shown = shlex.join(argv[3:] if argv[:3] == SIMSCHED_CMD else argv)
                last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
                raise CaptureError(f"capture recipe: `{shown}` exited {proc.returncode}: {last[0]}")


#: How a generator recipe becomes a trace: ``generate(name, out, **params)``.
Generate = Callable[..., Any]


def _whole(path: Path) -> bool:
    """Whether ``path`` is a trace whose header is sound and whose sections all lie within
    the file: a cached trace cut short after it was made (a damaged disk, a copy that ran
    out of space) is made again rather than failing every point on it.  One header read;
    damage inside the sections is left for the reader to report."""
    try:
        with open(path, "rb") as f:
            header = unpack_header(f.read(HEADER_SIZE), str(path))
            size = os.fstat(f.fileno()).st_size
    except (OSError, TraceFormatError):
        return False
    return all(section_within(header[k], size) for k in ("meta", "tables", "index"))


def drop_damaged(target: Path, seen: os.stat_result) -> bool:
    """Remove the cached trace ``target`` that a reader found damaged, under its recipe's
    lock and only if it is still the file that was read (``seen``, its ``os.stat`` before
    reading): another point may have removed it and made it anew meanwhile, and that
    sound file stays.  Returns whether it was removed."""
    with _recipe_lock(target):
        try:
            now = os.stat(target)
            same = (now.st_ino, now.st_dev, now.st_mtime_ns, now.st_size) == (
                seen.st_ino,
                seen.st_dev,
                seen.st_mtime_ns,
                seen.st_size,
            )
            if same:
                target.unlink()
            return same
        except OSError:
            return False


@contextlib.contextmanager
def _recipe_lock(target: Path) -> Iterator[None]:
    """Hold the lock of the cached trace ``target`` (``<trace>.lock``): its maker, and
    whoever removes it, hold it."""
    with open(target.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_trace(
    workload: dict[str, Any],
    cache_dir: str | Path,
    spec_dir: str | Path,
    *,
    generate: Generate,
) -> Path:
    """Return the trace file of a workload recipe, making and caching it if needed.

    Parameters
    ----------
    workload
        A point's workload: ``{"kind": "trace", "path"}``, ``{"kind": "generator",
        "generator", "params"}`` or ``{"kind": "capture", "recipe", "source_digests"}``.
    cache_dir
        Folder for generated and captured traces (created if missing).
    spec_dir
        Folder relative paths in the recipe are relative to.
    generate
        Runs a generator recipe: ``generate(name, out, **params)``
        (:func:`simsched.workloads.generate`).

    Returns
    -------
    Path
        An existing trace file.

    Raises
    ------
    ConfigError
        A trace path does not exist, or the recipe kind is unknown.
    CaptureError
        A capture or build command failed.
    """
    kind = workload.get("kind")
    spec_dir = Path(spec_dir)
    if kind == "trace":
        path = trace_file(workload, spec_dir)
        if not path.is_file():
            raise ConfigError(
                f"workload {workload.get('label', path)}: trace {path} does not exist"
            )
        return path
    if kind not in ("generator", "capture"):
        raise ConfigError(f"workload {workload.get('label')}: unknown kind {kind!r}")
    target = cached_trace_path(workload, cache_dir)
    if _whole(target):
        return target
    make_output_dir(target.parent)
    with _recipe_lock(target):
        if _whole(target):  # made by another worker while we waited
            return target
        # Only the lock's holder writes the trace: any temporary of it is a dead maker's.
        remove_orphan_temporaries(target)
        with atomic_output(target) as tmp:
            if kind == "generator":
                generate(workload["generator"], tmp, **workload["params"])
            else:
                _capture(workload, tmp, spec_dir)
    return target
