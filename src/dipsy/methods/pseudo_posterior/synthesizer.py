r"""The risk-weighted pseudo-posterior mechanism (Savitsky, Williams & Hu 2022) with range-restricted
privacy (Hu, Williams & Savitsky, S-001): a method whose guarantee is local, not worst-case DP.

Use: an agency releases its records with one sensitive column (the *response*) replaced by draws
from the posterior predictive of a Bayesian model fitted to the confidential data, each record's
likelihood down-weighted by its disclosure risk; the other columns (the *predictors*) are released
as they are (partial synthesis, as in Hu's work). Steps: :mod:`.mechanism`; models: :mod:`.models`.

Privacy
-------
Local ε_x (:class:`~dipsy.privacy.budget.LocalDP`), computed from the data, for one posterior draw:
``ξ^w(B | x) <= e^{ε_x} ξ^{w'}(B | x')`` for every measurable set B of parameters and every
neighbour x' the relation names, made from *this* x:

- without ``range=`` (relation ``response-removed``): x' removes one record's response from the
  likelihood, the weights held fixed; ``ε_x = 2Δ``, ``Δ = max_s max_i |α_i f_{θ_s}(x_i)|`` over the
  retained draws (SWH 2022, Theorem 3);
- with ``range=a,b`` (relation ``response-in-range``): x' moves one record's response anywhere in
  ``[a·y_i, b·y_i]`` and the mechanism recomputes every record's risk and weight for it; ε_x is the
  largest oscillation over the retained draws of the change this makes to the log pseudo posterior
  (:func:`.range_bound.move_bound`, which proves it), the same under ``eq3=printed`` and
  ``eq3=scaled``. S-001's own figure, eq. (3) with Theorem 1 (eq. 4), bounds a different neighbour
  — the record's value replaced by the knowledge that it lies in its range, every weight held
  fixed — in the form ``eq3=`` names: ``printed``, the paper's ``max_s max_i |α_i f − log P_θ(R_i)|``
  (the range's mass at full weight), or ``scaled``, dipsy's ``max_s max_i α_i |f − log P_θ(R_i)|``
  (at the record's weight; the default). A ``standard=truncated`` release reports it as
  ``S001_eq3`` with its form, never as its ε_x (:func:`.mechanism.database_bound` proves what
  each form bounds). ``standard=averaged`` sets risks and weights by dipsy's reconstruction of
  S-001 Part 1, whose formula the source does not print (METHODS.md §3.2 [R]).

The guarantee holds for this data set (its neighbours only), asymptotically in n (aDP), and as
far as the draws represent the posterior (the fit is refused when they do not:
:func:`.mechanism.check_fit`). The m synthetic sets come from m thinned draws, each a local
``ε_x = 2Δ``: sequential composition, ``m·2Δ`` in total. A synthetic set is post-processing of its
draw and the predictors (declared public). The release states Δ, ε_x and the MCMC diagnostics as
they are: they are functions of the confidential data, and the statement's ``reveals`` says what
each shows. Since ε_x is known only after the fit, the session charges it afterwards
(:mod:`dipsy.privacy.session`); ``--epsilon`` is a ceiling, and a release past it is refused.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...domain import Domain
from ...domain.codec import decode_column, repeated_column
from ...engine import Records
from ...errors import DipsyError
from ...privacy.budget import EPSILON_RANGE, LocalDP
from ...privacy.measurement import DeclaredPublic, Measurement, Mechanism, Statistic, Total
from ...privacy.relation import Relation
from ...privacy.rng import Randomness
from ...privacy.session import Session
from ..base import Model, Option, Plan, Synthesizer, real, whole

#: The most log-likelihood terms (retained draws × records) a release computes its bound over: the
#: matrix F[s, i] is held in float64 for each fit, 2 GiB at this size.
MAX_LIKELIHOOD_CELLS = 2**28

#: The built-in models' names (the JAX models load only when a release runs).
MODEL_NAMES = ("normal", "lognormal", "poisson", "negative-binomial", "categorical")
#: The most MCMC chains: four is the convention (what R-hat needs); 16 adds nothing to the
#: diagnostics, and every chain is a full run of warm-up and draws.
MAX_CHAINS = 16
#: The most warm-up iterations per chain: 20 times Stan's and NumPyro's 1,000, ample for any model
#: NUTS can fit (one that needs more is refused by its diagnostics anyway); run time grows with it.
MAX_WARMUP = 20_000
#: The most retained draws per chain: 10 times the default. The draws are held in memory with every
#: record's log-likelihood at each (chains × draws × n floats: 3.2 GB at 4 × 10⁴ draws of 10⁴
#: records); 10⁹ draws asked for 96 GB before a single one was made.
MAX_DRAWS = 10_000
#: The largest scale c of the linear weight map c(1 − r) + g: weights are clipped to 1, so c = 10⁶
#: already weights 1 every record whose risk is below 1 − 10⁻⁶.
MAX_SCALE = 1e6
#: The largest b of range=a,b: a range up to a thousand times each record's value already spans
#: three orders of magnitude above it; far larger ones only push b·y toward the floats' overflow.
MAX_RANGE_B = 1e3


def _range(value: Any) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in str(value).split(","))
    except ValueError:
        raise DipsyError(f"range must be 'a,b' with 0 < a < 1 < b, got {value!r}", "e.g. range=0.6,1.2") from None
    if not (0 < a < 1 < b and math.isfinite(b)):
        raise DipsyError(
            f"range=a,b needs 0 < a < 1 < b (the sensitive range [a·y, b·y] must hold y), got a = {a:g}, b = {b:g}",
            "e.g. range=0.6,1.2 (protect values within -40 % and +20 % of each record's value)",
        )
    if b > MAX_RANGE_B:
        raise DipsyError(
            f"range=a,b has b = {b:g}, more than the {MAX_RANGE_B:g} it may be",
            f"give b at most {MAX_RANGE_B:g}, e.g. range=0.6,1.2",
        )
    return a, b


def _choice(name: str, choices: tuple[str, ...]):
    def parse(value: Any) -> str:
        if str(value) not in choices:
            raise DipsyError(f"option {name} must be one of {', '.join(choices)}, got {value!r}", f"e.g. {name}={choices[0]}")
        return str(value)

    return parse


def _flag(value: Any) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false", "1", "0", "yes", "no"):
        raise DipsyError(f"option reweight must be true or false, got {value!r}", "e.g. reweight=true")
    return text in ("true", "1", "yes")


@dataclass(frozen=True)
class ModelFile:
    """A user's record model from a Python file (``model=path.py:NAME``): a RecordModel instance or
    subclass named NAME. Recorded in release.json by file name, SHA-256 and NAME — never the path."""

    path: Path
    attribute: str
    #: The RecordModel NAME, made once when the option is read (:meth:`load`).
    model: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def load(cls, path: Path, attribute: str) -> ModelFile:
        """Run the file and take its RecordModel ``attribute``: when the option is read, before any
        data are, so that a file that does not compile, or raises as it runs, is refused as bad
        input (with its line), never reported as a bug in dipsy."""
        from .models import RecordModel

        spec = importlib.util.spec_from_file_location(f"dipsy_user_model_{path.stem}", path)
        if spec is None or spec.loader is None:  # None only for a name Python does not load as source (the option asks for .py)
            raise DipsyError(f"the model file {path.name} cannot be loaded as Python source", "pass model=path/to/file.py:NAME")
        module = importlib.util.module_from_spec(spec)
        try:
            # Compiled here, not by the loader: the loader would write bytecode (a __pycache__ folder)
            # beside the user's file, and a run leaves nothing in the user's folders.
            exec(compile(path.read_bytes(), str(path), "exec"), module.__dict__)
        except SyntaxError as e:
            raise DipsyError(
                f"the model file {path.name} does not compile: {e.msg} (line {e.lineno})",
                f"fix the file (python -m py_compile {path.name} shows the error)",
            ) from None
        except (Exception, SystemExit) as e:  # the user's code: whatever it raises is the file's fault
            raise DipsyError(
                f"the model file {path.name} raised {type(e).__name__}: {' '.join(str(e).split())[:200]} "
                f"as it ran{_line_in(e, path)}",
                f"fix the file so that running it defines {attribute}",
            ) from None
        found = getattr(module, attribute, None)
        if isinstance(found, type) and issubclass(found, RecordModel):
            found = found()
        if not isinstance(found, RecordModel):
            raise DipsyError(
                f"{path.name} has no RecordModel named {attribute!r}",
                "define a subclass of dipsy.methods.pseudo_posterior.models.RecordModel (or an instance) under that name",
            )
        return cls(path, attribute, found)

    def public(self) -> dict[str, str]:
        from ...engine.fingerprint import fingerprint

        return {"file": self.path.name, "sha256": fingerprint(self.path), "name": self.attribute}


def _line_in(error: BaseException, path: Path) -> str:
    """`` (line N)``: the deepest line of ``path`` in the traceback of ``error`` (empty when none)."""
    target = path.resolve()  # the module's frames name the file by its absolute path
    lines = [tb.tb_lineno for tb in _frames(error.__traceback__) if Path(tb.tb_frame.f_code.co_filename).resolve() == target]
    return f" (line {lines[-1]})" if lines else ""


def _frames(tb: Any) -> Any:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _model(value: Any) -> Any:
    from .models import RecordModel  # only when a custom model object is given

    if isinstance(value, str) and value in MODEL_NAMES:
        return value
    if isinstance(value, RecordModel):
        return value
    text = str(value)
    if ":" in text and text.rsplit(":", 1)[0].endswith(".py"):
        path, name = text.rsplit(":", 1)
        if not Path(path).is_file():
            raise DipsyError(f"the model file {path!r} does not exist", "pass model=path/to/file.py:NAME")
        return ModelFile.load(Path(path), name)
    raise DipsyError(f"unknown model {value!r}", f"use one of {', '.join(MODEL_NAMES)}, or model=file.py:NAME (a RecordModel)")


DEFAULTS = {
    "weights": "linear",
    "c": 1.0,
    "g": 0.0,
    "chains": 4,
    "warmup": 1000,
    "draws": 1000,
    "target_accept": 0.8,
    "standard": "truncated",
    "eq3": "scaled",
}
#: The forms of S-001 eq. (3) (``eq3=``; :func:`.mechanism.database_bound`), without importing the JAX modules.
EQ3_FORMS = ("scaled", "printed")


@dataclass(frozen=True)
class PseudoPosterior(Mechanism):
    r"""Draws from the risk-weighted pseudo posterior; its cost, local ε_x = sets·2Δ, is measured from the data.

    ``randomise`` runs :func:`.draws.release_draws` on the answer (the response and predictors of
    every record); :meth:`measured` fills in Δ and what the statement reports. The guarantee and its
    proof: the module's docstring (SWH 2022 Thm 3; S-001 Thm 1).
    """

    synthesizer: PseudoPosteriorSynthesizer = field(compare=False)
    delta: float | None = None
    report: tuple[tuple[str, Any], ...] = ()
    exact: ClassVar[bool] = False
    data_dependent: ClassVar[bool] = True

    @property
    def cost(self) -> LocalDP:
        if self.delta is None:
            raise DipsyError(
                "the pseudo-posterior's ε_x is known only once it has run", "read the cost from the session's spends"
            )
        return LocalDP(self.synthesizer.sets * 2.0 * self.delta)

    def randomise(self, answer: Any, rand: Randomness) -> Any:
        return self.synthesizer.run(answer, rand)

    def measured(self, output: Any) -> PseudoPosterior:
        return replace(self, delta=output.delta, report=tuple(self.synthesizer.report(output).items()))

    def describe(self) -> dict[str, Any]:
        return {
            "distribution": "draws from the risk-weighted pseudo posterior (NUTS), one per synthetic set",
            **({"Delta": self.delta, "epsilon_x_per_draw": 2.0 * self.delta} if self.delta is not None else {}),
            **dict(self.report),
        }


class PseudoPosteriorSynthesizer(Synthesizer):
    """Partially synthetic records: the response drawn from a risk-weighted pseudo posterior.

    >>> PseudoPosteriorSynthesizer.definition
    'local'
    >>> str(PseudoPosteriorSynthesizer(LocalDP(10.0), options={"response": "log(y)"}).relation)
    'response-removed of y'
    """

    name = "pseudo-posterior"
    summary = (
        "risk-weighted pseudo-posterior mechanism (Savitsky, Williams & Hu), optional range restriction; "
        "LOCAL asymptotic guarantee, not worst-case DP"
    )
    definition = "local"
    #: Not chosen on the command line: the method sets its local relation (:meth:`local_relation`).
    relations = (Relation("response-removed", response="the response"),)
    neighbours_note = (
        "local to the data set: one record's response removed from the likelihood (with range=a,b: moved "
        "within [a·y, b·y]); n and the predictors are public (each must be declared role: public)"
    )
    keep_private = "leave it out of predictors= (and out of --columns)"
    options = (
        Option("response", str, "the sensitive column to synthesize, or log(COL) for a normal model of its log (required)"),
        Option("predictors", str, "comma-separated predictor terms, e.g. log(Income),UrbanRural (default: every other column)"),
        Option("model", _model, f"{', '.join(MODEL_NAMES)} (default from the response's kind), or file.py:NAME (a RecordModel)"),
        Option(
            "weights",
            _choice("weights", ("linear", "lipschitz", "none")),
            "risk → weight map: linear (c(1−r)+g), lipschitz (∝ 1/Δ_i), none",
        ),
        Option("c", real("c", 0.0, MAX_SCALE, example=1.0), "linear map's scale c (default 1)"),
        Option("g", real("g", -1.0, 1.0, example=0.0), "linear map's shift g (default 0)"),
        Option("reweight", _flag, "raise low-risk records' weights toward the database bound (Hu, Savitsky & Williams 2020)"),
        Option(
            "target",
            real("target", 0.0, EPSILON_RANGE[1], open_low=True, example=2.0),
            "re-weight toward this ε_x per draw: α_i = min(1, (target/2)/Δ_i)",
        ),
        Option(
            "range",
            _range,
            "a,b: protect each response within [a·y, b·y] (0 < a < 1 < b): ε_x bounds moving one record's "
            "value anywhere in its range, every weight recomputed (built-in numeric models; not with reweight=)",
        ),
        Option(
            "standard",
            _choice("standard", ("truncated", "averaged")),
            "with range=: how risks and weights are set — truncated (S-001 Part 2, default) or averaged (Part 1); ε_x bounds the same move under both",
        ),
        Option(
            "eq3",
            _choice("eq3", EQ3_FORMS),
            "with standard=truncated: the form of S-001 eq. 3 reported beside ε_x as S001_eq3 (a neighbour that censors "
            "the value into its range, weights fixed) — scaled, dipsy's max α_i|f − log P(R_i)| (default), or printed, "
            "the paper's max |α_i f − log P(R_i)|; ε_x is the same under both",
        ),
        Option("chains", whole("chains", 1, MAX_CHAINS, 4), "MCMC chains (default 4)"),
        Option("warmup", whole("warmup", 10, MAX_WARMUP, 1000), "warm-up iterations per chain (default 1000)"),
        Option("draws", whole("draws", 10, MAX_DRAWS, 1000), "retained draws per chain (default 1000)"),
        Option(
            "target_accept",
            real("target_accept", 0.5, 0.99, example=0.8),
            "NUTS target acceptance (default 0.8; raise it after divergences)",
        ),
    )

    def relation_for(self, relation: Relation) -> Relation:
        """The local relation, before the domain says which predictors it leaves public (:meth:`plan`)."""
        return self.local_relation(_response_column(self.settings.get("response", "")) or "the response", ())

    def local_relation(self, response: str, predictors: tuple[str, ...]) -> Relation:
        """What the guarantee is local to: one record's ``response`` removed from the likelihood, or
        with ``range=a,b`` moved within ``[a·y, b·y]``; n and the ``predictors`` stay as they are."""
        if "range" in self.settings:
            return Relation("response-in-range", public=predictors, response=response, within=self.settings["range"])
        return Relation("response-removed", public=predictors, response=response)

    # -- plan ---------------------------------------------------------------------------------

    def design(self, domain: Domain) -> tuple[str, tuple]:
        """The response column and the predictors' design terms, checked against the domain (public inputs only)."""
        from .design import terms

        s = self.settings
        if "response" not in s:
            raise DipsyError("pseudo-posterior needs the column to synthesize", "pass --option response=COLUMN")
        response = _response_column(s["response"])
        if response not in domain.names:
            raise DipsyError(f"the response {response!r} is not a column in scope", f"use one of {', '.join(domain.names)}")
        spec = s.get("predictors") or ",".join(c for c in domain.names if c != response)
        design = terms(spec, domain)
        if any(t.column == response for t in design):
            raise DipsyError(f"the response {response!r} cannot also be a predictor", "leave it out of predictors=")
        used = {t.column for t in design} | {response}
        extra = [c for c in domain.names if c not in used]
        if extra:
            raise DipsyError(
                f"the column {extra[0]!r} is neither the response nor a predictor: the release would have to repeat it",
                "pass --columns with just the response and predictors, or add it to predictors=",
            )
        return response, tuple(design)

    def repeated_columns(self, domain: Domain) -> tuple[str, ...]:
        """The predictors: every record's values are released as they are."""
        return tuple(dict.fromkeys(t.column for t in self.design(domain)[1]))

    def plan(self, n: int | None, domain: Domain) -> Plan:
        s = self.settings
        response, design = self.design(domain)
        # The response is read as numbers or categories; a predictor's states are levels of their own, or
        # indicators beside its value (design.terms), but a response in a state has no place in the regression.
        domain[response].refuse_missing(
            f"{self.name} (a regression of the response on the predictors)",
            f"{self.name} models no missing response (it would take a two-part model): leave the column out, or "
            "drop missing: and pass --on-invalid drop",
        )
        logged = re.fullmatch(r"log\((.+)\)", s["response"].strip())
        self.log_response_ = bool(logged)
        if "standard" in s and "range" not in s:
            raise DipsyError("standard= applies to a sensitive range", "pass range=a,b too, or leave out standard=")
        if "eq3" in s and ("range" not in s or s.get("standard", DEFAULTS["standard"]) != "truncated"):
            raise DipsyError(
                "eq3= is the form of S-001 eq. 3, the range-truncated standard's figure",
                "pass range=a,b (standard=truncated, the default), or leave out eq3=",
            )
        mcmc = self.settings_mcmc()
        cells = mcmc.chains * mcmc.draws * (n or 0)
        if cells > MAX_LIKELIHOOD_CELLS:  # F[s, i] over every retained draw and record, twice (both fits), in float64
            raise DipsyError(
                f"{mcmc.chains} chains × {mcmc.draws} draws × {n} records make {cells:,} log-likelihood terms, more "
                f"than the {MAX_LIKELIHOOD_CELLS:,} (2 GiB each fit) the bound is computed over",
                "lower chains= or draws= (the bound needs thousands of draws, not more), or release fewer records",
            )
        col = domain[response]
        model = s.get("model") or ("categorical" if col.is_categorical else "poisson" if col.kind == "integer" else "normal")
        if isinstance(model, str):
            if col.is_categorical != (model == "categorical"):
                raise DipsyError(
                    f"the model {model!r} does not fit the {'categorical' if col.is_categorical else 'numeric'} column {response!r}",
                    "use model=categorical for a categorical response, and a numeric model otherwise",
                )
        if logged and (col.is_categorical or (isinstance(model, str) and model != "normal")):
            raise DipsyError(
                f"log({response}) is modelled on the log scale by a normal regression",
                f"use model=normal with response=log({response}), or response={response} with model=lognormal",
            )
        if "range" in s and (model == "categorical" or col.is_categorical):
            raise DipsyError(
                "a sensitive range [a·y, b·y] needs a numeric response", "leave out range= for a categorical response"
            )
        predictors = self.repeated_columns(domain)
        self.design_, self.response_, self.model_spec_ = list(design), response, model
        # The relation names what the release leaves public: n and the predictors, repeated as they are.
        self.relation = self.local_relation(response, predictors)
        standard = s.get("standard", DEFAULTS["standard"]) if "range" in s else "adp"
        self.standard_ = standard
        read_columns = (response, *predictors)
        read = Statistic(
            f"the values of {response} and of the predictors of every record", lambda engine: engine.records(read_columns)
        )
        # What the release repeats as it is: the predictors of every record (with no predictors, just n).
        shown = (
            Statistic(f"the predictors {', '.join(predictors)} of every record", lambda engine: engine.records(predictors))
            if predictors
            else Total()
        )
        measurements = [
            Measurement(
                f"{self.name}: {'the predictors of every record' if predictors else 'n'}, released as they are (declared public)",
                shown,
                DeclaredPublic(LocalDP(0.0), predictors),
                self.relation,
            )
        ]
        measurements.append(
            Measurement(
                f"{self.name}: {self.sets} draw(s) from the risk-weighted pseudo posterior of {response}",
                read,
                PseudoPosterior(self),
                self.relation,
            )
        )
        return Plan(
            tuple(measurements),
            self.relation,
            self._public(predictors),
            self._mechanism(standard),
            self._composition(),
            self._parameters(standard),
            narrowed=self._narrowed(standard),
            reveals=REVEALS,
        )

    def _public(self, predictors: tuple[str, ...]) -> tuple[str, ...]:
        out = [
            "n, the number of records (each synthetic set has one row per record)",
            "the domain (categories and bounds of the released columns)",
        ]
        if predictors:
            out.append(f"the predictors {', '.join(predictors)} of every record, released as they are")
        return tuple(out)

    def _narrowed(self, standard: str) -> str:
        """What the relation (:meth:`local_relation`, which names the neighbour) leaves to say: over
        what the change to the posterior is bounded."""
        if standard != "adp":
            self._refuse_unbounded_range()
        over = (
            "the change to the log pseudo posterior is bounded over the retained MCMC draws (as S-001 eq. 3 takes its "
            "maximum over them), not over every parameter value"
        )
        if standard == "adp":
            return over
        return over + "; the neighbour's risks are recomputed over this release's unweighted draws"

    def _refuse_unbounded_range(self) -> None:
        """Before any read: a range's ε_x needs a built-in model's shape (:func:`.range_bound.shape_of`) and a
        re-weighting target that one record's move cannot change (:func:`.range_bound.check_range_options`)."""
        model, s = self.model_spec_, self.settings
        if s.get("reweight"):
            raise DipsyError(
                "reweight=true cannot be combined with range=: the bound of a move within the range does not "
                "follow how one record's move changes the re-weighting target",
                "leave out reweight=, or pass target=EPSILON (a fixed target) instead",
            )
        if isinstance(model, ModelFile) or not isinstance(model, str):
            from .models import MODELS

            if isinstance(model, ModelFile) or type(model) not in {MODELS[m] for m in MODEL_NAMES if m != "categorical"}:
                raise DipsyError(
                    "range= needs a built-in model: its ε_x is a supremum over each record's range, which dipsy bounds "
                    "from the shape of the built-in models' log-likelihoods and cannot for a model of your own",
                    "use model=normal, lognormal, poisson or negative-binomial with range=, or leave out range= "
                    "(the no-range guarantee holds for any model)",
                )

    def _mechanism(self, standard: str) -> str:
        if standard == "adp":
            what = (
                "record weights from each record's Lipschitz bound, weighted refit; no sensitive range (asymptotic DP): "
                "ε_x = 2Δ, Δ the largest weighted log-likelihood contribution over the retained draws"
            )
        else:
            if standard == "truncated":
                form = self.settings.get("eq3", DEFAULTS["eq3"])
                risk = "range-truncated risk max_s |f − log P(R_i)| (S-001 Part 2)"
                beside = (
                    "S-001 eq. 3 in its "
                    + (
                        "printed form, max_s max_i |α_i f − log P(R_i)|"
                        if form == "printed"
                        else "scaled form (dipsy's), max_s max_i α_i |f − log P(R_i)|"
                    )
                    + ", is reported as S001_eq3, not stated: it bounds a different neighbour, the value replaced by "
                    "its range's mass with every weight fixed"
                )
            else:
                risk = (
                    "range-averaged risk (1 − λ_i) max_s |f| and exponent λ_i + (1 − λ_i) α_i — dipsy's reconstruction of "
                    "S-001 Part 1, which prints no formula for them"
                )
                beside = "not the reconstructed Part 1 figure max_s max_i (1 − λ_i) α_i |f|, which bounds replacing the value by its range"
            what = (
                f"record weights from each record's {risk}, weighted refit; ε_x = 2Δ the largest oscillation over the "
                "retained draws of the change to the log pseudo posterior when one record's value moves within its range "
                "[a·y, b·y], every weight recomputed — bounded over each range by branch and bound on the model's shape; "
                f"{beside}"
            )
        return (
            f"risk-weighted pseudo posterior (Savitsky, Williams & Hu 2022): unweighted fit, {what}; each synthetic set "
            f"draws {self.response_} from the posterior predictive of one thinned draw, given the predictors"
        )

    def _composition(self) -> str:
        if self.sets == 1:
            return "one set from one posterior draw: ε_x = 2Δ"
        return (
            f"sequential composition over {self.sets} sets, each from its own thinned posterior draw (local 2Δ each): "
            f"ε_x = {self.sets}·2Δ"
        )

    def _parameters(self, standard: str) -> dict[str, Any]:
        s = self.settings
        model = self.model_spec_
        return {
            "response": f"log({self.response_})" if self.log_response_ else self.response_,
            "predictors": [t.label for t in self.design_],
            "model": model
            if isinstance(model, str)
            else type(model).__name__
            if not isinstance(model, ModelFile)
            else model.attribute,
            "standard": standard,
            **({"range": list(s["range"])} if "range" in s else {}),
            **({"eq3": s.get("eq3", DEFAULTS["eq3"])} if standard == "truncated" else {}),
            "weights": s.get("weights", DEFAULTS["weights"]),
            **({"c": s.get("c", 1.0), "g": s.get("g", 0.0)} if s.get("weights", "linear") == "linear" else {}),
            **({"target": s["target"]} if "target" in s else {}),
            **({"reweight": True} if s.get("reweight") else {}),
            "mcmc": {
                **self.settings_mcmc().to_dict(),
                "randomness": "JAX threefry2x32 keyed with 64 bits drawn from the run's generator (ChaCha20 keyed from "
                "os.urandom unless seeded); the guarantee is for exact posterior draws",
            },
            "design_scaling": "numeric predictors centred and scaled by their public bounds (log bounds for log terms)",
        }

    def settings_mcmc(self):
        from .mechanism import MCMCSettings

        s = self.settings
        return MCMCSettings(
            chains=s.get("chains", DEFAULTS["chains"]),
            warmup=s.get("warmup", DEFAULTS["warmup"]),
            draws=s.get("draws", DEFAULTS["draws"]),
            target_accept=s.get("target_accept", DEFAULTS["target_accept"]),
        )

    # -- the mechanism's run (inside the measurement) --------------------------------------------

    def record_model(self, domain: Domain):
        from .models import MODELS, Categorical

        spec = self.model_spec_
        if isinstance(spec, ModelFile):
            return spec.model
        if not isinstance(spec, str):
            return spec
        if spec == "categorical":
            return Categorical(domain[self.response_].n_codes)
        return MODELS[spec]()

    def run(self, records: Records, rand: Randomness):
        """The mechanism on the confidential values (called inside the measurement only)."""
        import jax

        from .design import matrix
        from .draws import release_draws
        from .mechanism import Sampler

        model = self.record_model(self.domain_)
        column = self.domain_[self.response_]
        y = np.asarray((records.codes if column.is_categorical else records.numbers)[self.response_], dtype=float)
        _check_response(model, y, self.response_)
        if self.log_response_:
            if np.any(y <= 0):
                raise DipsyError(
                    f"log({self.response_}) needs {self.response_} > 0, and some records have {self.response_} <= 0",
                    f"use response={self.response_} with model=normal",
                )
            y = np.log(y)
        X = matrix(self.design_, records)
        key_data = rand.numpy.integers(0, 2**32, size=2, dtype=np.uint32)
        # jax takes any array as key data; its stubs ask for a jax.Array
        key = jax.random.wrap_key_data(key_data, impl="threefry2x32")  # type: ignore[arg-type]  # stubs too narrow
        s = self.settings
        a, b = s.get("range", (None, None))
        sampler = Sampler(model, X, y, self.settings_mcmc(), log_response=self.log_response_)
        outcome = release_draws(
            sampler,
            self.sets,
            key,
            self.standard_,
            a,
            b,
            s.get("weights", DEFAULTS["weights"]),
            s.get("c", DEFAULTS["c"]),
            s.get("g", DEFAULTS["g"]),
            bool(s.get("reweight")),
            s.get("target"),
            eq3=s.get("eq3", DEFAULTS["eq3"]),
        )
        self.model_ = model
        return outcome

    def report(self, outcome) -> dict[str, Any]:
        """What the statement reports of a run: Δ, the weights' summary, the diagnostics (see REVEALS)."""
        return {
            "standard": outcome.standard,
            "Delta_without_range": outcome.delta_adp,
            **(
                {
                    "S001_eq3": {
                        "form": outcome.eq3,
                        "Delta": outcome.delta_printed,
                        "epsilon_per_draw": 2.0 * outcome.delta_printed,
                        "formula": EQ3_FORMULAS[outcome.eq3],
                        "neighbour": "record i's value replaced by the knowledge that it lies in [a·y_i, b·y_i], its "
                        "likelihood term by its range's log mass, every weight held fixed",
                        "stated": False,
                    }
                }
                if outcome.eq3 is not None and outcome.delta_printed is not None
                else {}
            ),
            "weights_mean": float(np.mean(outcome.alpha)),
            "weights_min": float(np.min(outcome.alpha)),
            "unweighted_fit": outcome.unweighted.diagnostics(),
            "weighted_fit": outcome.weighted.diagnostics(),
            **({"warnings": list(outcome.warnings)} if outcome.warnings else {}),
        }

    def fit(self, session: Session, plan: Plan) -> PosteriorModel:
        self.domain_ = session.domain
        predictors = Records({}, {}, {})
        outcome = None
        for m in plan.measurements:
            out = session.measure(m)
            if isinstance(m.mechanism, DeclaredPublic):
                predictors = out if isinstance(out, Records) else predictors
                rows = out.rows if isinstance(out, Records) else int(out[0])
            else:
                outcome = out
        if outcome is None:  # plan() always ends with the pseudo-posterior's own measurement
            raise DipsyError("the plan has no pseudo-posterior measurement to fit from", "fit a plan made by this method")
        return PosteriorModel(
            session.domain,
            self.response_,
            self.design_,
            self.model_,
            predictors,
            rows,
            outcome.draws,
            self.sets,
            list(outcome.warnings),
            self.log_response_,
        )


