"""Code identity: the version from git, and caches keyed by the timing model's source."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import simsched
from simsched import identity

ROOT = Path(__file__).resolve().parent.parent


def test_version_comes_from_git_and_the_cli_prints_it(capsys):
    from simsched.cli import main

    v = identity.version()
    assert simsched.__version__ == v
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"simsched {v}\n"
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short=7", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        tagged = (
            subprocess.run(
                ["git", "-C", str(ROOT), "describe", "--exact-match", "--tags"],
                capture_output=True,
            ).returncode
            == 0
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    pytest.importorskip("setuptools_scm")
    assert tagged or f"+g{head}" in v


def _clear() -> None:
    identity.source_identity.cache_clear()
    identity.timing_model_identity.cache_clear()


def test_editing_the_timing_model_or_a_generator_changes_the_cache_keys(tmp_path, monkeypatch):
    from simsched.trace.recipes import TRACE_MAKING_PACKAGES, recipe_key

    for pkg in {*identity.TIMING_MODEL_SOURCES, *TRACE_MAKING_PACKAGES}:
        src = identity.PACKAGE_DIR / pkg
        if src.is_file():
            shutil.copy(src, tmp_path / pkg)
        else:
            shutil.copytree(src, tmp_path / pkg)
    monkeypatch.setattr(identity, "PACKAGE_DIR", tmp_path)
    recipe = {"kind": "generator", "generator": "fib", "params": {"n": 8}}
    _clear()
    try:
        model, key = identity.timing_model_identity(), recipe_key(recipe)
        memory = tmp_path / "memory" / "system.py"
        memory.write_text(memory.read_text() + "\n# one cycle more somewhere\n")
        _clear()
        assert identity.timing_model_identity() != model
        assert recipe_key(recipe) == key  # the trace a recipe makes does not depend on it
        fib = tmp_path / "workloads" / "fib.py"
        fib.write_text(fib.read_text() + "\n# a different program\n")
        _clear()
        assert recipe_key(recipe) != key
        model = identity.timing_model_identity()
        baseline = tmp_path / "baseline.py"  # it runs the baseline
        baseline.write_text(baseline.read_text() + "\n# a different baseline\n")
        _clear()
        assert identity.timing_model_identity() != model
        model = identity.timing_model_identity()
        stats = tmp_path / "stats.py"  # the sampled baseline's interval
        stats.write_text(stats.read_text() + "\n# a different quantile\n")
        _clear()
        assert identity.timing_model_identity() != model
    finally:
        _clear()


def _scm(root: Path) -> str:
    setuptools_scm = pytest.importorskip("setuptools_scm")
    return setuptools_scm.get_version(root=str(root), fallback_version=identity.UNTAGGED_BASE)


def _commit(repo: Path, n: int) -> None:
    (repo / "f.txt").write_text(f"{n}\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "add", "f.txt"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", f"c{n}"], check=True, capture_output=True)


def test_the_fast_version_from_git_agrees_with_setuptools_scm(tmp_path, monkeypatch):
    # `simsched --version` computes the version without importing setuptools-scm (too slow
    # for a quick command); in every case it covers, it must give setuptools-scm's answer.
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _commit(repo, 0)
    _commit(repo, 1)
    seen = []
    for step in ("untagged", "untagged-dirty", "tagged", "after-tag", "after-tag-dirty"):
        if step == "tagged":
            (repo / "f.txt").write_text("1\n")
            subprocess.run(["git", "-C", str(repo), "tag", "v1.2.3"], check=True)
        elif step == "after-tag":
            _commit(repo, 2)
            _commit(repo, 3)
        elif step.endswith("dirty"):
            (repo / "f.txt").write_text("edited\n")
        fast = identity.describe_version(repo)
        assert fast == _scm(repo), step
        seen.append(fast)
    assert seen[2] == "1.2.3" and seen[3].startswith("1.2.4.dev2+g")
    assert seen[1].endswith(".d20231114") and seen[4].endswith(".d20231114")
    # A tag setuptools-scm interprets (a pre-release) is left to it.
    subprocess.run(["git", "-C", str(repo), "tag", "v2.0.0rc1"], check=True)
    assert identity.describe_version(repo) is None


def test_the_checkout_version_is_setuptools_scm_s():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    identity.version.cache_clear()
    try:
        assert identity.version() == _scm(ROOT)
    finally:
        identity.version.cache_clear()


@pytest.mark.parametrize("value", ["abc", "1e3", "99999999999999999"])
def test_a_source_date_epoch_that_is_no_date_is_named(monkeypatch, capsys, value):
    """It ended every run, and --version, in a traceback (int('abc'), or an OSError from
    gmtime for a year past 9999)."""
    from simsched.cli import main
    from simsched.errors import ConfigError

    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    monkeypatch.setattr(identity, "_git", lambda root, *a: "v0.1.0-3-gabcdef0-dirty")
    with pytest.raises(ConfigError, match=rf"^SOURCE_DATE_EPOCH='{value}': expected"):
        identity.describe_version(ROOT)
    identity.version.cache_clear()
    try:
        with pytest.raises(SystemExit) as info:
            main(["--version"])
    finally:
        identity.version.cache_clear()
    err = capsys.readouterr().err
    if (ROOT / ".git").exists():
        assert info.value.code == 2 and "SOURCE_DATE_EPOCH=" in err and "Traceback" not in err
