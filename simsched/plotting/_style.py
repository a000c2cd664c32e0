"""simsched's packaged matplotlib style, and text that matplotlib draws as it is.

Every figure module of the package draws inside :func:`style` and labels with
:func:`literal` (the timeline, allotment and iteration plots as well as the figures of a
results table), so these live apart from the results-table figures; they need neither
pandas nor the checks of a table.  :mod:`simsched.plotting.figures` re-exports them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt

from simsched.errors import utf8_text


def literal(text: object) -> str:
    """``text`` as a string matplotlib draws as it is.

    Matplotlib reads text between two ``$`` as mathtext and fails on what does not parse
    (``$$``, ``p$\\frac{$``); titles, labels and legend entries made from user data (trace
    and job names, column values, ``--title``) escape every ``$`` instead.  (The style
    file's ``text.parse_math: False`` would also turn off the mathtext of log-axis tick
    labels.)

    Matplotlib cannot draw a lone surrogate either (a byte that is not UTF-8 in ``--title``,
    a ``\\udcff`` in a record's JSON): it is written out (:func:`simsched.errors.utf8_text`).

    Parameters
    ----------
    text
        Any value; it is converted with ``str``.

    Returns
    -------
    str
        The text with each ``$`` as ``\\$``.
    """
    return utf8_text(str(text)).replace("$", r"\$")


def style_path() -> Path:
    """Path of the packaged matplotlib style file (``simsched.mplstyle``)."""
    return Path(str(resources.files("simsched.plotting") / "simsched.mplstyle"))


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Context manager applying simsched's style to figures made inside it.

    Only the style's parameters are undone at the end.  Leaving the context restores every
    rc parameter, ``interactive`` among them, and a notebook's inline backend, set up when
    the first figure is made (inside the context, if the first figure is one of ours),
    turns ``interactive`` on: undone, no later figure of the kernel was displayed.
    """
    interactive = mpl.is_interactive()
    try:
        with plt.style.context(str(style_path())):
            try:
                yield
            finally:
                interactive = mpl.is_interactive()
    finally:
        mpl.interactive(interactive)


def use_style() -> None:
    """Apply simsched's style globally (for notebooks)."""
    plt.style.use(str(style_path()))
