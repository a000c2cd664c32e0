"""What one Cilk rewrite holds and how a construct's rewrite records its edits.

The options a rewrite follows (:class:`CilkOptions`), the edits and the problems it
collects, and the helpers every construct's rewrite goes through to read a syntax
node, replace or insert text (keeping every line in place) and report a problem
at ``file:line:column``.  Apart so that the rewrites of loops
(:mod:`simsched.capture._cilk_for`), of whole functions
(:mod:`simsched.capture._cilk_functions`) and of the statements
(:mod:`simsched.capture.cilk`) each stand in a module of their own on one shared
state: ``_Rewriter`` is those three classes over :class:`_RewriterBase`.
:class:`CilkOptions` is importable from :mod:`simsched.capture.cilk`.
"""

from __future__ import annotations

import bisect
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simsched.capture._cilk_source import _pad, _Unit
from simsched.errors import CaptureError, shown, spelled

if TYPE_CHECKING:
    from tree_sitter import Node

SPLITS = ("opencilk", "binary")
_LLONG_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class CilkOptions:
    """How ``cilk_for`` loops are split.

    Attributes
    ----------
    grain
        Iterations per leaf for loops without ``#pragma cilk grainsize``; ``None`` for
        OpenCilk's default ``min(2048, n / (8 * workers))``.
    workers
        The worker count of OpenCilk's default grain formula.
    split
        ``"opencilk"``: spawn the lower half and keep the upper half in the same frame
        (OpenCilk's and Cilk Plus's runtimes); ``"binary"``: spawn both halves.
    """

    grain: int | None = None
    workers: int = 1
    split: str = "opencilk"

    def __post_init__(self) -> None:
        if self.grain is not None:
            _check_count("grain", self.grain, "--cilk-for-grain")
        _check_count("workers", self.workers, "--cilk-workers")
        if self.split not in SPLITS:
            given = spelled(f"split={self.split!r}", f"--cilk-for-split {self.split}")
            raise CaptureError(f"{given}: choose one of {', '.join(SPLITS)}")


def _check_count(name: str, value: Any, flag: str) -> None:
    """Refuse a :class:`CilkOptions` count that is not an integer in ``[1, 2^63 - 1]``."""
    # both counts are written into the program as long long constants: a larger one did
    # not fit, and gcc only warned and truncated it; "8" or 2.5 failed in a comparison
    try:
        if isinstance(value, bool):
            raise TypeError
        operator.index(value)
    except TypeError:
        raise CaptureError(f"{name}={shown(value)}: expected an integer") from None
    if not 1 <= value <= _LLONG_MAX:
        given = spelled(f"{name}={value}", f"{flag} {value}")
        raise CaptureError(f"{given}: must be a positive integer up to 2^63 - 1")


@dataclass
class _Edit:
    start: int
    end: int
    text: bytes
    order: int = 0  # among insertions at one offset, inner constructs (larger order) first


class _RewriterBase:
    """The state of one rewrite and the helpers that read nodes and record edits."""

    def __init__(self, src: bytes, name: str, options: CilkOptions) -> None:
        self.u = _Unit(src, name)
        self.src = src
        self.opt = options
        self.edits: list[_Edit] = []
        self.problems: list[tuple[int, str]] = []
        self.pragmas: dict[int, tuple[int, bytes]] = {}  # row -> (offset, grain expression)
        self.used_pragmas: set[int] = set()
        # function start -> (its definition, the spawn offsets in it)
        self.spawns_in: dict[int, tuple[Node, list[int]]] = {}
        self.loop_id = 0
        # function start -> definition, for every function that spawns, loops or scopes
        self.cilk_fns: dict[int, Node] = {}
        self.offsets: list[int] = []  # of every keyword token, in order
        self.kinds: dict[int, str] = {}  # offset -> construct
        self.tokens: dict[int, bytes] = {}  # offset -> spelling

    # -- helpers ---------------------------------------------------------------------------
    def text(self, node: Node) -> bytes:
        return self.src[node.start_byte : node.end_byte]

    def field(self, node: Node, name: str) -> Node:
        """A child the C grammar requires (an absent one means a parse it cannot rewrite)."""
        child = node.child_by_field_name(name)
        if child is None:
            raise CaptureError(
                f"{self.u.where(node.start_byte)}: cannot rewrite a {node.type} without its {name}"
            )
        return child

    def parent(self, node: Node) -> Node:
        """The parent of a node below the root (every node a construct is rewritten from)."""
        if node.parent is None:
            raise CaptureError(f"{self.u.where(node.start_byte)}: {node.type} outside a unit")
        return node.parent

    def fail(self, offset: int, construct: str, why: str, token: bytes | None = None) -> None:
        if token is None:
            token = self.tokens.get(offset, construct.encode())
        where = self.u.where(offset, token)
        self.problems.append((offset, f"{where}: {construct}: {why}"))

    def replace(self, node_or_span: Node | tuple[int, int], text: bytes, order: int = 0) -> None:
        start, end = (
            node_or_span
            if isinstance(node_or_span, tuple)
            else (node_or_span.start_byte, node_or_span.end_byte)
        )
        self.edits.append(_Edit(start, end, text + _pad(self.src[start:end]), order))

    def insert(self, offset: int, text: bytes, order: int) -> None:
        self.edits.append(_Edit(offset, offset, text, order))

    def _in(self, node: Node, offsets: list[int] | None = None) -> list[int]:
        offs = self.offsets if offsets is None else offsets
        lo = bisect.bisect_left(offs, node.start_byte)
        hi = bisect.bisect_left(offs, node.end_byte)
        return offs[lo:hi]
