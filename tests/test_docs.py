"""What the README and docs tell a user to type, and every bundled sweep spec, still work.

Every ``simsched ...`` line in a code block of README.md, docs/*.md and the studies'
READMEs is parsed by the real command line (command names, options and their types, without
running it); every option that a command in running text or a synopsis names is one of that
command's; and every bundled sweep spec is loaded and checked whole (schedulers, parameters,
generators, traces), as ``sweep run`` does before its first point.  Running them all would
take hours; parsing and checking catches what went wrong before (an option renamed, a
scheduler parameter that does not exist).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from simsched.cli import app
from simsched.experiments.spec import check_spec, load_spec

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The documents whose commands are checked: the studies' READMEs too, which tell how to run
# each study.
COMMAND_DOCS = [*DOCS, *sorted((ROOT / "experiments").glob("*/README.md"))]
SPECS = sorted(
    p
    for folder in ("configs/sweeps", "experiments")
    for p in (ROOT / folder).rglob("*.yaml")
    if "results" not in p.parts
)
# The YAML files that are sweep specs (the others are machine files and job sets): chosen
# here rather than skipped in the test, so a skip always means something was not checked.
SWEEP_SPECS = [p for p in SPECS if "workloads:" in p.read_text(encoding="utf-8")]
_FENCE = re.compile(r"^[ \t]*```(\w*)")
_SHELL = ("sh", "bash", "console", "shell", "")


def split_markdown(text: str) -> tuple[list[str], list[str]]:
    """The shell blocks and blocks without a language (commands with their output, synopses)
    of a Markdown text, each with its continuation lines joined, and the lines outside
    blocks.  Fences are paired in order, so that a block's closing fence never opens
    another; blocks may be indented under a list item."""
    blocks: list[str] = []
    prose: list[str] = []
    current: list[str] | None = None
    language = ""
    for line in text.splitlines():
        fence = _FENCE.match(line)
        if fence and current is None:
            current, language = [], fence.group(1)
        elif fence and current is not None:
            if language in _SHELL:
                blocks.append("\n".join(current).replace("\\\n", " "))
            current = None
        elif current is not None:
            current.append(line)
        else:
            prose.append(line)
    return blocks, prose


def documented_commands() -> list[tuple[str, str]]:
    """(where, command line) of every ``simsched`` command in a code block of the docs.

    A synopsis (``simsched profile TRACE [--json]``) is left to
    :func:`test_options_named_in_the_docs_exist`: its brackets are not a command line.
    """
    out = []
    for doc in COMMAND_DOCS:
        where = str(doc.relative_to(ROOT))
        for block in split_markdown(doc.read_text(encoding="utf-8"))[0]:
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                for part in line.split(" && "):
                    cmd = part.split(" #")[0].split(" > ")[0].split(" | ")[0].split(" < ")[0]
                    cmd = cmd.strip()
                    if cmd.startswith("simsched ") and not re.search(r"(^|\s)\[", cmd):
                        out.append((where, cmd))
    return out


def parse(args: list[str]) -> None:
    """Parse a command line down to its leaf command (raises the CLI's usage error)."""
    cmd = typer.main.get_command(app)
    ctx = cmd.make_context("simsched", list(args))
    while hasattr(cmd, "resolve_command"):
        rest = list(ctx._protected_args) + list(ctx.args)
        if not rest:
            return
        name, cmd, rest = cmd.resolve_command(ctx, rest)
        ctx = cmd.make_context(name, rest, parent=ctx)


def simsched_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run ``simsched ARGS`` in a new interpreter, as the installed command would.

    Parameters
    ----------
    args
        The arguments after ``simsched``.
    cwd, env
        Working folder and environment of the process.

    Returns
    -------
    subprocess.CompletedProcess
        With ``stdout`` and ``stderr`` as text.
    """
    code = "import sys; from simsched.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


COMMANDS = documented_commands()


def test_the_docs_have_commands():
    assert len(COMMANDS) >= 80
    assert any(where.startswith("experiments/") for where, _ in COMMANDS)
    assert len(SWEEP_SPECS) >= 8
    # The other YAML files are job sets (a top-level `jobs:`), which the sweeps that name
    # them validate; nothing else may hide among them unchecked.
    others = [p for p in SPECS if p not in SWEEP_SPECS]
    assert all(re.search(r"^jobs:", p.read_text(encoding="utf-8"), re.M) for p in others)


@pytest.mark.parametrize(("where", "line"), COMMANDS, ids=[f"{w}: {c}" for w, c in COMMANDS])
def test_documented_command_parses(where, line):
    args = shlex.split(line)[1:]
    if args[0] == "cc":  # every argument goes to gcc
        args = args[:1]
    try:
        parse(args)
    except Exception as exc:
        pytest.fail(f"{where}: `{line}` does not parse: {exc}")


_ROOT_COMMAND = typer.main.get_command(app)


def named_options(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(command words, option) of every option that a command of a Markdown text names.

    Commands are read from the lines of shell blocks and blocks without a language, and from
    inline code outside blocks (`` `simsched run --jobs J.yaml` ``, also without the leading
    ``simsched`` when the first word is a command: `` `sweep run --executor dask` ``), so
    synopses with placeholders and brackets count too.  ``cc`` is left out: gcc's flags mix
    with its own.  Options after `` -- `` are the captured program's.
    """
    blocks, prose = split_markdown(text)
    snippets = [line.split(" #")[0] for block in blocks for line in block.splitlines()]
    snippets += [span for line in prose for span in re.findall(r"`([^`]+)`", line)]
    out = []
    for snippet in snippets:
        for part in re.split(r" && | \| ", snippet):
            words = part.split()
            if words[:1] == ["$"]:
                words = words[1:]
            if words[:1] == ["simsched"]:
                words = words[1:]
            if not words or words[0] not in _ROOT_COMMAND.commands or words[0] == "cc":
                continue
            cmd, path = _ROOT_COMMAND, []
            while hasattr(cmd, "commands") and words and words[0] in cmd.commands:
                path.append(words[0])
                cmd = cmd.commands[words.pop(0)]
            for word in words:
                if word == "--":
                    break
                option = re.match(r"--?[A-Za-z][\w-]*", word.lstrip("[("))
                if option:
                    out.append((tuple(path), option.group()))
    return out


def options_of(path: tuple[str, ...]) -> set[str]:
    """Every option name (both forms of a flag) of the command ``simsched PATH``."""
    cmd = _ROOT_COMMAND
    for word in path:
        cmd = cmd.commands[word]
    return {name for p in cmd.params for name in (*p.opts, *p.secondary_opts)} | {"--help"}


def test_options_named_in_the_docs_exist():
    """An option a doc names with its command, in running text, a synopsis or an example,
    is an option of that command (renaming one leaves no doc behind)."""
    uses = [
        (str(doc.relative_to(ROOT)), path, option)
        for doc in COMMAND_DOCS
        for path, option in named_options(doc.read_text(encoding="utf-8"))
    ]
    assert len(uses) >= 200
    unknown = [f"{w}: simsched {' '.join(p)} {o}" for w, p, o in uses if o not in options_of(p)]
    assert not unknown


def test_an_unknown_option_in_a_doc_is_found():
    text = (
        "Run `sweep run --wrkers 2` or `simsched trace gen heat --paramm n=3`; not `cc -O9`.\n\n"
        "```\nsimsched profile TRACE [--sise 16K] -o P && simsched capture -o T -- ./p --x\n```\n"
        "```yaml\nrun --not-a-command-line\n```\n"
    )
    found = set(named_options(text))
    assert found == {
        (("sweep", "run"), "--wrkers"),
        (("trace", "gen"), "--paramm"),
        (("profile",), "--sise"),
        (("profile",), "-o"),
        (("capture",), "-o"),
    }
    assert {(p, o) for p, o in found if o not in options_of(p)} == {
        (("sweep", "run"), "--wrkers"),
        (("trace", "gen"), "--paramm"),
        (("profile",), "--sise"),
    }


@pytest.mark.parametrize("spec", SWEEP_SPECS, ids=[str(p.relative_to(ROOT)) for p in SWEEP_SPECS])
@pytest.mark.parametrize("small", [True, False], ids=["small", "full"])
def test_bundled_spec_is_valid_whole(spec, small):
    loaded = load_spec(spec, small=small)
    try:
        points = check_spec(loaded)
    except Exception as exc:
        if "no such file" in str(exc) and "trace" in str(exc):
            pytest.skip(f"needs a trace made by its README first: {exc}")
        raise
    assert points


@pytest.mark.slow
def test_readme_quick_tour_runs(tmp_path):
    """Run the README's tour for real, on a copy of the repository's inputs and a smaller n."""
    import os
    import shutil
    import tarfile

    with tarfile.open(tmp_path / "src.tar", "w") as tar:
        for folder in ("experiments", "traces", "configs"):
            tar.add(
                ROOT / folder, arcname=folder, filter=lambda m: None if "/results" in m.name else m
            )
    with tarfile.open(tmp_path / "src.tar") as tar:
        tar.extractall(tmp_path, filter="data")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SIMSCHED_SMALL": "1",
        "SIMSCHED_CACHE_DIR": str(tmp_path / "cache"),
    }
    tour = [c for w, c in COMMANDS if w == "README.md"]
    assert len(tour) >= 10
    for line in tour:
        args = shlex.split(line.replace("n=1048576", "n=8192").replace("65536", "4096"))[1:]
        if args[0] in ("cc", "capture") and shutil.which("gcc") is None:
            continue
        res = simsched_cli(args, tmp_path, env)
        assert res.returncode == 0, f"`{line}`: {res.stderr}"


