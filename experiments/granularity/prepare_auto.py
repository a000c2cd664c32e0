"""Make the automatically coarsened mergesort traces of auto.yaml (PDF paper §6, Fig. 8).

    python experiments/granularity/prepare_auto.py [--small] [--n N] [--grain G] [-K F]

Generates mergesort at the finest grain of fig6.yaml, profiles it once with LruTree
(§6.1; line size of the machines' L2), and for each machine of auto.yaml chooses the task
groups with the coarsening rule W <= K × cache/(cores × 2) (§6.2), writes the
parallelization table and regrains the fine trace into ``results/auto-traces/<machine>.sst``
(every chosen group one strand).  ``--small`` (or SIMSCHED_SMALL=1) uses fig6.yaml's small
input size.  Prints one line per machine: the tasks the coarse program has and the grain
(keys per leaf task) the table corresponds to.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import yaml

from simsched.machine import load_machine
from simsched.profile import coarsen, profile_trace, regrain_from_table, write_table
from simsched.trace import open_trace
from simsched.workloads import generate

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", default=os.environ.get("SIMSCHED_SMALL") == "1")
    ap.add_argument("--n", type=int, default=None, help="keys (default: fig6.yaml's)")
    ap.add_argument("--grain", type=int, default=None, help="finest grain (default: fig6's)")
    ap.add_argument("-K", "--factor", type=float, default=1.0, help="Eq. 3 multiplier")
    args = ap.parse_args()
    fig6 = yaml.safe_load((HERE / "fig6.yaml").read_text())
    wl = fig6["workloads"][0]
    n = args.n or (wl["small"]["n"] if args.small else wl["params"]["n"])
    grain = args.grain or min(wl["grid"]["grain"])
    auto = yaml.safe_load((HERE / "auto.yaml").read_text())
    out = HERE / "results" / "auto-traces"
    out.mkdir(parents=True, exist_ok=True)
    fine = out / "fine.sst"
    generate("mergesort", fine, n=n, grain=grain)
    machines = [load_machine(m["name"], m.get("overrides")) for m in auto["machines"]]
    line = machines[0].caches[-1].line
    p = profile_trace(fine, line=line)
    p.save(out / "fine.prof")
    print(f"fine trace: n={n} grain={grain}, {p.groups.n_strands} strands, {len(p.groups)} groups")
    with open_trace(fine) as t:
        for spec, m in zip(auto["machines"], machines, strict=True):
            r = coarsen(p, m, factor=args.factor)
            write_table(r.rows, out / f"{spec['name']}.csv")
            h = regrain_from_table(t, out / f"{spec['name']}.sst", r.rows)
            sorts = [row for row in r.rows if row["kind"] == "frame"]
            ws = np.median([row["working_set_bytes"] for row in sorts]) if sorts else 0
            print(
                f"{spec['name']}: L2 {m.caches[-1].size} B, {m.cores_per_socket} cores: "
                f"{len(r.rows)} groups merged, {h.n_strands} strands; median working set of "
                f"the merged sort tasks {ws / 1024:.0f} KB (~ grain {int(ws // 8)} keys)"
            )


if __name__ == "__main__":
    main()
