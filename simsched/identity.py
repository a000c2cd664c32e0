"""Code identity: the version of simsched and a hash of the code a cached result depends on.

The version comes from git through setuptools-scm: a release is a tag ``vX.Y.Z``, and any
other commit is ``X.Y.(Z+1).devN+gHASH`` (``.dDATE`` appended when the tree has local
changes).  It is read live from git when simsched runs from a checkout, so it never lags behind
the code as the one recorded at install time would; an installed wheel uses the version
file setuptools-scm wrote when it was built.  In a checkout the common cases (no tag yet, or
a plain ``vX.Y.Z`` release tag) are computed from ``git describe`` directly, because
importing setuptools-scm costs more than the rest of ``simsched --version``; any other tag
is left to setuptools-scm, and a test checks that both agree.

A version says nothing about uncommitted edits, so caches of computed results are keyed by
:func:`timing_model_identity` instead: a hash of the source of every module that decides a
simulated cycle count (engine, memory, schedulers, trace reader, machine schema, and the
API modules that assemble a baseline and extrapolate a sampled one).  Editing any of them
gives a new identity, and results cached under the old one are never read again.  The
version is deliberately not part of it: a commit that leaves these files alone (docs,
studies, the CLI) keeps the one-core baselines already computed, which at the papers' input
sizes cost as much as a scheduler's run.

Every result record carries :func:`results_identity`, a short hash of all the source a
record depends on (the timing model, the trace generators and capture, the API that
assembles the record) without the version, so a sweep can tell which of its finished points
were simulated by code other than the one now running (``simsched sweep status``,
``sweep run --rerun-stale``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import re
import subprocess
import time
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent

#: Sub-packages whose source decides simulated timing (and so a cached baseline).
TIMING_MODEL_PACKAGES = ("engine", "memory", "schedulers", "trace", "machine")
#: What a cached one-core baseline depends on: the timing model (the sampled-run
#: extrapolation is ``engine/sampled.py``), the module that runs it (``baseline.py``) and
#: the statistics the extrapolation calls (``stats.py``).
TIMING_MODEL_SOURCES = (*TIMING_MODEL_PACKAGES, "baseline.py", "stats.py")
#: Everything a result record depends on (sub-packages and top-level modules; the API
#: that assembles it is ``api.py``, the record's ``warnings`` come from ``comparison.py``).
RESULT_SOURCES = (
    *TIMING_MODEL_SOURCES,
    "api.py",
    "workloads",
    "capture",
    "jobset.py",
    "params.py",
    "comparison.py",
    "plugins.py",
)

FALLBACK_VERSION = "0.0.0+unknown"
#: The version counted from while the repository has no release tag (pyproject's
#: ``fallback_version``; both must agree so a checkout and its wheel report the same).
UNTAGGED_BASE = "0.1.0"


_RELEASE_TAG = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_DESCRIBE = re.compile(r"(?P<tag>.+)-(?P<distance>\d+)-g(?P<node>[0-9a-f]+)")


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def describe_version(root: Path) -> str | None:
    """The version setuptools-scm gives the checkout at ``root`` (its default
    ``guess-next-dev`` and ``node-and-date`` schemes), from ``git`` alone.

    Covers a checkout without tags (counted from :data:`UNTAGGED_BASE`) and one whose
    nearest tag is a plain release ``vX.Y.Z``; returns ``None`` for anything else (a
    pre-release tag, a dirty tagged commit, no git), which setuptools-scm then answers.
    """
    out = _git(root, "describe", "--dirty", "--tags", "--long", "--abbrev=40", "--match", "*[0-9]*")
    if out is None:  # no tag: every commit counts
        node = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
        count = _git(root, "rev-list", "--count", "HEAD")
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
        if not node or count is None or status is None:
            return None
        tag, distance, dirty = UNTAGGED_BASE, int(count), bool(status)
    else:
        dirty = out.endswith("-dirty")
        m = _DESCRIBE.fullmatch(out.removesuffix("-dirty"))
        if m is None:
            return None
        tag, distance, node = m["tag"], int(m["distance"]), m["node"]
        if distance == 0 and dirty:
            return None
    release = _RELEASE_TAG.fullmatch(tag)
    if release is None:
        return None
    major, minor, patch = (int(g) for g in release.groups())
    if distance == 0 and not dirty:
        return f"{major}.{minor}.{patch}"
    # setuptools-scm dates a dirty tree by SOURCE_DATE_EPOCH when set, else today (UTC).
    when = time.gmtime(_source_date_epoch())
    local = f"g{node[:9]}" + (time.strftime(".d%Y%m%d", when) if dirty else "")
    return f"{major}.{minor}.{patch + 1}.dev{distance}+{local}"


def _source_date_epoch() -> float:
    """``SOURCE_DATE_EPOCH`` (whole seconds since 1970) when set, else the clock's time; a
    value that is no such date is a :class:`~simsched.errors.ConfigError` naming it (it
    ended every run, and ``--version``, in a traceback)."""
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    if not raw:
        return time.time()
    try:
        when = int(raw)
        time.gmtime(when)  # a year past 9999 overflows here
    except (ValueError, OverflowError, OSError):
        from simsched.errors import ConfigError

        raise ConfigError(
            f"SOURCE_DATE_EPOCH={raw!r}: expected whole seconds since 1970 (or unset it)"
        ) from None
    return when


def _git_version() -> str | None:
    root = PACKAGE_DIR.parent
    if not (root / ".git").exists():
        return None
    fast = describe_version(root)
    if fast is not None:
        return fast
    try:
        from setuptools_scm import get_version
    except ImportError:
        return None
    try:
        return get_version(root=str(root), fallback_version=UNTAGGED_BASE)
    except (LookupError, OSError, subprocess.SubprocessError, ValueError):
        return None


@functools.cache
def version() -> str:
    """simsched's version (see the module docstring for where it comes from)."""
    live = _git_version()
    if live:
        return live
    # setuptools-scm writes simsched/_version.py at install time; it is absent in a bare
    # checkout, so it is looked up by name rather than imported statically.
    try:
        built = getattr(importlib.import_module("simsched._version"), "version", None)
    except ImportError:
        built = None
    if built:
        return str(built)
    from importlib import metadata  # slow to import: only for a wheel without a version file

    try:
        return metadata.version("simsched")
    except metadata.PackageNotFoundError:
        return FALLBACK_VERSION


