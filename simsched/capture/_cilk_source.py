"""What the Cilk rewriter reads: the keywords, the C parser and a preprocessed unit's lines.

Apart from the rewriting because none of it understands a construct: it finds the
keyword tokens (with the same-length stand-ins that let the C grammar parse them,
:mod:`simsched.capture.cilk` tells why) and the names of reducers, parses C with
tree-sitter, and maps a byte offset of the unit back to ``file:line:column`` in the
user's own file through the preprocessor's line markers.  The same words serve
:func:`~simsched.capture.cilk.find_keyword` on sources before preprocessing, and
``simsched cc --show-rewrite`` reads the line markers (``LINE_MARKER``).  The public
names are importable from :mod:`simsched.capture.cilk`.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Parser, Tree

SPAWN, SYNC, FOR, SCOPE = "cilk_spawn", "cilk_sync", "cilk_for", "cilk_scope"
_KEYWORDS = {
    b"cilk_spawn": SPAWN,
    b"_Cilk_spawn": SPAWN,
    b"cilk_sync": SYNC,
    b"_Cilk_sync": SYNC,
    b"cilk_for": FOR,
    b"_Cilk_for": FOR,
    b"cilk_scope": SCOPE,
    b"_Cilk_scope": SCOPE,
}
# Same-length C stand-ins the grammar parses (cilk_sync is an identifier already).
_STANDIN = {SPAWN: b"!", FOR: b"for", SCOPE: b"if (1)"}
_REDUCER = re.compile(
    rb"cilk_reducer|_Cilk_reducer|REDUCER_VIEW|CILK_C_\w*(?:REDUCER|MONOID)\w*"
    rb"|__cilkrts_hyper\w*|__cilkrts_reducer\w*"
)
_CILK_WORDS = re.compile(
    rb"\b(?:_Cilk_(?:spawn|sync|for|scope|reducer)|cilk_(?:spawn|sync|for|scope|reducer)"
    rb"|REDUCER_VIEW|CILK_C_\w*(?:REDUCER|MONOID)\w*|__cilkrts_hyper\w*|__cilkrts_reducer\w*)\b"
)
_TOKEN = re.compile(rb'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_][A-Za-z0-9_]*')
LINE_MARKER = re.compile(rb'#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"')
_GRAINSIZE = re.compile(rb"#\s*pragma\s+cilk\s+grainsize\b\s*=?\s*(.*?)\s*$")
_LOOPS = {"for_statement", "while_statement", "do_statement"}


def mentions_cilk(text: bytes) -> bool:
    """Tell quickly whether preprocessed C text may use Cilk (a filter before parsing).

    Parameters
    ----------
    text
        A translation unit, preprocessed.

    Returns
    -------
    bool
        True if a Cilk keyword or reducer name occurs anywhere (even in a string).
    """
    return _CILK_WORDS.search(text) is not None


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_c
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_c.language()))


def parse_c(text: bytes) -> Tree:
    """Parse C text with tree-sitter's C grammar and return the tree."""
    return _parser().parse(text)


class _Unit:
    """A preprocessed translation unit: its lines, line markers and original files."""

    def __init__(self, src: bytes, name: str) -> None:
        self.src = src
        self.name = name
        self.starts = [0] + [m.end() for m in re.finditer(rb"\n", src)]
        self.marks: list[tuple[int, str, int]] = []  # (row of marker, file, next line)
        for row, s in enumerate(self.starts):
            if src.startswith(b"#", s):
                m = LINE_MARKER.match(src, s)
                if m:
                    path = m.group(2).decode("utf-8", "replace").replace('\\"', '"')
                    self.marks.append((row, path, int(m.group(1))))
        self._mark_rows = [r for r, _, _ in self.marks]

    def row_col(self, offset: int) -> tuple[int, int]:
        row = bisect.bisect_right(self.starts, offset) - 1
        return row, offset - self.starts[row]

    def line(self, row: int) -> bytes:
        end = self.starts[row + 1] - 1 if row + 1 < len(self.starts) else len(self.src)
        return self.src[self.starts[row] : end]

    def where(self, offset: int, token: bytes = b"") -> str:
        """``file:line:column`` of a byte offset, in the user's file."""
        row, col = self.row_col(offset)
        i = bisect.bisect_right(self._mark_rows, row - 1) - 1
        if i < 0:
            return f"{self.name}:{row + 1}:{col + 1}"
        mrow, path, first = self.marks[i]
        line = first + row - mrow - 1
        return f"{path}:{line}:{_original_column(path, line, self.line(row), col, token) + 1}"


def _original_column(path: str, line: int, pre: bytes, col: int, token: bytes) -> int:
    """The token's column in the file's own line (macro expansion may have moved it)."""
    try:
        with open(path, "rb") as f:
            for _ in range(line - 1):
                f.readline()
            orig = f.readline().rstrip(b"\r\n")
    except OSError:
        return col
    if orig == pre or not token:
        return col
    nth = pre[:col].count(token)
    pos = -1
    for _ in range(nth + 1):
        pos = orig.find(token, pos + 1)
        if pos < 0:
            return col
    return pos


def _flat(text: bytes) -> bytes:
    """One line of C from a span of preprocessed text (line markers dropped)."""
    return b" ".join(ln for ln in text.split(b"\n") if not ln.lstrip().startswith(b"#"))


def _pad(removed: bytes) -> bytes:
    """The newlines (and line markers) of a replaced span, so no line moves."""
    lines = removed.split(b"\n")[1:]
    return b"".join(b"\n" + (ln if ln.lstrip().startswith(b"#") else b"") for ln in lines)
