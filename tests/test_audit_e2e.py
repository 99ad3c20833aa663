"""The end-to-end audit (dipsy.privacy.e2e): the real release path stays within its claim for every
registered method, and the audit catches a deliberately broken variant (half the noise or half the
prior, the statement unchanged) — its power test.

Runs are seeded (seed + run), so each bound here is a fixed number: a test that passes once passes
always. The bounds hold with confidence 95 % (Clopper–Pearson at α/2 on each side); the honest runs
use fewer releases than the broken ones, which need the power.
"""

from __future__ import annotations

import math

import pytest

from dipsy.methods import REGISTRY
from dipsy.privacy.e2e import CASES, NOT_AUDITED, audit, format_table, lower_bound

HONEST_RUNS = {"privsyn": 200, "dpsyn": 100, "mst": 200}
#: Methods whose broken variant the audit must flag, and the runs it needs (measured: benchmarks/audit.py).
BROKEN = {"dirichlet-multinomial": 2000, "dp-prior": 2000, "laplace-sanitizer": 1000, "smoothed-histogram": 2000,
          "perturbed-histogram": 1000, "rdt": 600}


def test_every_registered_method_has_a_worst_case():
    assert set(CASES) | set(NOT_AUDITED) == set(REGISTRY) and not set(CASES) & set(NOT_AUDITED)
    # only a local guarantee may go unaudited: every DP method has its worst case
    assert {REGISTRY[m].definition for m in NOT_AUDITED} == {"local"}


@pytest.mark.parametrize("method", sorted(CASES))
def test_the_release_path_stays_within_its_claim(method):
    result = audit(method, runs=HONEST_RUNS.get(method, 400))
    assert result.claimed_epsilon > 0 and not result.broken
    assert not result.flagged, format_table([result])


@pytest.mark.parametrize("method", sorted(BROKEN))
def test_the_audit_flags_half_the_noise(method):
    result = audit(method, runs=BROKEN[method], broken=True)
    assert result.flagged, format_table([result])
    assert result.lower_bound > result.claimed_epsilon


def test_clopper_pearson_bounds():
    assert lower_bound(0, 0, 100) == -math.inf  # an event never seen proves nothing
    assert lower_bound(100, 0, 100) == pytest.approx(math.log(0.9637833 / 0.0362167), rel=1e-5)
    assert lower_bound(60, 40, 100, delta=0.6) == -math.inf  # δ swallows the difference
