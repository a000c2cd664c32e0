"""Saving a figure: the format from its suffix, written atomically, the same bytes each time.

Apart from the drawing because it applies to every figure of the package (the timeline,
allotment and iteration plots, the profile's plots and the studies' scripts save through
:func:`save` too) and deals with files and formats rather than data: the dates, random ids
and temporary names that matplotlib's PDF, SVG, PostScript and PGF writers put in a file,
and the TeX a PGF figure needs.  :mod:`simsched.plotting.figures` re-exports it.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import numbers
import os
from collections.abc import Iterator
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simsched.errors import ConfigError, shown


def figure_format(path: str | Path) -> str:
    """The figure format of ``path`` from its suffix (``png`` when it has none).

    Raises
    ------
    ConfigError
        The suffix is not a format matplotlib writes; the message lists those it does.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    from simsched.files import check_path

    fmt = check_path(path, "path").suffix.lstrip(".").lower() or "png"
    supported = sorted(FigureCanvasBase.get_supported_filetypes())
    if fmt not in supported:
        raise ConfigError(
            f"{path}: unsupported figure format {fmt!r} (use one of {', '.join(supported)})"
        )
    return fmt


#: savefig metadata that leaves out the formats' creation dates
_UNDATED: dict[str, dict[str, None]] = {
    "pdf": {"CreationDate": None},
    "svg": {"Date": None},
}


@contextlib.contextmanager
def _source_date_epoch(value: str) -> Iterator[None]:
    """Set ``SOURCE_DATE_EPOCH`` to ``value`` for the block, then restore it."""
    before = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = before


def check_tex(path: str | os.PathLike) -> None:
    """Refuse a PGF figure at ``path`` when its TeX program is not installed.

    PGF lays text out with TeX (``pgf.texsystem``, xelatex by default): without it
    matplotlib ended in a traceback after the figure was drawn.

    Parameters
    ----------
    path
        The figure file (named in the message).

    Raises
    ------
    ConfigError
        The TeX program is not on ``PATH``.
    """
    import shutil

    tex = plt.rcParams["pgf.texsystem"]
    if shutil.which(tex) is None:
        raise ConfigError(
            f"{path}: a PGF figure needs {tex} (TeX) to lay out its text, and {tex} is not "
            f"installed; install TeX or save as .pdf or .svg"
        )


def _save_pgf(fig: Figure, path: Path, tmp: Path, dots: dict[str, Any]) -> None:
    """Write ``fig`` as PGF into ``tmp``, which becomes ``path``.

    PGF keeps a raster image in a PNG beside the file, named after the file and named so
    inside it: written to the temporary it was ``.<name>.<random>.tmp-img0.png``, left
    behind and referenced by a name that the rename to ``path`` left dangling.  So the
    figure is drawn under its own name in a private folder, its images moved beside
    ``path`` first (each atomically), the PGF last.  PGF takes no metadata at all (even
    None is a TypeError).
    """
    import tempfile

    from simsched.files import atomic_output

    with tempfile.TemporaryDirectory(prefix=".simsched-pgf-", dir=tmp.parent) as d:
        drawn = Path(d) / path.name
        fig.savefig(drawn, format="pgf", **dots)
        for img in sorted(Path(d).glob(f"{glob_escape(path.stem)}-img*.png")):
            with atomic_output(path.with_name(img.name)) as out:
                os.replace(img, out)
        os.replace(drawn, tmp)


#: the largest resolution :func:`save` draws at (a figure of 10^6 dots per inch needs
#: terabytes of memory)
MAX_DPI = 2400


def _check_dpi(dpi: Any) -> float:
    """``dpi`` as a float in ``(0, MAX_DPI]``, else a one-line :class:`ConfigError`."""
    ok = isinstance(dpi, numbers.Real) and not isinstance(dpi, bool)
    if not ok or not 0 < float(dpi) <= MAX_DPI:  # nan fails the comparison too
        raise ConfigError(
            f"dpi={shown(dpi)}: expected a number of dots per inch, more than 0 and at most "
            f"{MAX_DPI} (None: the style's)"
        )
    return float(dpi)


def save(fig: Figure, path: str | os.PathLike, *, dpi: float | None = None) -> Path:
    """Save ``fig`` atomically (:func:`simsched.files.atomic_output`) and close it.

    The format comes from the suffix (see :func:`figure_format`); ``dpi`` is the resolution
    of a raster format (None: the style's).

    Raises
    ------
    ConfigError
        ``fig`` is not a matplotlib figure, ``path`` not a path, ``dpi`` not a number from
        more than 0 to :data:`MAX_DPI`, the suffix is not a figure format, or the format is
        PGF and TeX is not installed.
    """
    from simsched.files import atomic_output, check_path

    if not isinstance(fig, Figure):
        hint = "; pass its .figure" if isinstance(fig, Axes) else ""
        got = "None" if fig is None else type(fig).__name__
        raise ConfigError(f"fig: expected a matplotlib Figure, got {got}{hint}")
    try:
        path = check_path(path, "path")
        dots: dict[str, Any] = {} if dpi is None else {"dpi": _check_dpi(dpi)}
        fmt = figure_format(path)
        if fmt == "pgf" and (fig.axes or fig.texts or fig.legends or fig.images):
            # an image is placed with a TeX command matplotlib asks TeX for
            check_tex(path)
        # a PDF, SVG or PostScript file dated by the clock, with SVG ids salted at random,
        # differed on every save of the same figure
        # every format undated: matplotlib's PDF writer read SOURCE_DATE_EPOCH even so, and
        # a value that is no date ended the save in a traceback
        with (
            atomic_output(path) as tmp,
            plt.rc_context({"svg.hashsalt": "simsched"}),
            _source_date_epoch("0"),
        ):
            if fmt == "svgz":
                # matplotlib's gzip stream carries the clock's time and the temporary's name
                buf = io.BytesIO()
                fig.savefig(buf, format="svg", metadata=_UNDATED["svg"], **dots)
                tmp.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
            elif fmt in ("ps", "eps"):
                # PostScript takes no date from metadata, only from SOURCE_DATE_EPOCH (0, set
                # above), and
                # titles a file it is given by name with that name (here the temporary's)
                buf = io.BytesIO()
                fig.savefig(buf, format=fmt, **dots)
                tmp.write_bytes(buf.getvalue())
            elif fmt == "pgf":
                _save_pgf(fig, path, tmp, dots)
            else:
                undated: dict[str, Any] = {"metadata": _UNDATED[fmt]} if fmt in _UNDATED else {}
                fig.savefig(tmp, format=fmt, **dots, **undated)
    finally:
        plt.close(fig)
    return path
