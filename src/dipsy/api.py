"""The Python API, mirroring the ``dipsy`` command line.

:func:`synthesize` takes a release's choices as keywords, builds the
:class:`~dipsy.request.Request` that ``dipsy synth`` builds from its flags, and hands it to
:func:`run`, the release path both share.

>>> import dipsy, pandas as pd
>>> domain = dipsy.Domain.from_sizes({"x": 3})
>>> data = pd.DataFrame({"x": [0, 1, 1, 2, 2, 2]})
>>> release = dipsy.synthesize(data, domain, method="dirichlet-multinomial", epsilon=1.0)
>>> release.statement.definition, release.statement.private, len(release.tables[0])
('pure-DP', True, 6)
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .domain import Domain, decode
from .engine import engine_for
from .engine.fingerprint import fingerprint
from .engine.owner import RunFolder
from .errors import BudgetError, DataError, DipsyError, NoiseError, PrivacyError, ReleaseError, speaks_python
from .forecast import Forecast, check_declared_rows, forecast
from .interrupts import held
from .methods import Model, Synthesizer, default_method, get
from .methods.base import Plan, build_statement
from .methods.counts import cells_frame
from .methods.enforce import Enforcement
from .privacy import Ledger, Spend, default_ledger_path
from .privacy.budget import LocalDP
from .privacy.composition import parse_cap, requested_budget
from .privacy.ledger import take_back
from .privacy.measurement import Measurement
from .privacy.published import PublishedTable
from .privacy.rng import Randomness
from .privacy.session import Session
from .release import LABELLED_FORMATS, REPORTER, ROOM_FLOOR, Output, Release, check_room, check_writable_folder
from .release_sets import ChunkedSet
from .request import Request
from .version import __version__


@speaks_python
def synthesize(
    data: pd.DataFrame | str | Path,
    domain: Domain | str | Path,
    method: str | None = None,
    epsilon: float | None = None,
    sets: int = 1,
    *,
    delta: float | None = None,
    rho: float | None = None,
    columns: Sequence[str] | None = None,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    ledger: Ledger | str | Path | Literal[False] | None = None,
    dataset_id: str | None = None,
    budget_cap: float | None = None,
    raise_cap: bool = False,
    on_invalid: str = "error",
    neighbouring: str | None = None,
    release: str = "records",
    progress: Progress_ = False,
    on_release: Callable[[Release], Any] | None = None,
    accept_noise: bool = False,
    rows: int | None = None,
    stream: bool = False,
    engine: str | None = None,
    check_output: Callable[..., Any] | None = None,
) -> Release:
    """Draw ``sets`` differentially private synthetic tables from ``data``.

    Parameters
    ----------
    data
        A CSV or Parquet path (read out of core by DuckDB), a SAS, Stata or SPSS file (``.sas7bdat``,
        ``.xpt``, ``.dta``, ``.sav``, ``.zsav``: read through a private Parquet copy), or a pandas
        DataFrame (read in memory).
    domain
        The public domain, or the path of its YAML/JSON file.
    method
        A name from :func:`dipsy.methods`; default (None) ``dirichlet-multinomial`` for a budget of
        ``epsilon`` alone, ``privsyn`` when ``delta`` or ``rho`` is given
        (:func:`dipsy.methods.default_method`).
    epsilon
        The total privacy budget of the release (all sets together); for a method whose guarantee
        is local (the pseudo-posterior), the ceiling its measured ε_x may not pass.
    sets
        Number of synthetic sets m; under sequential composition each costs its share (ε/m, ρ/m
        or (ε/m, δ/m); a local method's m draws each a local 2Δ).
    delta
        δ of an (ε, δ) budget, for the zCDP and approximate-DP methods (e.g. ``privsyn``: given
        ε and δ, it spends the largest ρ that converts to (ε, δ)-DP). With ``rho``, the δ at which
        the release also states its ρ as (ε, δ).
    rho
        A ρ-zCDP budget, instead of ε and δ, for the zCDP methods.
    columns
        Columns to synthesize (default: every column of the domain).
    seed
        Seed for reproducibility, recorded in the release. A seeded release is a test release:
        its noise can be regenerated, so it is not private and its statement says so. None (the
        default, and the only choice for a release to publish) draws every random number from
        the operating system's CSPRNG (exact noise) or a ChaCha20 generator keyed from it.
    options
        Method options, e.g. ``{"alpha": 10.0}``.
    ledger
        A :class:`~dipsy.privacy.Ledger` (or its path) that records the spend against
        ``dataset_id`` and enforces ``budget_cap``. Default (None) the command line's ledger,
        :func:`~dipsy.privacy.default_ledger_path` (``$DIPSY_LEDGER``, else ``ledger.sqlite`` in
        the user's data folder): releases drawn in a notebook are on record as the command line's
        are. ``False`` records nothing, an explicit choice that ``release.json`` states
        (``request.recorded_in_ledger: false``).
    dataset_id
        The data set's name in the ledger; default the SHA-256 of the file (or of the DataFrame).
    budget_cap
        What this data set may ever spend: ε (a number or ``"2"``), ``"ε,δ"`` or ``"rho=ρ"``, or
        a :class:`~dipsy.privacy.Budget`; stored in the ledger and enforced from then on, over
        releases of every definition (see :mod:`dipsy.privacy.composition`). ``"local=ε"`` (given
        with a local-guarantee release) caps the data set's local ε_x apart: a data set with a DP
        cap refuses local releases without one.
    raise_cap
        Allow ``budget_cap`` to raise (or redefine) a stored cap: an explicit act, recorded.
    on_invalid
        ``"error"`` (default) or ``"drop"`` rows that do not match the domain. The policy is
        public (it is recorded); how many rows were dropped is not (``Release.dropped_rows``, for
        the operator's terminal only).
    neighbouring
        ``"substitute"`` or ``"add-remove"``, for methods private under either (see
        :func:`dipsy.methods`); default the method's first.
    release
        ``"records"`` (synthetic microdata, the default) or ``"table"`` (the released cell counts,
        with the noise they carry), for the count methods.
    progress
        ``True``: a progress bar on standard error, over the sets and the long steps inside one (a
        marginal method's measurements, aim's rounds with the marginal chosen and the budget left,
        GUM), with the time left. A callable ``progress(what, done, total)`` is told the same steps
        instead (``total`` 0 where a step has no count), then ``("synthetic set k of m", k, m)`` as
        each set is drawn: a notebook's or a service's own display.
    on_release
        Called with the release before the ledger marks it done (the command line saves there).
        The spend is committed before any data are read; a run that fails before the release
        exists takes it back, a killed one leaves it counted. A failure inside ``on_release``
        keeps the spend (it may have published the release) unless ``on_release.visible`` is
        False (:class:`dipsy.release.Output`, which turns it True as the release reaches its place).

    accept_noise
        Release even when the forecast (:mod:`dipsy.forecast`, made from the plan after the rows
        are checked against the domain and before anything is charged or measured; under
        substitution it uses the valid row count n, which that relation makes public) says the
        release will be essentially noise; by default such a release is refused before anything
        is charged.
    rows
        A number of rows the steward declares public, for the forecast of methods that do not
        treat n as public (it is stated in the release's forecast as declared, and used nowhere else).
    stream
        Draw each set of records chunk by chunk as it is written (``on_release`` must save it:
        a :class:`~dipsy.release_sets.ChunkedSet` is drawn once), so that memory holds one chunk,
        not the set. For one seed the records are those of the in-memory release.
    engine
        The backend that reads ``data`` (:func:`dipsy.engine.engine_for`): ``"duckdb"`` (the
        default for a file), ``"spark"`` (files too large for one machine: a local or cluster
        Spark, its master from ``DIPSY_SPARK_MASTER``), or ``"numpy"``. All give the same release
        for the same seed.
    check_output
        Called before anything is charged, after the plan, as ``check_output(domain, kind=release,
        sets=m, rows=n)`` (the released columns' domain, the valid row count n, seen by this
        process only), to refuse an output that would fail after the charge
        (:meth:`dipsy.release.Output.check`: the folder, the room, the categories' format).

    Returns
    -------
    Release
        ``.tables`` (m DataFrames), ``.statement``, ``.save(folder)``, ``.forecast``.

    The arguments that say what the release is become a :class:`~dipsy.request.Request`, which
    :func:`run` carries out and the release records (``release.json``'s ``request``); the rest
    (``progress``, ``on_release``, ``check_output``, an opened ``ledger``) are how it is run.
    """
    method = method or default_method(delta, rho)
    # As Request.__post_init__ would convert them: a domain or ledger file's path to a Path, the columns to a tuple.
    domain = Path(domain) if isinstance(domain, str) else domain
    if ledger is None:  # on record by default, as at the command line; False opts out
        ledger = default_ledger_path()
    ledger_path = ledger.path if isinstance(ledger, Ledger) else None if ledger is False else Path(ledger)
    request = Request(
        data,
        domain,
        method,
        epsilon,
        delta,
        rho,
        sets,
        None if columns is None else tuple(columns),
        options or {},
        neighbouring,
        release,
        seed,
        on_invalid,
        accept_noise,
        rows,
        stream,
        engine,
        ledger=ledger_path,
        dataset_id=dataset_id,
        budget_cap=budget_cap,
        raise_cap=raise_cap,
    )
    return run(
        request,
        ledger=ledger if isinstance(ledger, Ledger) else None,
        progress=progress,
        on_release=on_release,
        check_output=check_output,
    )


@speaks_python
def plan_forecast(
    data: pd.DataFrame | str | Path | None,
    domain: Domain | str | Path,
    method: str | None = None,
    epsilon: float | None = None,
    sets: int = 1,
    *,
    delta: float | None = None,
    rho: float | None = None,
    columns: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    on_invalid: str = "error",
    neighbouring: str | None = None,
    release: str = "records",
    rows: int | None = None,
) -> Forecast:
    """The forecast of a release, from public inputs only, before anything is charged.

    Nothing of ``data`` is read unless the method treats n as public (substitution): then the
    rows are validated against the domain and counted, as ``synthesize`` does before its plan.
    Under add/remove ``data`` may be None; ``rows`` (a count the steward declares public) lets
    the forecast judge noisy tables against n.
    """
    check_declared_rows(rows)
    method = method or default_method(delta, rho)
    synthesizer, _, _, scope, _ = _configure(method, epsilon, sets, delta, rho, options, neighbouring, release, domain, columns)
    synthesizer.check_roles(scope)
    n = None
    if synthesizer.relation.fixes_n:
        if data is None:
            raise DataError(
                f"{method} treats n as public under {synthesizer.relation.name}: its forecast needs the data's row count",
                "pass the data file",
            )
        engine = engine_for(data, scope, on_invalid)
        try:
            n = engine.ensure_valid().valid_rows
        finally:
            getattr(engine, "close", lambda: None)()
    plan = synthesizer.plan(n, scope)
    synthesizer.check_roles(scope, plan)
    return forecast(plan, scope, rows=rows, method=method)


def _configure(method, epsilon, sets, delta, rho, options, neighbouring, release, domain, columns, seed=None):
    """The synthesizer, its budget, the stated δ, the released columns' domain, and the domain's
    edit rules that name a column not released (with those columns): public inputs only."""
    kind = get(method)
    budget, delta = requested_budget(kind.definition, epsilon, delta, rho)
    synthesizer = kind(budget, sets, options, neighbouring, release, seed=seed)
    if not isinstance(domain, Domain):
        domain = Domain.load(domain)
    scope = domain.project(columns)  # methods that count cells check in plan() that every column has them
    return synthesizer, budget, delta, scope, domain.dropped_rules(columns)


def _refuse_noise(method: str, outlook: Forecast) -> None:
    raise NoiseError(
        f"{method}: {outlook.summary()}",
        "change the release as the forecast suggests, or pass --accept-noise (accept_noise=True) to release it anyway",
    )


def run(
    request: Request,
    *,
    ledger: Ledger | None = None,
    progress: Progress_ = False,
    on_release: Callable[[Release], Any] | None = None,
    check_output: Callable[..., Any] | None = None,
    work: RunFolder | None = None,
    tamper: Callable[[Measurement], Measurement] | None = None,
) -> Release:
    """Carry out ``request``: validate, plan, forecast and charge before anything is measured, then
    fit, draw, state, save and confirm (what :func:`synthesize` and ``dipsy synth`` run).

    Parameters
    ----------
    request
        The release asked for (:class:`~dipsy.request.Request`).
    ledger
        The opened ledger to record in (the command line's notes what it records); default
        ``Ledger(request.ledger)`` when the request names one, else nothing is recorded.
    progress, on_release, check_output
        As :func:`synthesize` takes them. When the request has an ``output`` and no
        ``on_release`` is given, the release is written there (:class:`~dipsy.release.Output`,
        whose ``check`` runs before the charge), its temporary files in ``work``.
    tamper
        For the privacy audit only (:mod:`dipsy.audit`): the session hands it every measurement
        after the charge and runs what it returns — the measurement recorded, replayed from another
        data set's answers, or with its noise weakened while the plan still states the original
        cost. A tampered release says it is not private (:data:`dipsy.methods.base.BROKEN`) and is
        recorded as a test release.
    """
    r = request
    check_declared_rows(r.rows)
    synthesizer, budget, delta, scope, dropped = _configure(
        r.method, r.epsilon, r.sets, r.delta, r.rho, r.options, r.neighbouring, r.release, r.domain, r.columns, r.seed
    )
    # The domain's edit rules, enforced on what is drawn (post-processing; see dipsy.methods.enforce).
    rules = Enforcement(scope, dropped, synthesizer.repeated_columns(scope))
    if on_release is None and r.output is not None:
        out = r.output
        output = Output(out.folder, out.format, out.overwrite, out.partition_by, r.engine, work=work)
        on_release, check_output = output, output.check if check_output is None else check_output
    if r.stream and r.output is not None and r.output.format in LABELLED_FORMATS:  # refused before any read
        fmt = r.output.format
        raise ReleaseError(
            f"a streamed set is written in chunks, as a folder of Parquet or CSV part files, not {fmt}",
            f"leave out --stream to write one {fmt} file per set, or use --format parquet or csv",
        )
    if r.stream and (on_release is None or r.release == "table"):
        raise DipsyError(
            "a streamed release is drawn as it is written: it needs records and an on_release that saves it",
            "pass on_release=lambda r: r.save(folder), or leave stream off",
        )
    if ledger is None and r.ledger is not None:
        ledger = Ledger(r.ledger)
    data, method, seed, dataset_id, release = r.data, r.method, r.seed, r.dataset_id, r.release
    synthesizer.check_roles(scope)  # before any read: a column leaves a release unchanged only if declared public
    engine = engine_for(data, scope, r.on_invalid, r.engine)
    # The one read before the charge: rows are checked against the public domain (a bad row stops
    # the run on the operator's terminal; nothing is released). n reaches the plan only when the
    # relation fixes it (substitution); under add/remove the plan never sees it.
    report = engine.ensure_valid()
    plan = _narrowed(synthesizer.plan(report.valid_rows if synthesizer.relation.fixes_n else None, scope), r.on_invalid)
    synthesizer.check_roles(scope, plan)
    _check_discovered(scope, ledger, dataset_id, seed)
    _check_not_public_source(scope, data)
    _check_public_files(synthesizer, data, report.rows)
    # A local guarantee's cost is measured from the data: its session total is the ceiling the
    # operator gave, and its ledger record is written once it is known. It never counts against a DP
    # cap: a data set with one needs a cap for local releases too (checked here, before any measurement).
    local = synthesizer.definition == "local"
    cap = None if r.budget_cap is None else parse_cap(r.budget_cap)
    if cap is not None and isinstance(cap, LocalDP) != local:
        raise BudgetError(
            f"{method}'s guarantee is {'local (not worst-case DP)' if local else 'worst-case DP'}, and the cap "
            f"{cap} is {'a local' if isinstance(cap, LocalDP) else 'a DP'} one",
            "give a local-guarantee release --budget-cap local=ε, and a DP release a DP cap (ε, 'ε,δ' or 'rho=ρ')",
        )
    total = plan.declared(budget)  # the accountant refuses a plan that declares more than the budget
    outlook = forecast(plan, scope, rows=r.rows, method=method)  # public inputs only: refused before any charge
    if outlook.noise and not r.accept_noise:
        _refuse_noise(method, outlook)
    seeded, broken = seed is not None, tamper is not None
    guarantee = "test" if seeded or broken else "local" if local else "dp"
    release_id = uuid.uuid4().hex
    data_id = "" if ledger is None else dataset_id or fingerprint(data)  # read only when there is a ledger
    if ledger is not None and local:  # refused now, before any measurement, if it could never be recorded
        ledger.check(
            data_id,
            release_id,
            [Spend(f"{method}: a local ε_x, measured once it has run", LocalDP(0.0))],
            plan.relation,
            cap=cap,
            raise_cap=r.raise_cap,
            guarantee=guarantee,
            dataset_id_given=dataset_id is not None,
        )
    if check_output is not None:  # what would fail after the charge is refused before it
        check_output(scope, kind=release, sets=synthesizer.sets, rows=report.valid_rows)
    charged = drawn = False
    try:
        if ledger is not None and not local:  # committed before any measurement: a killed run may over-count, never under-count
            with held():  # the charge and the note of it: an interruption comes after both or neither
                ledger.reserve(
                    data_id,
                    release_id,
                    method,
                    plan.spends,
                    plan.relation,
                    cap=cap,
                    raise_cap=r.raise_cap,
                    stated_delta=delta,
                    guarantee=guarantee,
                    dataset_id_given=dataset_id is not None,
                )
                charged = True
        rand = Randomness.from_seed(seed)
        session = Session(engine, total, plan.relation, rand, plan.measurements, plan.adaptive is not None, tamper)
        with (
            _progress(synthesizer.sets, progress is True) if not callable(progress) else _told(synthesizer.sets, progress) as bar
        ):
            session.reporter = bar.step if progress else None
            model = synthesizer.fit(session, plan)
            session.close()
            tables = _draw(model, synthesizer.sets, release, scope, rand, bar if progress else None, r.stream, rules)
        result = Release(
            tables=tables,
            statement=build_statement(synthesizer, plan, session, delta, seeded=seeded, broken=broken),
            method=method,
            options=public_options(synthesizer, r.options),
            parameters={**plan.parameters, **model.choices()},
            domain=scope,
            spends=session.spends,
            seed=seed,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            release_id=release_id,
            dipsy_version=__version__,
            kind=release,
            on_invalid=r.on_invalid,
            dropped_rows=report.invalid_rows,
            forecast=outlook.to_dict() | {"accepted_noise": outlook.noise},
            request=r.public(public_options(synthesizer, r.options)),
            rules=rules if rules or rules.dropped else None,
            published=tuple(PublishedTable.of(m, answer, scope) for m, answer in session.published),
        )
        if ledger is not None and local:
            with held():
                ledger.reserve(
                    data_id,
                    release_id,
                    method,
                    session.spends,
                    plan.relation,
                    cap=cap,
                    raise_cap=r.raise_cap,
                    guarantee=guarantee,
                    dataset_id_given=dataset_id is not None,
                )
                charged = True
        drawn = True  # from here on_release may make it visible: its ``visible`` says (without one, it may have)
        if on_release is not None:
            on_release(result)
    except BaseException as e:
        if charged and ledger is not None and not (drawn and getattr(on_release, "visible", True)):  # charged: ledger is set
            take_back(ledger, release_id, e)
        raise
    finally:
        getattr(engine, "close", lambda: None)()
    if ledger is not None:
        ledger.confirm(release_id)
    return result


def _check_discovered(scope: Domain, ledger: Ledger | None, dataset_id: str | None, seed: int | None) -> None:
    """Refuse a domain whose values a DP discovery released (its ``discovered:`` block), unless the
    release is recorded where that discovery was charged: the same data set id in a ledger that
    holds the discovery (or, for a discovery recorded in no ledger, no ledger). Otherwise the data
    set's totals would never show what its domain already cost. A seeded test discovery is refused
    for an unseeded release (its noise can be regenerated); a seeded release, itself a test that
    claims nothing, may use any discovered domain."""
    found = scope.discovered
    if found is None:
        return
    if found.seeded and seed is None:
        raise PrivacyError(
            f"the domain's {found.what()} come from a seeded test discovery ({found.release_id}): "
            "anyone can regenerate its noise, so no release showing them is private",
            "run 'dipsy domain discover' again without --seed, or make this a seeded test release too",
        )
    if seed is not None:
        return
    where = f"data set {found.dataset_id!r} in the ledger {found.ledger}" if found.ledger else "no ledger"
    fix = (
        f"release with --dataset-id {found.dataset_id} and the ledger its discovery {found.release_id} was charged to"
        if found.ledger
        else "release without a ledger, or discover the domain again with this ledger"
    )
    if ledger is None:
        if found.ledger is not None:
            raise BudgetError(
                f"the domain's {found.what()} were discovered at a cost charged to {where}, and this release "
                "is recorded in no ledger",
                fix,
            )
        return
    if dataset_id != found.dataset_id or not ledger.holds(found.dataset_id, found.release_id):
        named = f"data set {dataset_id!r}" if dataset_id else "a data set named by its file's hash"
        raise BudgetError(
            f"the domain's {found.what()} were discovered at a cost charged to {where} (discovery "
            f"{found.release_id}), and this release is recorded for {named} in the ledger {ledger.path}, "
            "whose totals would never show that cost",
            fix,
        )


#: Where ``dipsy domain init --from-public`` records the public file's digest in the domain's description.
_PUBLIC_SOURCE = re.compile(r"from the public file .* \(SHA-256 ([0-9a-f]{64})\)")


def _check_not_public_source(scope: Domain, data: Any) -> None:
    """Refuse data that are the very file the domain's categories and bounds were read from as
    public (``domain init --from-public``): they would go out, exact, with every release."""
    match = _PUBLIC_SOURCE.search(scope.description or "")
    if match and isinstance(data, (str, Path)) and fingerprint(data) == match.group(1):
        raise PrivacyError(
            f"{Path(data).name} is the file the domain's categories and bounds were read from as public data "
            "(domain init --from-public), so they are the confidential data's exact values",
            "write the domain from a file that is really public, or from public knowledge",
        )


def _check_public_files(synthesizer: Synthesizer, data: Any, rows: int) -> None:
    """Refuse a public input file (an option such as dpsyn's ``public=``, rdt's ``structure=``) that is
    the confidential data: the same file, bytes or rows (:func:`dipsy.engine.copies.copy_of`)."""
    from .engine.copies import copy_of

    if not isinstance(data, (str, Path)):
        return
    for option in synthesizer.options:
        given = synthesizer.settings.get(option.name)
        if option.public_file and isinstance(given, Path):
            why = copy_of(given, data, rows)
            if why is not None:
                raise PrivacyError(
                    f"option {option.name}= names {given.name}, a file given as public, and {why} as the "
                    f"confidential data {Path(data).name}: what the method reads from it would be released without noise",
                    f"give {option.name}= a file that is really public (another year, a public sample)",
                )


#: Dropped rows under a relation that publishes n: what the guarantee then covers.
DROPPED_UNDER_FIXED_N = (
    "rows that did not match the domain were dropped before any measurement, so the guarantee is "
    "for the rows that match it: neighbours substitute one such row by another that matches the "
    "domain; a row that starts or stops matching the domain changes the number of rows, which this "
    "relation treats as public, and is not covered"
)


def _narrowed(plan: Plan, on_invalid: str) -> Plan:
    """The plan, its relation narrowed when rows are dropped under a relation that fixes n.

    Dropping a row by the public domain is a per-record transformation: add/remove neighbours stay
    add/remove neighbours (or become equal), so nothing changes there. Under substitution n is
    published; a substituted row that goes from matching the domain to not matching it changes
    the kept n by one, which the release shows exactly. The statement then says so.
    """
    if on_invalid != "drop" or not plan.relation.fixes_n:
        return plan
    return replace(plan, narrowed="; ".join(x for x in (plan.narrowed, DROPPED_UNDER_FIXED_N) if x))


def _draw(
    model: Model,
    sets: int,
    release: str,
    scope: Domain,
    rand: Randomness,
    bar: _progress | _told | None,
    stream: bool = False,
    rules: Enforcement | None = None,
) -> list[pd.DataFrame] | list[ChunkedSet]:
    """The charged sets, drawn from the model (post-processing only).

    Records are drawn and decoded chunk by chunk (:meth:`Model.draw_chunks`). In memory the chunks
    are put together; streamed, each set is a :class:`ChunkedSet` drawn as it is written. Both
    consume the randomness in the same order (set by set, chunk by chunk), so for one seed a
    streamed release holds exactly the in-memory release's records. ``rules`` (the domain's edit
    rules) reject and redraw records in a forbidden cell, and zero a table's forbidden cells.
    """
    tables = []
    if bar is not None:  # some models are frozen dataclasses; the reporter is no part of their value
        object.__setattr__(model, "reporter", bar.step)
    for _ in range(sets):
        if release == "table":
            tables.append(cells_frame(model.draw_table(rand, rules), scope))
        else:
            chunks = (
                c if isinstance(c, pd.DataFrame) else decode(c, scope, rand.numpy) for c in model.draw_chunks(rand, rules=rules)
            )
            if stream:
                tables.append(ChunkedSet(chunks))
                continue
            parts = list(chunks)
            tables.append(parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True))
        if bar is not None:
            bar.advance()
    return tables


def public_options(synthesizer: Synthesizer, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options as release.json records them: a public input file by its name and SHA-256
    (public content), never the operator's local path."""
    files = {o.name for o in synthesizer.options if o.public_file}
    out = {}
    for name, value in dict(given or {}).items():
        setting = synthesizer.settings.get(name)
        if setting is not None and hasattr(setting, "public"):  # e.g. a user's model file: by name, SHA-256 and attribute
            out[name] = setting.public()
        elif name in files and isinstance(setting, Path):  # not e.g. rdt's structure=random
            path = Path(str(value))
            out[name] = {"file": path.name, "sha256": fingerprint(path)}
        else:
            out[name] = value
    return out


#: How a run shows its progress: not at all, a bar on standard error, or a callable told each step.
Progress_ = bool | Callable[[str, int, int], Any]


class _told:
    """Progress told to a callable ``(what, done, total)``: the steps a model reports, then each set drawn."""

    def __init__(self, total: int, tell: Callable[[str, int, int], Any]) -> None:
        self.total, self.tell, self.done = total, tell, 0

    def __enter__(self) -> _told:
        return self

    def step(self, what: str, done: int = 0, total: int = 0) -> None:
        self.tell(what, done, total)

    def advance(self) -> None:
        self.done += 1
        self.tell(f"synthetic set {self.done} of {self.total}", self.done, self.total)

    def __exit__(self, *exc: object) -> None:
        return None


class _progress:
    """Rich progress on standard error: a bar over the sets (two or more), and a line for the
    long steps a model reports inside one set (the marginal methods' measurements and GUM)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            disable=not enabled,
        )
        self.total = total
        self.step_task: TaskID | None = None

    def __enter__(self) -> _progress:
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


@speaks_python
def discover_domain(
    data: pd.DataFrame | str | Path,
    domain: str | Path | Mapping[str, Any],
    out: str | Path | None = None,
    *,
    epsilon: float | str,
    delta: float | str | None = None,
    dataset_id: str,
    categories: Sequence[str] | None = None,
    bins: Mapping[str, int] | None = None,
    log: Sequence[str] = (),
    grid: int = 256,
    ledger: Ledger | str | Path | Literal[False] | None = None,
    neighbouring: str = "add-remove",
    seed: int | None = None,
    on_invalid: str = "error",
    overwrite: bool = False,
    work: RunFolder | None = None,
):
    """Fill a domain skeleton's TODO categories and bins by a DP measurement of ``data``, charged.

    The opt-in exception to "the domain is public input" (DESIGN rule 1): a DP measurement charged
    to the data set's ledger, stated in the written domain's ``discovered:`` block and by every
    release that uses it. See :mod:`dipsy.methods.discovery` for the mechanisms and their proofs.

    Parameters
    ----------
    data
        The confidential data: a CSV or Parquet path, or a DataFrame.
    domain
        The skeleton (``dipsy domain init``'s file, or its content as a mapping), TODOs allowed where
        discovery fills them; every other TODO is refused before anything is read.
    out
        Where to write the discovered domain (YAML; refused if it exists unless ``overwrite``).
    epsilon, delta
        The total (ε, δ), split equally: ε over the columns discovered, δ over the category columns
        (categories are (ε, δ)-DP and need δ <= 1e-3, far below 1/n; bins are ε-DP).
    dataset_id
        The data set's name in the ledger and in the domain's ``discovered`` block (required: a
        hash of the file must not be written into a domain that every release publishes).
    categories
        Columns whose categories to discover (default: every categorical column whose categories are TODO).
    bins
        ``{column: k}``: k bins of an integer or numeric column with declared ``lower``/``upper``.
    log
        Bins columns with log-spaced grids (geometric, or in log(1 + x − lower) when lower <= 0), for skewed columns.
    grid
        Cells of each bins grid (default 256).
    ledger
        The budget ledger (or its path); default the command line's, as for :func:`synthesize`;
        ``False`` records nothing (the domain then says so).
    neighbouring
        ``"add-remove"`` (default) or ``"substitute"``: the relation the data set's spends are under.
    seed
        A seeded discovery is a test: recorded as such, and its domain says NOT PRIVATE in every
        release that uses it.
    on_invalid
        For the bins columns' rows outside their declared bounds: ``"error"`` or ``"drop"``.
    overwrite
        Replace an existing ``out``.
    work
        The command's :class:`~dipsy.engine.owner.RunFolder` beside ``out``, where the file is
        written before it is renamed into place (its ``placed`` then names ``out``).

    Notes
    -----
    ``out``'s folder must be writable with :data:`~dipsy.release.ROOM_FLOOR` (1 MiB) free, checked
    before anything is charged (a domain file is a few kilobytes of public values). A failure
    before the file is in place takes the spend back.

    Returns
    -------
    dipsy.discovery_run.DiscoveryResult
        The released categories and bins, the domain (text, and :class:`Domain` when no TODO is left),
        the spends and their total.
    """
    from .authoring import DomainFile, check_target
    from .discovery_run import run_discovery
    from .domain.domain import read_spec
    from .errors import DipsyError
    from .methods.discovery import plan_discovery

    if not isinstance(dataset_id, str) or not dataset_id.strip():
        raise DipsyError(
            "a discovery needs the data set's name in the ledger (--dataset-id)",
            "pass --dataset-id, the name later releases of this data set use too (a file's hash would be "
            "written into the domain, which every release publishes)",
        )
    if on_invalid not in ("error", "drop"):
        raise DataError(f"on_invalid is {on_invalid!r}", "use 'error' or 'drop'")
    if out is not None:  # what would fail after the charge is refused before it
        check_target(out, overwrite)
        check_writable_folder(Path(out).parent, "--out")
        check_room(Path(out).parent, ROOM_FLOOR)
    spec = domain if isinstance(domain, Mapping) else read_spec(domain)
    plan = plan_discovery(spec, epsilon, delta, categories=categories, bins=bins, log=log, grid=grid, neighbouring=neighbouring)
    if ledger is None:  # on record by default, as at the command line; False opts out
        ledger = default_ledger_path()
    ledger = None if ledger is False else ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    Randomness.from_seed(seed)  # a bad seed is refused before anything is read or charged
    source = "" if isinstance(data, pd.DataFrame) else Path(data).name
    write = None if out is None else DomainFile(out, overwrite, work)
    return run_discovery(
        data, plan, dataset_id=dataset_id, ledger=ledger, seed=seed, on_invalid=on_invalid, source=source, on_result=write
    )


def _report(original: pd.DataFrame | str | Path, release: Release, **evaluation: Any) -> dict[str, Any]:
    """:meth:`dipsy.release.Release.report`: :func:`dipsy.evaluation.evaluate` in the API's terms."""
    from .evaluation import evaluate  # imported on use: scikit-learn and statsmodels are heavy

    return speaks_python(evaluate)(original, release, **evaluation)


REPORTER[:] = [_report]
