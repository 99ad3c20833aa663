"""A synthesizer in the shape notebook users know (SDV, SmartNoise Synth, synthcity): configure,
``fit`` once, ``sample``.

``fit`` is the one privacy charge: it runs :func:`dipsy.synthesize`, which plans, forecasts and
charges before anything is measured, and draws every set the budget pays for (``sets``; each costs
its share under sequential composition). ``sample`` hands those sets out, one per call, and refuses
past the last: another set would be another charge, so it takes another ``fit``. Nothing is drawn
that was not charged, and nothing the release's statement does not cover.

The spend is recorded in the same default ledger as the command line's (``$DIPSY_LEDGER`` or the
user's data folder) unless ``ledger=False`` opts out; a release drawn with no ledger says so in
``release.json`` (``request.recorded_in_ledger``).

>>> s = Synthesizer("dirichlet-multinomial", epsilon=5.0, sets=2, seed=1, columns=["Race"], ledger=False)
>>> s.sample()
Traceback (most recent call last):
...
dipsy.errors.DipsyError: nothing is fitted yet: no set has been charged or drawn; call fit(data, domain) first
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pandas as pd

from .api import synthesize
from .domain import Domain
from .errors import DipsyError
from .privacy import Ledger
from .release import Release


class Synthesizer:
    """``Synthesizer(method, epsilon=…, sets=…, …)``: :meth:`fit` charges and draws, :meth:`sample`
    hands out the sets drawn (module docstring).

    Parameters
    ----------
    method, epsilon, sets
        As :func:`dipsy.synthesize`: the method (default as there: chosen by the kind of budget), the
        total budget of all sets, and their number.
    ledger
        The budget ledger (or its path) that records the spend; default the command line's
        (:func:`dipsy.privacy.default_ledger_path`); ``False`` records nothing, as the release then
        states.
    **request
        Any other argument of :func:`dipsy.synthesize` (``delta``, ``rho``, ``columns``, ``seed``,
        ``options``, ``dataset_id``, ``budget_cap``, ``on_invalid``, ``neighbouring``, …).
    """

    def __init__(
        self,
        method: str | None = None,
        epsilon: float | None = None,
        sets: int = 1,
        *,
        ledger: Ledger | str | Path | Literal[False] | None = None,
        **request: Any,
    ) -> None:
        taken = {"data", "domain", "method", "epsilon", "sets", "ledger"} & set(request)
        if taken:
            raise DipsyError(f"{sorted(taken)[0]}= is given to fit(), or as the first arguments", "pass it there")
        streamed = {"stream", "on_release", "check_output"} & set(request)
        if streamed:
            raise DipsyError(
                f"{sorted(streamed)[0]}=: a Synthesizer keeps its sets in memory to sample them",
                "write a release as it is drawn with dipsy.synthesize(..., stream=True, on_release=...)",
            )
        self.method, self.epsilon, self.sets, self.request = method, epsilon, sets, dict(request)
        self.ledger = ledger  # None: dipsy.synthesize's default, the command line's ledger
        self.release: Release | None = None
        self._data: Any = None
        self._handed = 0

    def fit(self, data: pd.DataFrame | str | Path, domain: Domain | str | Path) -> Synthesizer:
        """Charge the budget and draw the ``sets`` sets it pays for (:func:`dipsy.synthesize`).

        A second ``fit`` is a second release, charged again; its sets replace the first's.
        """
        self.release = synthesize(data, domain, self.method, self.epsilon, self.sets, ledger=self.ledger, **self.request)
        self._data, self._handed = data, 0
        return self

    def sample(self, num_rows: int | None = None) -> pd.DataFrame:
        """The next synthetic set the fit charged for (its first ``num_rows`` records if given).

        Refused before a fit and past the last set: each set is paid for when it is drawn, so more
        sets, or more records than a set holds, take another fit with its own charge.
        """
        if self.release is None:
            raise DipsyError("nothing is fitted yet: no set has been charged or drawn", "call fit(data, domain) first")
        tables = self.release.tables
        if self._handed >= len(tables):
            raise DipsyError(
                f"all {len(tables)} set(s) the fit charged for have been sampled; another would be another charge",
                "fit again (a new release, charged to the ledger), or ask for more sets=",
            )
        table = tables[self._handed]
        assert isinstance(table, pd.DataFrame)  # a set streamed to files needs on_release, which fit does not take
        if num_rows is not None and not 0 <= num_rows <= len(table):
            raise DipsyError(
                f"num_rows = {num_rows}: a set holds {len(table):,} records, drawn under the charge",
                f"ask for at most {len(table):,}, or fit again for another set",
            )
        self._handed += 1
        return table if num_rows is None else table.iloc[:num_rows].reset_index(drop=True)

    def report(self, path: str | Path, **evaluation: Any) -> dict[str, Any]:
        """Evaluate the fitted release against the data it was fitted on and write the HTML report
        to ``path`` (:func:`dipsy.evaluate`; it reads the confidential data: keep it with them)."""
        if self.release is None:
            raise DipsyError("nothing is fitted yet: there is no release to report on", "call fit(data, domain) first")
        return self.release.report(self._data, path, **evaluation)


__all__ = ["Synthesizer"]
