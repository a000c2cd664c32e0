"""Figures of a working-set profile: working set against group depth, and the miss-ratio curve.

The left panel shows what coarsening ([PDF07] §6.2) looks at: the
working set (footprint) of every task group against its depth in the group tree, with the
median per depth; the right panel the whole program's miss ratio against cache size
(fully associative LRU from a cold cache, from the same one-pass profile).  Drawn in
simsched's packaged matplotlib style and saved atomically.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from simsched.profile.result import Profile

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def profile_figure(p: Profile) -> Figure:
    """Draw the two panels of a profile.

    Parameters
    ----------
    p
        A profile from :func:`simsched.profile.profile_trace` or :meth:`Profile.load`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from simsched.plotting import style

    with style():
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        g = p.groups
        ws = p.working_set_bytes.astype(float)
        depth = g.depth
        keep = ws > 0
        rng = np.random.default_rng(0)  # fixed jitter: the figure is deterministic
        jitter = rng.uniform(-0.25, 0.25, len(depth))
        ax1.scatter(depth[keep] + jitter[keep], ws[keep], s=4, alpha=0.3, label="task group")
        ds = np.unique(depth[keep])
        med = [np.median(ws[keep & (depth == d)]) for d in ds]
        ax1.plot(ds, med, color="black", marker="o", ms=3, label="median")
        ax1.set_yscale("log", base=2)
        ax1.set_xlabel("group depth")
        ax1.set_ylabel("working set (bytes)")
        ax1.set_title("Working set of task groups")
        ax1.legend(loc="upper right")
        acc = float(p.accesses[0]) or 1.0
        ax2.plot(p.sizes, p.misses[0] / acc, marker="o")
        ax2.set_xscale("log", base=2)
        ax2.set_xlabel("cache size (bytes)")
        ax2.set_ylabel("miss ratio")
        ax2.set_ylim(bottom=0)
        ax2.set_title(f"Whole program, LRU, {p.line}-byte lines")
        fig.suptitle(f"{p.meta.get('program') or p.meta['trace']}: {len(g)} task groups")
        fig.tight_layout()
    return fig


def plot_profile(p: Profile, path: str | os.PathLike) -> None:
    """Draw :func:`profile_figure` and save it to ``path`` (format from the suffix)."""
    from simsched.plotting import save

    save(profile_figure(p), path)
