"""Traces: format v1, writer, reader, validation and raw-stream import (docs/architecture.md §4.1)."""

from simsched.trace.analysis import span, summary, validate
from simsched.trace.builder import TraceBuilder
from simsched.trace.events import copy, events
from simsched.trace.format import (
    EDGE_CONT,
    EDGE_JOIN,
    EDGE_SPAWN,
    RefChunk,
    TraceHeader,
)
from simsched.trace.raw import import_raw
from simsched.trace.reader import Trace, load_trace, open_trace

__all__ = [
    "EDGE_CONT",
    "EDGE_JOIN",
    "EDGE_SPAWN",
    "RefChunk",
    "Trace",
    "TraceBuilder",
    "TraceHeader",
    "copy",
    "events",
    "import_raw",
    "load_trace",
    "open_trace",
    "span",
    "summary",
    "validate",
]
