"""The shares and noise figures the forecast's parts share (:mod:`dipsy.forecast`,
:mod:`dipsy.forecast_marginals`): the verdict thresholds and the spurious records noise adds."""

from __future__ import annotations

import math
from typing import Any

from .privacy.measurement import DiscreteLaplace, Laplace

#: A part is "noise" when prior or noise makes at least this share of it: the data decide less
#: than a tenth of what the synthetic records look like (``synth`` refuses it by default).
SHARE_NOISE = 0.9
#: … and "weak" from this share: nearly one synthetic record in three is prior or noise.
SHARE_WEAK = 0.3


def noise_ratio(share: float) -> str:
    """``share`` as 'prior : data' in whole percent, e.g. '97 : 3'."""
    a = min(100, max(0, round(100 * share)))
    if a in (0, 100) and 0 < share < 1:  # say 99.8 : 0.2, not 100 : 0, while the other side is not nil
        tenths = round(100 * share, 1)
        return f"{tenths:g} : {round(100 - tenths, 1):g}"
    return f"{a} : {100 - a}"


def positive_noise(mech: Any) -> float:
    """E[max(e, 0)]: the spurious records an empty cell gains once negatives are set to 0.

    Discrete Laplace, P(z) ∝ p^|z| with p = e^(−1/scale): Σ_{z≥1} z P(z) = p / (1 − p²).
    Laplace (continuous) of scale b: b/2. Discrete Gaussian: summed over |z| ≤ 40σ + 10.
    """
    if isinstance(mech, DiscreteLaplace):
        return discrete_laplace_positive(mech.scale)
    if isinstance(mech, Laplace):
        return float(mech.scale) / 2
    s2 = float(mech.sigma2)
    top = int(40 * math.sqrt(s2)) + 10
    w = [math.exp(-z * z / (2 * s2)) for z in range(top + 1)]
    total = w[0] + 2 * sum(w[1:])
    return sum(z * w[z] for z in range(1, top + 1)) / total


def discrete_laplace_positive(scale: Any) -> float:
    """E[max(Z, 0)] for the discrete Laplace of ``scale``: p/(1 − p²), p = e^(−1/scale)."""
    p = math.exp(-1 / float(scale))
    return p / (1 - p * p)


__all__ = ["SHARE_NOISE", "SHARE_WEAK", "discrete_laplace_positive", "noise_ratio", "positive_noise"]