@functools.cache
def source_identity(packages: tuple[str, ...]) -> str:
    """Hex digest of the source of simsched's sub-``packages`` (``.py``, ``.c`` and ``.h``
    files; an entry naming a file, such as ``api.py``, is that file).

    The version is not part of it: a commit that leaves these files alone keeps what was
    cached from them.
    """
    h = hashlib.sha256()
    for pkg in packages:
        root = PACKAGE_DIR / pkg
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.suffix in (".py", ".c", ".h") and path.is_file():
                h.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0")
                h.update(path.read_bytes())
    return h.hexdigest()


@functools.cache
def timing_model_identity() -> str:
    """Hex digest of the source a cached baseline depends on (:data:`TIMING_MODEL_SOURCES`;
    not the version, see the module docstring)."""
    return source_identity(TIMING_MODEL_SOURCES)


def results_identity() -> str:
    """16 hex digits naming the source every result record depends on (no version)."""
    return source_identity(RESULT_SOURCES)[:16]


@functools.cache
def outside_source_identity(module: str) -> str | None:
    """16 hex digits naming the source of the package outside simsched that holds
    ``module`` (a plug-in's): every ``.py`` file of its top-level package, or the file of a
    lone module.  ``None`` for simsched's own modules (:func:`results_identity` covers
    them) and for a module whose source cannot be found (built into the interpreter, or
    defined in a notebook).

    A plug-in's source decides results as simsched's does, so a record made with one
    carries this beside ``code_identity``, and a cached trace of a plug-in generator is
    keyed by it: an edited plug-in neither keeps its old rows unflagged nor reuses the
    traces its old code made.  The package is located without being imported.
    """
    import importlib.util
    import sys

    top = module.partition(".")[0]
    if not top or top == "simsched":
        return None
    loaded = sys.modules.get(top)
    try:
        spec = None if loaded is not None else importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    dirs = list(
        getattr(loaded, "__path__", None) or (spec and spec.submodule_search_locations) or []
    )
    single = getattr(loaded, "__file__", None) if loaded is not None else spec and spec.origin
    if dirs:
        files = sorted({f for d in dirs for f in Path(d).rglob("*.py") if f.is_file()})
        roots = [Path(d) for d in dirs]
    elif single and str(single).endswith(".py") and Path(single).is_file():
        files, roots = [Path(single)], [Path(single).parent]
    else:
        return None
    h = hashlib.sha256()
    try:
        for path in files:
            rel = next((path.relative_to(r) for r in roots if path.is_relative_to(r)), path.name)
            h.update(str(rel).encode() + b"\0" + path.read_bytes())
    except OSError:  # a file it cannot read: no identity, as for source not found
        return None
    return h.hexdigest()[:16]