def test_trace_format_doc_matches_the_layout_in_code():
    """The byte layout docs/trace-format.md gives is the one simsched.trace.format writes."""
    from simsched.trace import format as fmt

    doc = (ROOT / "docs" / "trace-format.md").read_text(encoding="utf-8")
    header = re.search(r'`HEADER = struct "([^"]+)"`', doc)
    assert header and header.group(1) == fmt.HEADER.format
    assert f"header size ({fmt.HEADER_SIZE})" in doc
    rows = re.search(r"### Index rows \(`INDEX_DTYPE`, (\d+) bytes\)\n\n(.*?)\n\n", doc, re.S)
    assert rows, "the index rows' heading"
    assert int(rows.group(1)) == fmt.INDEX_DTYPE.itemsize
    fields = re.findall(r"`(\w+)` (u8|u32|u64)", rows.group(2))
    named = [n for n in fmt.INDEX_DTYPE.names if n != "pad"]
    assert [n for n, _ in fields] == named
    sizes = {"u8": 1, "u32": 4, "u64": 8}
    padding = fmt.INDEX_DTYPE.itemsize - sum(fmt.INDEX_DTYPE[n].itemsize for n in named)
    assert [sizes[t] for _, t in fields] == [fmt.INDEX_DTYPE[n].itemsize for n in named]
    assert f"{padding} byte padding" in rows.group(2)
    tables = re.search(r"Arrays \(`TABLES` in `format.py`\): (.*?)\. The reader", doc, re.S)
    assert tables and re.findall(r"`(\w+)`", tables.group(1)) == list(fmt.TABLES)


