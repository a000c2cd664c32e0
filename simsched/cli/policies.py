"""``simsched schedulers``: the scheduling policies and processor controllers, with their parameters.

Every policy declares its parameters once (``params_schema``,
:class:`simsched.params.ParamSchema`); this command prints those declarations, and
``--markdown`` prints them as the parameter reference of docs/schedulers.md.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from simsched.cli._common import plugin_warnings, print_json, print_table
from simsched.errors import ConfigError

#: What every controller accepts besides its own parameters (kept to the controllers'
#: ``PLACEMENTS`` by tests/cli/test_policies.py, so that listing them needs no engine).
CONTROLLER_COMMON_DOC = (
    "every controller: `quantum_ms` (float > 0), the quantum in milliseconds of the "
    "machine's `clock_ghz` (a quantum given in cycles takes precedence); `placement` "
    "(`sockets` or `any`, default `sockets`): keep each job's cores on few sockets, or "
    "take free cores wherever they are (docs/jobs.md)"
)


def _summary(cls: Any) -> str:
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0].replace("``", "") if doc else ""


def _registries() -> tuple[Any, Any]:
    """The scheduler and controller registries (imported when a listing needs them)."""
    from simsched.engine.controllers import CONTROLLERS
    from simsched.schedulers.registry import SCHEDULERS

    return SCHEDULERS, CONTROLLERS


def _policies() -> tuple[list[Any], list[Any]]:
    schedulers, controllers = _registries()
    # names() loads the plug-ins' entry points, so outside policies are listed too
    scheds = [schedulers.get(n) for n in schedulers.names()]
    ctls = [controllers.get(n) for n in controllers.names()]
    return scheds, ctls


def params_reference() -> str:
    """The parameters of every scheduler and controller as Markdown (docs/schedulers.md)."""
    scheds, ctls = _policies()
    out = []
    for kind, classes in (("scheduler", scheds), ("controller", ctls)):
        for cls in classes:
            out.append(f"#### {kind} `{cls.name}`\n\n{cls.params_schema.markdown()}")
    out.append(f"Also {CONTROLLER_COMMON_DOC}.\n")
    return "\n".join(out)


def _row(cls: Any) -> dict[str, Any]:
    return {
        "name": cls.name,
        "aliases": list(cls.aliases),
        "summary": _summary(cls),
        "params": [
            {"name": n, "type": t, "default": cls.params_schema[n].default, "doc": d}
            for n, t, _, d in cls.params_schema.rows()
        ],
    }


def schedulers_cmd(
    params: Annotated[bool, typer.Option("--params", help="list each policy's parameters")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="print the parameters as Markdown (the docs)")
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """List the schedulers and processor controllers (--params: with their parameters)."""
    if markdown and json_:  # two output formats: one of them was dropped without a word
        raise ConfigError("--markdown and --json: give one of them")
    if markdown:
        print(params_reference(), end="")
        return
    scheds, ctls = _policies()
    plugin_warnings(*_registries())
    if json_:
        print_json(
            {"schedulers": [_row(c) for c in scheds], "controllers": [_row(c) for c in ctls]}
        )
        return
    for kind, classes in (("scheduler", scheds), ("controller", ctls)):
        if not params:
            table = Table(kind, "aliases", "parameters", "summary", title=f"{kind}s")
            for cls in classes:
                table.add_row(
                    cls.name, ", ".join(cls.aliases), ", ".join(cls.params_schema), _summary(cls)
                )
            print_table(table)
            continue
        for cls in classes:
            table = Table("parameter", "type", "default", "meaning", title=f"{kind} {cls.name}")
            for row in cls.params_schema.rows():
                table.add_row(*row)
            if not len(cls.params_schema):
                table.add_row("(none)", "", "", "")
            print_table(table)
    if params:
        print(f"Also {CONTROLLER_COMMON_DOC.replace('`', '')}.")


def register(app: typer.Typer) -> None:
    """Add the ``schedulers`` command."""
    app.command("schedulers")(schedulers_cmd)
