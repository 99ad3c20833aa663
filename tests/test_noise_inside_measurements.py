"""No method draws noise outside a charged measurement (every method in the registry).

During a real release (:func:`dipsy.synthesize`) every source of privacy noise is instrumented:
the exact samplers' uniform integers (:meth:`Randomness.below`, which every exact discrete Laplace,
discrete Gaussian and exponential-mechanism draw consumes) and the floating-point Laplace and
Gaussian samplers, wherever a dipsy module imported them. Each call records the measurement that
is running (:data:`dipsy.privacy.measurement.ACTIVE`). The test asserts that every call happened
inside a measurement, and that every such measurement is one the release's statement lists as
charged. A posterior draw (Dirichlet-multinomial, DP-prior, gamma-Poisson) is noise drawn from
``rand.numpy`` inside its measurement; the exact counts it needs exist nowhere else (models hold
only measured outputs, and methods never see the engine: tests/test_charge_before_read.py).
Post-processing (records from counts, GUM, decoding inside bins) draws only from
``rand.numpy``'s sampling methods, which carry no privacy.
"""

from __future__ import annotations

import sys

import pytest
from test_charge_before_read import METHODS, invocation

import dipsy
from dipsy.privacy import samplers
from dipsy.privacy.measurement import ACTIVE
from dipsy.privacy.rng import Randomness

NOISE = ("laplace", "gaussian")


@pytest.fixture
def calls(monkeypatch):
    seen: list = []
    real_below = Randomness.below

    def below(self, *args, **kwargs):
        seen.append(ACTIVE.get())
        return real_below(self, *args, **kwargs)

    monkeypatch.setattr(Randomness, "below", below)
    for name in NOISE:
        real = getattr(samplers, name)

        def wrapped(*args, _real=real, **kwargs):
            seen.append(ACTIVE.get())
            return _real(*args, **kwargs)

        for module in [m for n, m in sys.modules.items() if n.startswith("dipsy") and m is not None]:
            if getattr(module, name, None) is real:
                monkeypatch.setattr(module, name, wrapped)
    return seen


@pytest.mark.parametrize("method", METHODS)
def test_every_noise_draw_belongs_to_a_charged_measurement(method, calls, tmp_path):
    data, domain, kwargs = invocation(method, tmp_path, "numpy")
    release = dipsy.synthesize(data, domain, method=method, accept_noise=True, **kwargs)  # unseeded: the production path
    noisy = [
        m for m in release.statement.measurements if not m["noise"]["distribution"].startswith("none")
    ]  # not declared public
    floating = all(not m["noise"]["exact_sampler"] for m in noisy)
    assert calls or floating, "the instrumentation saw no noise at all"  # a posterior draw uses rand.numpy only
    assert None not in calls, f"{calls.count(None)} noise draw(s) outside any measurement"
    charged = {m["label"] for m in release.statement.measurements}
    assert {m.label for m in calls} <= charged