def _leaf_commands():
    """(command words, click command) of every leaf command of the application."""
    out, todo = [], [([], typer.main.get_command(app))]
    while todo:
        path, cmd = todo.pop()
        if hasattr(cmd, "commands"):
            todo += [([*path, name], sub) for name, sub in cmd.commands.items()]
        else:
            out.append((path, cmd))
    return sorted(out, key=lambda c: c[0])


_BRACKETED = [
    (path, cmd)
    for path, cmd in _leaf_commands()
    if path != ["cc"]  # prints its own help, as text
    and any("[" in (getattr(p, "help", None) or "") for p in cmd.params)
]


def test_some_option_help_has_brackets():
    assert _BRACKETED


@pytest.mark.parametrize(("path", "cmd"), _BRACKETED, ids=[" ".join(p) for p, _ in _BRACKETED])
def test_help_prints_the_bracketed_text_of_its_options(path, cmd, capsys, monkeypatch):
    """`--help` renders help texts as rich markup: a `[default: ...]` written in a help text
    must survive that, not vanish as an unknown style tag."""
    from simsched.cli import main

    monkeypatch.setenv("COLUMNS", "4000")
    with pytest.raises(SystemExit) as e:
        main([*path, "--help"])
    assert e.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    for p in cmd.params:
        for text in re.findall(r"\\?\[[^\]]*\]", getattr(p, "help", None) or ""):
            assert " ".join(text.removeprefix("\\").split()) in shown, (p.name, text)