#: What the release states as it is, and what each reveals of the confidential data.
REVEALS = (
    "Delta and epsilon_x = 2 Delta: without a range, the largest weighted log-likelihood contribution of any record over the "
    "retained draws, a function of the most isolated record's value (how far it lies from the model's fit); with range=, half "
    "the largest change one record's move within its range makes to the log pseudo posterior over the retained draws, a "
    "function of every record's value (chiefly of the riskiest records', whose moves shift every weight)",
    "Delta_without_range: the same release's bound with no sensitive range (for comparison), likewise",
    "S001_eq3 (standard=truncated): S-001 eq. 3 over the weighted draws in the form eq3= names, for comparison, not stated: "
    "a function of the record whose weighted log-likelihood lies farthest from its range's log mass",
    "weights_mean and weights_min: summaries of the records' weights, functions of their risks",
    "the MCMC diagnostics (max split R-hat, min bulk ESS, divergent transitions) and warnings: functions of the whole data set",
)


#: S-001 eq. (3) in each form ``eq3=`` takes (over the weighted fit's retained draws θ_s).
EQ3_FORMULAS = {
    "printed": "max_s max_i |α_i f_θs(y_i) − log P_θs(R_i)| (S-001 eq. 3 as printed)",
    "scaled": "max_s max_i α_i |f_θs(y_i) − log P_θs(R_i)| (dipsy's form of S-001 eq. 3)",
}


