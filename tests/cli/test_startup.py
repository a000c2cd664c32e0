"""Start-up cost: quick commands load only what they need (issue 25, item 5).

Structural checks, not timings: which modules a command imports decides its start-up cost,
and unlike a timing the answer does not depend on the load of the machine running the test
(``benchmarks/bench_startup.py`` measures the CPU time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from simsched import cli

ROOT = Path(__file__).resolve().parents[2]
# Imported only by the commands that simulate, analyse or draw.
HEAVY = (
    "numpy",
    "numba",
    "pandas",
    "pyarrow",
    "matplotlib",
    "rich",
    "typer",
    "setuptools_scm",
    "yaml",
    "pydantic",
)


def _modules_after(*args: str, env: dict[str, str] | None = None) -> set[str]:
    code = (
        "import json, sys\n"
        "from simsched.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
        check=True,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_version_imports_no_library_and_no_command_module():
    loaded = _modules_after("--version")
    assert not _top(loaded) & set(HEAVY), sorted(_top(loaded) & set(HEAVY))
    assert not any(m.startswith("simsched.cli.") for m in loaded)


def test_python_importtime_of_version_shows_no_numpy():
    # The same question as above, asked the way a user would profile start-up.
    code = "import sys; from simsched.cli import main; main(sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.startswith("simsched ")
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "simsched.identity" in imported
    assert not {"numpy", "typer", "rich"} & imported


def test_machine_list_loads_neither_typer_nor_the_simulator(tmp_path):
    env = {"SIMSCHED_CACHE_DIR": str(tmp_path)}
    _modules_after("machine", "list", env=env)  # the first run fills the rows' cache
    loaded = _modules_after("machine", "list", env=env)
    assert "simsched.cli._presets" in loaded
    # typer loads pydantic: the two cost more than the command itself
    never = {"numpy", "numba", "pandas", "pyarrow", "matplotlib", "typer", "pydantic", "yaml"}
    assert not _top(loaded) & never, sorted(_top(loaded) & never)
    others = {m for m in loaded if m.startswith("simsched.cli.")} - {
        "simsched.cli._presets",
        "simsched.cli._table",
    }
    assert not others, sorted(others)
    assert "simsched.engine" not in loaded


def test_machine_list_prints_what_the_typer_command_prints(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["machine", "list"])
    quick = capsys.readouterr().out
    cli.build_app("machine")(args=["machine", "list"], standalone_mode=False)
    typed = capsys.readouterr().out
    assert done.value.code == 0
    assert quick == typed and "opteron-8380-4x4" in quick
    # any other spelling goes through typer
    with pytest.raises(SystemExit) as done:
        cli.main(["machine", "list", "--help"])
    assert done.value.code == 0 and "Usage" in capsys.readouterr().out


def _names(app: typer.Typer) -> set[str]:
    commands = {c.name or c.callback.__name__ for c in app.registered_commands}  # type: ignore[union-attr]
    return commands | {g.name for g in app.registered_groups if g.name}


def test_command_homes_name_every_command_of_every_module():
    # The lazy start-up registers only the modules COMMAND_HOMES names for the first word of
    # the command line: a command missing from the map, or mapped to the wrong module,
    # would vanish or fail.
    full = _names(cli.build_app())
    assert full == set(cli.COMMAND_HOMES)
    for word, homes in cli.COMMAND_HOMES.items():
        for module in homes:
            probe = typer.Typer()
            __import__(module, fromlist=["register"]).register(probe)
            if module == homes[0] or word in _names(probe):
                continue
            pytest.fail(f"{word}: {module} does not register it")
        assert word in _names(cli.build_app(word))


def test_command_groups_are_the_registered_groups():
    app = cli.build_app()
    assert {g.name for g in app.registered_groups if g.name} == cli.COMMAND_GROUPS


def test_apps_are_built_once_and_plot_sweep_is_registered_once():
    assert cli.build_app("plot") is cli.build_app("plot")
    cli.build_app()
    cli.build_app("plot")
    from simsched.cli.plot import plot_app

    names = [c.name for c in plot_app.registered_commands]
    assert names.count("sweep") == 1


def test_machine_list_rows_are_cached_and_a_bad_cache_is_recomputed(tmp_path, monkeypatch):
    from simsched.cli import _presets as machine

    env = {"SIMSCHED_CACHE_DIR": str(tmp_path)}
    first = _modules_after("machine", "list", env=env)
    assert "simsched.machine.schema" in first  # the presets were loaded and validated
    again = _modules_after("machine", "list", env=env)
    assert "simsched.machine.schema" not in again  # read from the cache
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(tmp_path))
    (cached,) = (tmp_path / "machine-list").glob("*.json")
    rows = machine.preset_rows()
    assert rows == json.loads(cached.read_text())
    assert [r[0] for r in rows][:2] == ["itrs-scaling-1", "itrs-scaling-2"]
    cached.write_text('{"not": "rows"}')
    assert machine.preset_rows() == rows
    assert json.loads(cached.read_text()) == rows
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(tmp_path / "f"))
    (tmp_path / "f").write_text("a file, not a folder")
    assert machine.preset_rows() == rows  # an unwritable cache only costs the time