def test_every_cited_key_is_in_the_bibliography():
    """A citation such as [LAWS15] names an entry of docs/architecture.md's bibliography."""
    bib = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("Bibliography")[-1]
    defined = set(re.findall(r"^\* \*\*\[(\w+)\]\*\*", bib, re.M))
    assert {"PDF07", "CAB11", "LAWS15", "SAWS12"} <= defined
    for doc in [*DOCS, ROOT / "notebooks" / "README.md"]:
        cited = set(re.findall(r"\[([A-Z][A-Za-z]*\d{2})\]", doc.read_text(encoding="utf-8")))
        assert cited <= defined, f"{doc.name} cites {sorted(cited - defined)}"


def _documented_value(text: str):
    """A default as docs/workloads.md writes it (`2^20`, `65 536`, `true`), else None."""
    text = text.replace(" ", "").replace("\u202f", "")
    if text in ("true", "false"):
        return text == "true"
    if m := re.fullmatch(r"(\d+)\^(\d+)", text):
        return int(m.group(1)) ** int(m.group(2))
    return int(text) if text.isdigit() else None


_SECTIONS = {
    "mergesort": "mergesort",
    "hashjoin": "hashjoin",
    "ge": "ge",
    "datapar": "datapar",
    "fib": "fib",
    **{s: "Stencils: heat, sor, 9p, 6p, 25p" for s in ("heat", "sor", "9p", "6p", "25p")},
}


@pytest.mark.parametrize("name", sorted(_SECTIONS))
def test_workloads_doc_lists_every_parameter_with_its_default(name):
    """The **Parameters** item of a generator's section in docs/workloads.md names every
    parameter `trace gen --list` shows, and a plain default it states is the code's."""
    from simsched.workloads import params_of

    doc = (ROOT / "docs" / "workloads.md").read_text(encoding="utf-8")
    section = doc.split(f"\n## {_SECTIONS[name]}\n", 1)[1].split("\n## ", 1)[0]
    item = re.search(r"^\* \*\*Parameters\*\*: (.*?)(?=^\* |\Z)", section, re.S | re.M)
    assert item, f"no **Parameters** item in the {name} section"
    for param, info in params_of(name).items():
        stated = re.search(rf"`{param}`\s+\(([^;,:)]*)", item.group(1))
        assert stated, f"{name}: parameter {param} is not in the Parameters item"
        value = _documented_value(stated.group(1))
        if value is not None and name not in ("6p", "25p"):  # the first value is 2-D's
            assert value == info.default, (name, param, stated.group(1), info.default)


