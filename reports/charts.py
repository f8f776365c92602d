"""Charts for the report, drawn with matplotlib's object API (no pyplot, no GUI backend) as inline SVG.

Output is deterministic: a fixed ``svg.hashsalt`` for element ids and no date in the metadata, so the
same frame gives the same SVG string byte for byte.
"""

from __future__ import annotations

import io

import matplotlib
import numpy as np
from matplotlib.figure import Figure

EFFICIENCY_COLUMNS = ("cpu_eff", "mem_eff", "time_eff")
PANEL_TITLES = {"cpu_eff": "CPU efficiency", "mem_eff": "Memory efficiency", "time_eff": "Time efficiency"}
BIN_EDGES = np.linspace(0.0, 1.0, 11)
SVG_RC = {
    "svg.hashsalt": "reclaim-report",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 8.0,
}
BAR_COLOUR = "#3b6ea5"
OVERFLOW_COLOUR = "#c0504d"
OVERFLOW_LEFT = 1.25  # the overflow bar sits apart from the [0, 1] bins


def _values(efficiency, column: str) -> np.ndarray:
    if column not in efficiency.columns:
        raise ValueError(f"efficiency frame: missing column {column!r}")
    values = efficiency[column].to_numpy(dtype="float64", na_value=np.nan)
    bad = values < 0
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"efficiency frame: column {column!r} has a negative value {values[first]!r} "
                         f"at row {efficiency.index[first]!r}; efficiencies are 0 or more")
    return values


def efficiency_histogram(values: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Counts in ten bins over [0, 1] (1.0 falls in the last), the count above 1 (overflow, including ∞)
    and the count unknown (NaN)."""
    unknown = np.isnan(values)
    known = values[~unknown]
    over = known > 1.0
    counts, _ = np.histogram(known[~over], bins=BIN_EDGES)
    return counts, int(over.sum()), int(unknown.sum())


def efficiency_counts(efficiency) -> dict[str, dict[str, int]]:
    """Per efficiency column: jobs with a value (``known``), without (``unknown``), and above 1 (``overflow``)."""
    out = {}
    for col in EFFICIENCY_COLUMNS:
        values = _values(efficiency, col)
        _, overflow, unknown = efficiency_histogram(values)
        out[col] = {"known": int(values.size - unknown), "unknown": unknown, "overflow": overflow}
    return out


def _draw_panel(ax, column: str, values: np.ndarray) -> None:
    counts, overflow, unknown = efficiency_histogram(values)
    lefts = BIN_EDGES[:-1]
    ax.bar(lefts, counts, width=0.1, align="edge", color=BAR_COLOUR, edgecolor="white", linewidth=0.5)
    ax.bar([OVERFLOW_LEFT], [overflow], width=0.1, align="edge", color=OVERFLOW_COLOUR, edgecolor="white",
           linewidth=0.5)
    ax.set_xlim(0.0, OVERFLOW_LEFT + 0.12)
    ax.set_xticks([0.0, 0.5, 1.0, OVERFLOW_LEFT + 0.05], ["0%", "50%", "100%", ">100%"])
    ax.set_title(PANEL_TITLES[column], fontsize=9)
    ax.set_xlabel(f"{values.size - unknown:,} known, {unknown:,} unknown", fontsize=7.5)
    ax.spines[["top", "right"]].set_visible(False)
    ax.yaxis.get_major_locator().set_params(integer=True)
    if values.size == unknown:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="#777777")
        ax.set_ylim(0, 1)
        ax.set_yticks([])


def _strip_prolog(svg: str) -> str:
    """Drop the XML declaration and DOCTYPE so the SVG can sit inline in HTML."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def efficiency_chart(efficiency) -> str:
    """Histograms of per-job CPU, memory and time efficiency side by side, as an inline ``<svg>`` string.

    ``efficiency`` holds columns ``cpu_eff``, ``mem_eff``, ``time_eff`` (ratios 0…∞, NaN = unknown).
    Values above 1 go to a separate overflow bar; each panel states how many jobs are known and unknown.
    """
    columns = {col: _values(efficiency, col) for col in EFFICIENCY_COLUMNS}
    with matplotlib.rc_context(SVG_RC):
        fig = Figure(figsize=(7.0, 2.4))
        axes = fig.subplots(1, len(EFFICIENCY_COLUMNS), sharey=False)
        for ax, (col, values) in zip(axes, columns.items(), strict=True):
            _draw_panel(ax, col, values)
        axes[0].set_ylabel("jobs")
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return _strip_prolog(buf.getvalue())
