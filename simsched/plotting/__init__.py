"""Figures of simsched results in a packaged matplotlib style.

``simsched.plotting.figures`` draws the standard figures from a results table (speedup
against cores by scheduler, misses per 1000 instructions by configuration, normalised
execution-time bars, the PDF paper's Figs. 2 and 3); the per-core timeline of one run is in
``simsched.plotting.timeline``.  ``style()`` / ``use_style()`` apply ``simsched.mplstyle``.
"""

from simsched.plotting.figures import (
    aggregate,
    bar_plot,
    figure_format,
    figure_speedup_misses,
    figure_time_vs_cores,
    line_plot,
    mpki_by_config,
    normalised_time,
    normalised_time_bars,
    save,
    speedup_vs_cores,
    style,
    style_path,
    sweep_figure,
    use_style,
)

__all__ = [
    "aggregate",
    "bar_plot",
    "figure_speedup_misses",
    "figure_format",
    "figure_time_vs_cores",
    "line_plot",
    "mpki_by_config",
    "normalised_time",
    "normalised_time_bars",
    "save",
    "speedup_vs_cores",
    "style",
    "style_path",
    "sweep_figure",
    "use_style",
]
