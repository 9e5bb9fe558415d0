"""The Pantheon's 1-sigma throughput-delay ellipse (reference/pantheon-and-mahimahi.md §1.8, the
`ellipsemaker` of its calibrated-emulators comparison).

Computed in log space: the points are (log p95 delay, log throughput), one per run; the centre
is their mean, the axes are the eigenvectors of their 2x2 sample covariance (n - 1) and the radii
the square roots of its eigenvalues. The outline is mapped back with exp, so on log axes it is an
ellipse, and its centre is the geometric mean of the runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass
class LogEllipse:
    #: Geometric means of the runs' delays (ms) and throughputs (Mbit/s).
    centre_delay: float
    centre_throughput: float
    #: Outline points, back in linear units.
    delay: np.ndarray
    throughput: np.ndarray


def one_sigma_ellipse(
    delay_ms: npt.ArrayLike, throughput_mbps: npt.ArrayLike, points: int = 181
) -> LogEllipse | None:
    """The ellipse of the runs, or None when it is undefined: fewer than two runs, or a
    non-positive value (no log)."""
    x = np.asarray(delay_ms, dtype=float)
    y = np.asarray(throughput_mbps, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 2 or np.any(x <= 0) or np.any(y <= 0):
        return None
    logs = np.column_stack([np.log(x), np.log(y)])
    centre = logs.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov(logs, rowvar=False))
    radii = np.sqrt(np.clip(values, 0.0, None))
    angle = np.linspace(0.0, 2.0 * np.pi, points)
    unit = np.vstack([np.cos(angle), np.sin(angle)])
    outline = centre[:, None] + vectors @ (radii[:, None] * unit)
    return LogEllipse(
        centre_delay=float(np.exp(centre[0])),
        centre_throughput=float(np.exp(centre[1])),
        delay=np.exp(outline[0]),
        throughput=np.exp(outline[1]),
    )
