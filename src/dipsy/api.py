"""The Python API, mirroring the ``dipsy`` command line.

>>> import dipsy, pandas as pd
>>> domain = dipsy.Domain.from_sizes({"x": 3})
>>> data = pd.DataFrame({"x": [0, 1, 1, 2, 2, 2]})
>>> release = dipsy.synthesize(data, domain, method="dirichlet-multinomial", epsilon=1.0, seed=7)
>>> release.statement.definition, len(release.tables[0])
('pure-DP', 6)
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import __version__
from .domain import Domain, decode
from .engine import engine_for
from .errors import DataError
from .methods import get
from .methods.counts import cells_frame
from .privacy import Accountant, Ledger
from .privacy.composition import parse_cap, requested_budget
from .privacy.rng import Randomness
from .release import Release


def synthesize(
    data: pd.DataFrame | str | Path,
    domain: Domain | str | Path,
    method: str = "dirichlet-multinomial",
    epsilon: float | None = None,
    sets: int = 1,
    *,
    delta: float | None = None,
    rho: float | None = None,
    columns: Sequence[str] | None = None,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    ledger: Ledger | str | Path | None = None,
    dataset_id: str | None = None,
    budget_cap: float | None = None,
    on_invalid: str = "error",
    neighbouring: str | None = None,
    release: str = "records",
    progress: bool = False,
    on_release: Callable[[Release], Any] | None = None,
) -> Release:
    """Draw ``sets`` differentially private synthetic tables from ``data``.

    Parameters
    ----------
    data
        A CSV or Parquet path (read out of core by DuckDB) or a pandas DataFrame (read in memory).
    domain
        The public domain, or the path of its YAML/JSON file.
    method
        A name from :func:`dipsy.methods`.
    epsilon
        The total privacy budget of the release (all sets together).
    sets
        Number of synthetic sets m; under sequential composition each costs ε/m.
    delta
        δ of an (ε, δ) budget, for the zCDP and approximate-DP methods (e.g. ``privsyn``: given
        ε and δ, it spends the largest ρ that converts to (ε, δ)-DP). With ``rho``, the δ at which
        the release also states its ρ as (ε, δ).
    rho
        A ρ-zCDP budget, instead of ε and δ, for the zCDP methods.
    columns
        Columns to synthesize (default: every column of the domain).
    seed
        Seed for reproducibility, recorded in the release; None draws from the operating system.
    options
        Method options, e.g. ``{"alpha": 10.0}``.
    ledger
        A :class:`~dipsy.privacy.Ledger` (or its path) that records the spend against
        ``dataset_id`` and enforces ``budget_cap``; None records nothing (the command line always
        records, by default in the user's data directory).
    dataset_id
        The data set's name in the ledger; default the SHA-256 of the file (or of the DataFrame).
    budget_cap
        What this data set may ever spend: ε (a number or ``"2"``), ``"ε,δ"`` or ``"rho=ρ"``, or
        a :class:`~dipsy.privacy.Budget`; stored in the ledger and enforced from then on, over
        releases of every definition (see :mod:`dipsy.privacy.composition`).
    on_invalid
        ``"error"`` (default) or ``"drop"`` rows that do not match the domain.
    neighbouring
        ``"substitute"`` or ``"add-remove"``, for methods private under either (see
        :func:`dipsy.methods`); default the method's first.
    release
        ``"records"`` (synthetic microdata, the default) or ``"table"`` (the released cell counts,
        with the noise they carry), for the count methods.
    progress
        Show a progress bar over the sets.
    on_release
        Called with the release inside the ledger transaction (the command line saves there, so
        a failed save records no spend).

    Returns
    -------
    Release
        ``.tables`` (m DataFrames), ``.statement``, ``.save(folder)``.
    """
    kind = get(method)
    budget, delta = requested_budget(kind.definition, epsilon, delta, rho)
    synthesizer = kind(budget, sets, options, neighbouring, release)
    if not isinstance(domain, Domain):
        domain = Domain.load(domain)
    scope = domain.project(columns)  # methods that count cells check in plan() that every column has them
    engine = engine_for(data, scope, on_invalid)
    report = engine.ensure_valid()
    plan = synthesizer.plan(report.valid_rows, scope)
    statement = replace(plan.statement, delta=delta) if plan.statement.definition == "zCDP" else plan.statement
    accountant = Accountant(budget)
    for spend in plan.spends:
        accountant.spend(spend.label, spend.budget)

    if ledger is not None and not isinstance(ledger, Ledger):
        ledger = Ledger(ledger)
    release_id = uuid.uuid4().hex
    charge = (
        ledger.charge(
            dataset_id or fingerprint(data),
            release_id,
            method,
            accountant.spends,
            cap=None if budget_cap is None else parse_cap(budget_cap),
            stated_delta=delta,
        )
        if ledger is not None
        else nullcontext()
    )
    # How many rows were dropped is not released: it is a count of the confidential data.
    notes = ("Rows that did not match the domain were dropped before synthesis.",) if report.invalid_rows else ()
    rand = Randomness.from_seed(seed)
    with charge:
        model = synthesizer.fit(engine, plan)
        bar = _progress(sets, progress)
        tables = []
        if progress:  # some models are frozen dataclasses; the reporter is no part of their value
            object.__setattr__(model, "reporter", bar.step)
        with bar:
            for _ in range(sets):
                if release == "table":
                    tables.append(cells_frame(model.table(rand), scope))
                else:
                    drawn = model.sample(rand)
                    tables.append(drawn if isinstance(drawn, pd.DataFrame) else decode(drawn, scope, rand.numpy))
                bar.advance()
        result = Release(
            tables=tables,
            statement=statement,
            method=method,
            options=dict(options or {}),
            parameters={k: v for k, v in plan.parameters.items() if not k.startswith("_")},
            domain=scope,
            spends=accountant.spends,
            seed=seed,
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            release_id=release_id,
            dipsy_version=__version__,
            kind=release,
            dropped_rows=report.invalid_rows,
            notes=notes,
        )
        if on_release is not None:
            on_release(result)
    return result


def fingerprint(data: pd.DataFrame | str | Path) -> str:
    """SHA-256 of a data file's bytes, or of a DataFrame's column names and row hashes.

    It names the data set in the private ledger; it is never written into a release.
    """
    h = hashlib.sha256()
    if isinstance(data, pd.DataFrame):
        h.update("\x1f".join(map(str, data.columns)).encode())
        h.update(pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes())
        return h.hexdigest()
    try:
        with open(data, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise DataError(f"cannot read {str(data)!r} ({e.strerror})", "check the path") from None
    return h.hexdigest()


class _progress:
    """Rich progress on standard error: a bar over the sets (two or more), and a line for the
    long steps a model reports inside one set (the marginal methods' measurements and GUM)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=not enabled,
        )
        self.total = total
        self.step_task = None

    def __enter__(self) -> "_progress":
        self.bar.start()
        self.sets_task = self.bar.add_task("synthetic sets", total=self.total, visible=self.total > 1)
        return self

    def advance(self) -> None:
        self.bar.advance(self.sets_task)

    def step(self, what: str, done: int = 0, total: int = 0) -> None:
        if self.step_task is None:
            self.step_task = self.bar.add_task(what, total=None)
        self.bar.update(self.step_task, description=what, completed=done, total=total or None)

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()