def _documented_fields(text: str) -> set[str]:
    """The field names in the first column of the tables of a part of docs/results.md."""
    out: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| field"):
            out |= set(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return out


def _is_documented(field: str, documented: set[str]) -> bool:
    """Whether ``field`` is among ``documented``, whose ``<level>_x``, ``a_…`` and ``a_*``
    stand for families of fields."""
    for doc in documented:
        pattern = re.escape(doc).replace("<level>", r"L\d+").replace("…", ".+")
        if re.fullmatch(pattern.replace(r"\*", ".+"), field):
            return True
    return False


@pytest.fixture(scope="module")
def small_heat(tmp_path_factory):
    from simsched.workloads import generate

    path = tmp_path_factory.mktemp("docs") / "heat.sst"
    generate("heat", path, nx=18, ny=18, iters=2, cutoff=4, init=False)
    return path


def test_results_doc_describes_every_field_of_a_run_record(small_heat):
    """docs/results.md has a row for every field of a single run's record, under every
    scheduler, on a machine with links and prefetchers."""
    import simsched
    from simsched.schedulers import REGISTRY

    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    documented = _documented_fields(doc.split("## `simsched compare --json`")[0])
    for name in sorted({cls.name for cls in REGISTRY.values()}):
        record = simsched.run(small_heat, "sunfire-x4600-8x4", name, speedup=False).record
        missing = [f for f in record if not _is_documented(f, documented)]
        assert not missing, f"{name}: {missing} not in docs/results.md"
    assert "link_traffic" in record and "prefetch_useful" in record


def test_results_doc_describes_every_field_of_a_job_set_record(small_heat, tmp_path):
    import simsched

    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(f"jobs:\n  - trace: {small_heat}\n    copies: 2\n", encoding="utf-8")
    record = simsched.run_jobs(jobs, "sunfire-x4600-8x4").record
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    part = doc.split("## Multi-job records")[1]
    documented = _documented_fields(part)
    # "cache and memory fields | as in single runs (...)": the names in its second column
    row = next(line for line in part.splitlines() if line.startswith("| cache and memory"))
    documented |= set(re.findall(r"`([^`]+)`", row.split("|")[2]))
    missing = [f for f in record if not _is_documented(f, documented)]
    assert not missing, f"{missing} not in docs/results.md, Multi-job records"


_TOP = ("simsched", "tests", "experiments", "configs", "traces", "capture", "benchmarks")
_TOP += ("notebooks", "docs", "pintools")
_REPO_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(_TOP) + r")/[\w./-]*\w)")


def test_repository_paths_named_in_the_docs_exist():
    """A path into the repository that the README or a doc names is there (a sample trace
    may be named by its stem); placeholders and results folders are left out."""
    missing = []
    for doc in [*DOCS, ROOT / "notebooks" / "README.md"]:
        for path in _REPO_PATH.findall(doc.read_text(encoding="utf-8")):
            if any(c in path for c in "<{*…") or "/results" in path:
                continue
            target = ROOT / path
            if not target.exists() and not list(target.parent.glob(target.name + ".*")):
                missing.append(f"{doc.name}: {path}")
    assert not missing


def test_job_set_example_of_the_jobs_doc_is_valid(tmp_path):
    """The job-set file docs/jobs.md shows is checked whole, as `run --jobs` does, saved
    as J.yaml at the repository's root, where the commands after it read it (its trace
    paths are relative to the file; they named a folder one below, and the commands
    failed as written)."""
    from simsched.jobset import check_jobset
    from simsched.machine import load_machine

    doc = (ROOT / "docs" / "jobs.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(.*?)```", doc, re.S).group(1)
    assert "--jobs J.yaml" in doc
    (tmp_path / "traces").symlink_to(ROOT / "traces")
    path = tmp_path / "J.yaml"
    path.write_text(example, encoding="utf-8")
    check_jobset(path, machine=load_machine("sunfire-x4600-8x4"))