def _response_column(text: str) -> str:
    """The column of ``response=``: ``COL`` or ``log(COL)``.

    >>> _response_column("log(Expenditure)"), _response_column(" Income ")
    ('Expenditure', 'Income')
    """
    logged = re.fullmatch(r"log\((.+)\)", str(text).strip())
    return logged.group(1).strip() if logged else str(text).strip()


def _check_response(model, y: np.ndarray, name: str) -> None:
    kind = getattr(model, "kind", "real")
    if not np.all(np.isfinite(y)):
        raise DipsyError(f"the response {name} has missing or infinite values", "drop those records (--on-invalid drop)")
    if kind == "positive" and np.any(y <= 0):
        raise DipsyError(
            f"the {model.name} model needs {name} > 0, and some records have {name} <= 0 (log 0 is -inf)",
            "use model=normal, or a response without zeros",
        )
    if kind == "count" and (np.any(y < 0) or np.any(y != np.round(y))):
        raise DipsyError(f"the {model.name} model needs whole numbers >= 0 for {name}", "use model=normal for a real response")


@dataclass(frozen=True, eq=False)
class PosteriorModel(Model):
    """m thinned posterior draws and the public predictors; set k draws the response from draw k."""

    domain: Domain
    response: str
    design: Sequence
    record_model: Any
    predictors: Records
    rows: int
    draws: dict[str, np.ndarray]
    m: int
    warnings: list[str]
    log_response: bool = False

    @property
    def sets(self) -> int:
        return self.m

    def exchangeable(self) -> tuple[str, ...] | None:
        """None: row ``i`` is record ``i``'s predictors with a drawn response, so a rejected row is
        redrawn in its place (:mod:`dipsy.methods.enforce`)."""
        return None

    def choices(self) -> dict[str, Any]:
        return {"warnings": self.warnings} if self.warnings else {}

    def sample(self, k: int, rand: Randomness) -> pd.DataFrame:
        from .design import matrix

        theta = {name: np.asarray(v[k]) for name, v in self.draws.items()}
        X = matrix(self.design, self.predictors) if self.design else np.ones((self.rows, 1))
        y = self.record_model.predict(theta, X, rand.numpy)
        y = np.exp(y) if self.log_response else y
        out = {}
        for name in self.domain.names:
            c = self.domain[name]
            if name == self.response:
                out[name] = _response_values(y, c, rand.numpy)
            else:
                p = self.predictors
                out[name] = (
                    decode_column(p.codes[name], c, rand.numpy)
                    if c.is_categorical
                    else repeated_column(p.numbers[name], p.states.get(name), c)
                )
        return pd.DataFrame(out, columns=list(self.domain.names))


def _response_values(y: np.ndarray, col, rng: np.random.Generator) -> np.ndarray:
    """Synthetic values as the domain takes them: categories decoded; numbers kept inside the public
    bounds (clipped: post-processing); integers rounded."""
    if col.is_categorical:
        return decode_column(y.astype(np.int64), col, rng)
    y = np.clip(y, col.lower, col.upper)
    return np.round(y).astype(np.int64) if col.kind == "integer" else y
