"""simsched: a trace-driven CMP/NUMA task-scheduling simulator."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("simsched")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