def test_the_sweep_spec_example_of_the_sweeps_doc_loads(tmp_path):
    """The spec docs/sweeps.md shows under "The spec" passes the schema and its rules (its
    files are examples, so its points are not expanded)."""
    doc = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")
    example = re.search(r"## The spec\n\n```yaml\n(.*?)```", doc, re.S).group(1)
    (tmp_path / "s.yaml").write_text(example, encoding="utf-8")
    assert load_spec(tmp_path / "s.yaml").spec.name == "pdf_vs_ws"
    # With the files it names, its points expand: no two alike, every filter matching.
    # Its paths are those of a spec two folders below the repository (experiments/x/).
    (tmp_path / "traces").symlink_to(ROOT / "traces")
    tmp_path = tmp_path / "experiments" / "x"
    tmp_path.mkdir(parents=True)
    (tmp_path / "s.yaml").write_text(example, encoding="utf-8")
    (tmp_path / "machines").mkdir()
    chip = (ROOT / "simsched/machine/presets/opteron-8380-4x4.yaml").read_text(encoding="utf-8")
    chip = re.sub(r"(?m)^name: .*$", "name: my-chip", chip)
    (tmp_path / "machines" / "my-chip.yaml").write_text(chip, encoding="utf-8")
    (tmp_path / "jobsets").mkdir()
    sample = ROOT / "traces/samples/fib-16-6.valgrind.sst"
    (tmp_path / "jobsets" / "two-heats.yaml").write_text(
        f"jobs:\n  - {{trace: {sample}, copies: 2}}\n", encoding="utf-8"
    )
    points = check_spec(load_spec(tmp_path / "s.yaml", small=False))  # CI sets SIMSCHED_SMALL
    assert len(points) == len({p.id for p in points}) > 100


def test_the_generator_example_of_the_workloads_doc_generates(tmp_path, monkeypatch):
    """docs/workloads.md's complete generator, as a plug-in module, writes a valid trace of
    the references it declares through the public names of simsched.workloads (a plug-in
    had to import the private simsched.workloads._common)."""
    import importlib

    from simsched.trace import open_trace, validate
    from simsched.workloads import GENERATORS, Workload, generate

    doc = (ROOT / "docs" / "workloads.md").read_text(encoding="utf-8")
    example = re.search(r'```python\n("""vscale.*?)```', doc, re.S).group(1)
    assert "_common" not in example
    (tmp_path / "vscale.py").write_text(example, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("vscale")
    monkeypatch.setitem(GENERATORS.entries, "vscale", Workload(module))
    h = generate("vscale", tmp_path / "v.sst", n="2^12", grain=100)
    assert h.n_refs == module.references({"n": 4096}) == 8192
    with open_trace(tmp_path / "v.sst") as t:
        validate(t)


def test_the_scheduler_example_of_the_schedulers_doc_runs(tmp_path, monkeypatch):
    """docs/schedulers.md's plug-in class, registered, runs alone and beside another job
    under a controller that moves cores (it has on_depart), and its parameter is checked."""
    import simsched
    from simsched.errors import ConfigError
    from simsched.schedulers import REGISTRY

    doc = (ROOT / "docs" / "schedulers.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(from collections import deque\n.*?)```", doc, re.S)
    scope: dict[str, object] = {}
    exec(compile(example.group(1), "schedulers.md", "exec"), scope)
    cls = scope["OneQueue"]
    monkeypatch.setitem(REGISTRY, "onequeue", cls)
    sample = ROOT / "traces/samples/fib-16-6.valgrind.sst"
    rec = simsched.run(sample, "itrs-scaling-4", "onequeue", {"extra": 5}, speedup=False).record
    assert rec["status"] == "ok" and rec["params"] == '{"extra":5}'
    with pytest.raises(ConfigError, match="extra"):
        simsched.run(sample, "itrs-scaling-4", "onequeue", {"extra": -1})
    jobs = tmp_path / "j.yaml"
    jobs.write_text(
        f"controller: equi\njobs:\n  - {{trace: {sample}, scheduler: onequeue}}\n"
        f"  - {{trace: {sample}, name: other, arrival: 2000}}\n",
        encoding="utf-8",
    )
    assert simsched.run_jobs(jobs, "itrs-scaling-4").record["status"] == "ok"
