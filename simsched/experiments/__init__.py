"""Sweeps: YAML specs expanded into points, run locally or on Dask, stored as Parquet.

Public API::

    from simsched.experiments import load_spec, run_sweep, sweep_status, load_results

    loaded = load_spec("experiments/pdf_vs_ws/small.yaml")
    report = run_sweep(loaded, executor="local", workers=2)
    df = load_results(loaded.out_dir)

See ``docs/sweeps.md``.
"""

from simsched.experiments.point import execute_point, simulate_point
from simsched.experiments.runner import SweepReport, run_sweep, sweep_status
from simsched.experiments.schema import SweepSpec
from simsched.experiments.spec import LoadedSpec, Point, expand, load_spec
from simsched.experiments.store import (
    export_results,
    filter_frame,
    load_ok_results,
    load_results,
    study_results,
)

__all__ = [
    "LoadedSpec",
    "Point",
    "SweepReport",
    "SweepSpec",
    "execute_point",
    "expand",
    "export_results",
    "filter_frame",
    "load_ok_results",
    "load_results",
    "load_spec",
    "run_sweep",
    "simulate_point",
    "study_results",
    "sweep_status",
]
