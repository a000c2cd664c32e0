"""Make the automatically coarsened mergesort traces of auto.yaml (PDF paper §6, Fig. 8).

    python experiments/granularity/prepare_auto.py [--small] [--n N] [--grain G] [-K F]

Generates mergesort at the finest grain of the grain sweep (``fig6.yaml``), profiles it once
with LruTree (§6.1; line size of the machines' L2), and for each machine of the automatic
sweep (``auto.yaml``) chooses the task groups with the coarsening rule
W <= K × cache/(cores × 2) (§6.2), writes the parallelization table beside the regrained
trace and regrains the fine trace into the trace file that sweep names for that machine
(every chosen group one strand).  The automatic sweep zips its workloads with its machines,
so the i-th trace belongs to the i-th machine.

``--small`` (or SIMSCHED_SMALL=1) uses the small pair ``small.yaml`` / ``small-auto.yaml``
instead (what ``notebooks/granularity.ipynb`` runs in CI).  Prints one line per machine: the
tasks the coarse program has and the grain (keys per leaf task) the table corresponds to.

The steps are functions (:func:`prepare`) so that the notebook calls them directly.
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simsched.errors import ConfigError, SimschedError
from simsched.experiments import load_spec
from simsched.experiments.scripts import run_script, usage_error
from simsched.experiments.spec import LoadedSpec, small_from_env
from simsched.machine import Machine, load_machine
from simsched.profile import coarsen, profile_trace, regrain_from_table, write_table
from simsched.trace import open_trace
from simsched.workloads import generate

HERE = Path(__file__).resolve().parent
PROG = "prepare_auto.py"
#: (grain sweep, automatic sweep) spec files, full size and small
SPECS = {False: ("fig6.yaml", "auto.yaml"), True: ("small.yaml", "small-auto.yaml")}


def fine_params(grain_spec: LoadedSpec) -> dict[str, Any]:
    """Generator parameters of the finest grain of a grain sweep's (first) workload.

    Parameters
    ----------
    grain_spec
        The loaded grain sweep (``fig6.yaml`` or ``small.yaml``); its first workload must
        be a ``mergesort`` generator with a ``grain`` grid.

    Returns
    -------
    dict
        ``params`` (with the ``small`` values when the spec is loaded small) and the
        smallest grain of the grid.

    Raises
    ------
    ConfigError
        The first workload is not a mergesort generator with a grain grid.
    """
    wl = grain_spec.spec.workloads[0]
    if wl.generator != "mergesort" or "grain" not in wl.grid:
        raise ConfigError(f"{grain_spec.path}: workloads.0 must be mergesort with a grain grid")
    params: dict[str, Any] = dict(wl.params)
    if grain_spec.small:
        params.update(wl.small)
    params["grain"] = min(int(g) for g in wl.grid["grain"])
    return params


def auto_targets(auto_spec: LoadedSpec) -> list[tuple[str, Machine, Path]]:
    """The (machine label, machine, regrained trace path) triples of an automatic sweep.

    Parameters
    ----------
    auto_spec
        The loaded automatic sweep (``auto.yaml`` or ``small-auto.yaml``): trace workloads
        zipped with preset machines, one trace per machine.

    Returns
    -------
    list of tuple
        In the spec's order; paths are absolute (the spec's are relative to it).

    Raises
    ------
    ConfigError
        The workloads are not trace files zipped one to one with preset machines.
    """
    spec = auto_spec.spec
    if len(spec.workloads) != len(spec.machines):
        raise ConfigError(f"{auto_spec.path}: needs one trace workload per machine (zipped)")
    out = []
    for w, m in zip(spec.workloads, spec.machines, strict=True):
        if w.trace is None or m.name is None:
            raise ConfigError(f"{auto_spec.path}: workloads must be traces, machines presets")
        machine = load_machine(m.name, m.overrides or None)
        out.append((m.label or m.name, machine, (auto_spec.spec_dir / w.trace).resolve()))
    return out


def prepare(
    grain_spec: LoadedSpec,
    auto_spec: LoadedSpec,
    *,
    n: int | None = None,
    grain: int | None = None,
    factor: float = 1.0,
    log: Callable[[str], None] | None = print,
) -> list[dict[str, Any]]:
    """Generate the fine trace, profile it once, coarsen and regrain it for every machine.

    Parameters
    ----------
    grain_spec, auto_spec
        The grain sweep (input size and finest grain) and the automatic sweep (machines and
        the regrained traces to write), as returned by ``load_spec``.
    n, grain
        Override the number of keys / the finest grain.
    factor
        The multiplier K of the coarsening rule (1.0: the paper's).
    log
        Called with one line per step (``None``: quiet).

    Returns
    -------
    list of dict
        One per machine: ``machine``, ``l2_bytes``, ``cores``, ``groups`` (table rows),
        ``strands`` (of the regrained trace), ``median_ws_bytes`` of the merged sort tasks
        and the ``grain`` (keys) that working set corresponds to (2 × grain × 4 bytes).
    """
    params = fine_params(grain_spec)
    if n is not None:
        params["n"] = n
    if grain is not None:
        params["grain"] = grain
    targets = auto_targets(auto_spec)
    folder = targets[0][2].parent
    folder.mkdir(parents=True, exist_ok=True)
    fine = folder / "fine.sst"
    generate("mergesort", fine, **params)
    line = targets[0][1].caches[-1].line
    prof = profile_trace(fine, line=line)
    prof.save(folder / "fine.prof")
    if log:
        log(
            f"fine trace: n={params['n']} grain={params['grain']}, "
            f"{prof.groups.n_strands} strands, {len(prof.groups)} groups"
        )
    summary = []
    with open_trace(fine) as t:
        for label, machine, path in targets:
            path.parent.mkdir(parents=True, exist_ok=True)
            r = coarsen(prof, machine, factor=factor)
            write_table(r.rows, path.with_suffix(".csv"))
            h = regrain_from_table(t, path, r.rows)
            sorts = [row["working_set_bytes"] for row in r.rows if row["kind"] == "frame"]
            ws = float(np.median(sorts)) if sorts else 0.0
            row = {
                "machine": label,
                "l2_bytes": machine.caches[-1].size,
                "cores": machine.cores_per_socket,
                "groups": len(r.rows),
                "strands": h.n_strands,
                "median_ws_bytes": ws,
                "grain": int(ws // 8),
            }
            summary.append(row)
            if log:
                # without a merged sort task there is no grain: "0 KB (~ grain 0 keys)"
                # read as a chosen grain of nothing
                grain_words = (
                    f"median working set of the merged sort tasks {ws / 1024:.0f} KB "
                    f"(~ grain {row['grain']} keys)"
                    if sorts
                    else "no sort task among the merged groups: no grain to report"
                )
                log(
                    f"{label}: L2 {row['l2_bytes']} B, {row['cores']} cores: {row['groups']} "
                    f"groups merged, {row['strands']} strands; {grain_words}"
                )
    return summary


def main() -> None:
    """Command line: ``prepare`` on the full or the small pair of specs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--small",
        action="store_true",
        # the notebook's reading: a typo such as SIMSCHED_SMALL=ture is refused, not a full run
        default=small_from_env(),
        help="small.yaml / small-auto.yaml instead of fig6.yaml / auto.yaml",
    )
    ap.add_argument("--n", type=int, default=None, help="keys (default: the spec's)")
    ap.add_argument("--grain", type=int, default=None, help="finest grain (default: the spec's)")
    # read here, not by argparse: a refused value is echoed as written (-K 0, not 0.0)
    ap.add_argument("-K", "--factor", default="1", help="Eq. 3 multiplier")
    args = ap.parse_args()
    try:
        factor = float(args.factor)
    except ValueError:
        usage_error(f"-K {args.factor}: not a number", PROG)
    if not 0 < factor < math.inf:
        # coarsen refuses it too, but only after the trace is generated and profiled
        usage_error(f"-K {args.factor}: the factor is a positive finite number", PROG)
    grain_file, auto_file = SPECS[args.small]
    try:
        # The small pair is small by construction: load both at their own sizes.
        prepare(
            load_spec(HERE / grain_file, small=False),
            load_spec(HERE / auto_file, small=False),
            n=args.n,
            grain=args.grain,
            factor=factor,
        )
    except SimschedError as exc:
        # bad input ends as the simsched CLI's does: one line, status 2 (it was status 1)
        usage_error(f"error: {exc}", PROG)


if __name__ == "__main__":
    run_script(main, PROG)
