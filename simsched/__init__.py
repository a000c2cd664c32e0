"""simsched: a trace-driven CMP/NUMA task-scheduling simulator."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("simsched")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["JobsResult", "RunResult", "__version__", "compare", "run", "run_jobs"]


def __getattr__(name: str):
    # ``simsched.run`` / ``simsched.compare`` (simsched.api), imported on first use so that
    # ``import simsched`` stays light and free of import cycles.
    if name in ("run", "compare", "run_jobs", "RunResult", "JobsResult"):
        from simsched import api

        return getattr(api, name)
    raise AttributeError(f"module 'simsched' has no attribute {name!r}")
