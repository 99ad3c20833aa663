r"""The risk-weighted pseudo-posterior mechanism, on arrays (S-001; METHODS.md §3).

Notation (Savitsky, Williams & Hu 2022, "SWH"; Hu, Williams & Savitsky, range restriction, S-001):
``f_θ(x_i) = log p(x_i | θ)`` is record i's log-likelihood contribution; the retained MCMC draws
``θ_1 … θ_S`` stand in for the supremum over θ (S-001 eq. 3 takes the max over the draws).

Steps of one release (:func:`.draws.release_draws`):

1. fit the unweighted model; ``F[s, i] = f_{θ_s}(x_i)``;
2. each record's risk under the chosen standard (:func:`record_risk`):

   - ``adp`` (no range): the Lipschitz bound ``Δ_{x_i} = max_s |f_{θ_s}(x_i)|`` (SWH);
   - ``truncated`` (S-001 Part 2): ``max_s |f_{θ_s}(x_i) − log P_{θ_s}(R_i)|``, with
     ``P_θ(R_i) = P(b x_i | θ) − P(a x_i | θ)`` the model mass of the sensitive range
     ``R_i = [a x_i, b x_i]`` (eq. 3 at α = 1);
   - ``averaged`` (S-001 Part 1): ``(1 − λ_i) Δ_{x_i}`` with ``λ_i = Pr(x*_i ∉ R_i)`` under the
     posterior predictive, ``λ_i = 1 − (1/S) Σ_s P_{θ_s}(R_i)`` — exact given the draws; S-001
     defines λ_i but prints no risk or Lipschitz formula for Part 1, so this risk, the weights of
     step 4 and the figure of step 5 are dipsy's reconstruction (METHODS.md §3.2 [R]);

3. weights α_i from the risks (:func:`weights`: Hu's linear map or the Lipschitz-inverse rule,
   optionally raised toward the database bound);
4. refit with the weighted likelihood ``Σ_i w_i f_θ(x_i)`` where ``w_i = α_i`` — except under
   ``averaged``, where only the sensitive share of each contribution is down-weighted:
   ``w_i = λ_i + (1 − λ_i) α_i`` (S-001 Part 1: "the portion of each datum likelihood contribution
   deemed sensitive is then (1 − λ) ≤ 1 and is the only portion of the likelihood subject to risk
   down-weighting");
5. the local guarantee of one draw, ε_x, over the weighted fit's retained draws:

   - ``adp`` (no range; the neighbour removes one record's value from the likelihood, the weights
     held fixed, as in SWH): ``Δ_{α,x} = max_s max_i |α_i f_{θ_s}(x_i)|`` (:func:`database_bound`) and
     ``ε_x = 2Δ`` (SWH Theorem 3);
   - ``truncated`` and ``averaged`` (``range=a,b``; the neighbour *moves* one record's value anywhere
     in its sensitive range ``[a·x_i, b·x_i]``, S-001's reading of range restriction, and the
     mechanism recomputes every weight for it): ``ε_x`` is the largest oscillation over the draws of
     the change the move makes to the log pseudo posterior (:func:`.range_bound.move_bound`: its theorem, proof
     and caveats), and ``Δ = ε_x/2``. The standard decides the risks and weights (steps 2–4), not
     the neighbour. S-001's figures bound a different neighbour, one that replaces the
     record's likelihood by its range's (censored) mass: eq. 3, in either of two forms
     (``eq3=``, :data:`EQ3_FORMS`): as printed, ``max_s max_i |α_i f − log P_θ(R_i)|``, or
     dipsy's ``max_s max_i α_i |f − log P_θ(R_i)|`` (the weight on the whole range-truncated
     contribution of eq. 1; the default); and for Part 1, ``max_s max_i (1 − λ_i) α_i |f|``, dipsy's
     reconstruction (S-001 prints no formula for it; METHODS.md §3.2 [R]). They are computed by
     :func:`database_bound`, whose docstring proves what each bounds, and kept for comparison
     (``Outcome.delta_printed``; a truncated release reports eq. 3's as ``S001_eq3``), never stated:
     on the CE demo the averaged one says 0.30 per draw where a move within the range changes the
     log posterior by 1.8 (tests/test_pseudo_posterior.py checks the stated figure against moves);

6. m draws, evenly spaced over the retained ones, each generating one synthetic set.

Why an oscillation bounds one draw: if two data sets' weighted log-likelihoods differ by g(θ), every
set's posterior probability, and the density at every θ, moves by a factor within
``exp(±(sup g − inf g))`` (:func:`.range_bound.move_bound`); removing record i is ``g = α_i f_θ(x_i)``, whose
oscillation is at most ``2 sup |g| = 2Δ``. The bound is *local*: it is computed on this data set's
records (neighbours made from them), and over the draws rather than all θ — it contracts onto the
global bound as n grows (asymptotic DP).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.distributions.transforms import biject_to
from numpyro.handlers import seed, trace
from numpyro.infer.hmc import hmc
from numpyro.infer.util import constrain_fn, find_valid_initial_params, potential_energy

from ...errors import DipsyError
from .models import RecordModel

#: The standards: asymptotic DP (no range), range-truncated, range-averaged.
STANDARDS = ("adp", "truncated", "averaged")
#: The two forms of S-001 eq. (3) (:func:`database_bound`): ``scaled``, dipsy's
#: ``α_i |f − log P(R_i)|`` (the default), and ``printed``, the paper's ``|α_i f − log P(R_i)|``.
EQ3_FORMS = ("scaled", "printed")
#: A fit is refused when any parameter's split R-hat exceeds this, or its bulk ESS falls below
#: ESS_MIN; warned (recorded) when R-hat exceeds RHAT_WARN (Vehtari et al. 2021 recommend 1.01).
RHAT_MAX, RHAT_WARN, ESS_MIN = 1.05, 1.01, 100.0


@dataclass(frozen=True)
class MCMCSettings:
    """NUTS settings (Hoffman & Gelman 2014, as NumPyro implements it). Public: release.json states them."""

    chains: int = 4
    warmup: int = 1000
    draws: int = 1000
    target_accept: float = 0.8
    max_tree_depth: int = 10

    def to_dict(self) -> dict[str, Any]:
        return {
            "sampler": "NUTS (NumPyro)",
            "chains": self.chains,
            "warmup": self.warmup,
            "draws_per_chain": self.draws,
            "retained_draws": self.chains * self.draws,
            "target_accept": self.target_accept,
            "max_tree_depth": self.max_tree_depth,
        }


def weighted_model(record_model: RecordModel, X: Any, y: Any, w: Any) -> None:
    """θ ~ prior; ``target += Σ_i w_i f_θ(y_i | x_i)`` (the weighted pseudo log-likelihood)."""
    theta = record_model.prior(X.shape[1])
    numpyro.factor("weighted_log_likelihood", jnp.sum(w * record_model.log_likelihood(theta, X, y)))


@dataclass(frozen=True)
class Fit:
    """One MCMC fit: the retained draws (S = chains × draws, chains stacked) and its diagnostics."""

    draws: dict[str, np.ndarray]
    rhat: float
    ess: float
    divergences: int
    seconds: float

    @property
    def size(self) -> int:
        return len(next(iter(self.draws.values())))

    def diagnostics(self) -> dict[str, Any]:
        return {"max_split_rhat": self.rhat, "min_bulk_ess": self.ess, "divergent_transitions": self.divergences}


class Sampler:
    """NUTS on one model and one data set; the weights are an argument of the compiled program.

    The warm-up and sampling of every chain is one jitted program per model, MCMC settings and data
    shape (:func:`_nuts_program`), so a refit with other weights, another Sampler on data of the same
    shape, or another release in the same process runs without compiling again. (NumPyro's
    ``MCMC.run`` compiles its loop at every call — its ``fori_collect`` wraps the loop body in a new
    function each time — 5–9 s of every fit; benchmarks/pseudo_posterior.py.) The kernel is NumPyro's
    NUTS with its defaults: a start drawn uniform(−2, 2) in the unconstrained space, the step size and
    a diagonal mass matrix adapted during warm-up (Stan's windows), the warm-up draws discarded. The
    chains run one after another inside the program (``lax.map``): on a CPU that traces and compiles
    in about half the time of batched chains, and no chain waits for another's longest tree.
    """

    def __init__(
        self, record_model: RecordModel, X: np.ndarray, y: np.ndarray, settings: MCMCSettings, log_response: bool = False
    ) -> None:
        self.model, self.settings, self.log_response = record_model, settings, log_response
        self.X, self.y = jnp.asarray(X, dtype=jnp.float64), jnp.asarray(y, dtype=jnp.float64)
        self._nuts = _nuts_program(record_model, settings)
        # Compiled once per sampler, vectorised over draws (the range's ends are arguments).
        self._loglik = jax.jit(jax.vmap(lambda th: record_model.log_likelihood(th, self.X, self.y)))
        self._range_mass = jax.jit(jax.vmap(lambda th, lo, hi: record_model.log_interval(th, self.X, lo, hi), (0, None, None)))

    def fit(self, w: np.ndarray, key: Any) -> Fit:
        """Draws from ``ξ^w(θ | x) ∝ Π_i p(x_i | θ)^{w_i} ξ(θ)``."""
        start = time.perf_counter()
        samples, diverging, valid = self._nuts(self.X, self.y, jnp.asarray(w, dtype=jnp.float64), key)
        if not bool(np.all(np.asarray(valid))):
            raise DipsyError(
                "the model's log density is not finite at any of 100 starting points drawn for a chain",
                "check that the response fits the model (positive for lognormal, whole numbers for counts)",
            )
        grouped = {k: np.asarray(v) for k, v in samples.items()}
        seconds = time.perf_counter() - start
        rhat, ess = [], []
        for v in grouped.values():
            flat = v.reshape(v.shape[0], v.shape[1], -1)
            if self.settings.chains > 1:
                rhat.append(np.max(split_gelman_rubin(flat)))
            ess.append(np.min(effective_sample_size(flat)))
        draws = {k: v.reshape((-1,) + v.shape[2:]) for k, v in grouped.items()}
        divergences = int(np.sum(np.asarray(diverging)))
        return Fit(draws, float(max(rhat)) if rhat else float("nan"), float(min(ess)), divergences, seconds)

    def log_likelihood(self, fit: Fit) -> np.ndarray:
        """``F[s, i] = f_{θ_s}(x_i)`` for every retained draw s and record i."""
        return _per_draw(self._loglik, fit.draws)

    def log_range_mass(self, fit: Fit, a: float, b: float) -> np.ndarray:
        """``L[s, i] = log P_{θ_s}(R_i)``, ``R_i = [a x_i, b x_i]`` (the model mass of the sensitive range;
        for a response modelled on the log scale, ``[log a + log x_i, log b + log x_i]``)."""
        if self.log_response:
            lower, upper = self.y + math.log(a), self.y + math.log(b)
        else:  # a negative value's range runs from b·x to a·x
            lower, upper = jnp.minimum(a * self.y, b * self.y), jnp.maximum(a * self.y, b * self.y)
        return _per_draw(self._range_mass, fit.draws, lower, upper)


def _per_draw(g: Callable, draws: dict[str, np.ndarray], *args: Any, block: int = 500) -> np.ndarray:
    """``g`` (vectorised over draws) at every draw, in blocks of draws (bounded memory)."""
    size = len(next(iter(draws.values())))
    return np.concatenate(
        [np.asarray(g({k: jnp.asarray(v[s : s + block]) for k, v in draws.items()}, *args)) for s in range(0, size, block)]
    )


#: Compiled NUTS programs by model and settings (JAX keeps one executable per data shape under each).
_PROGRAMS: dict[Any, Callable] = {}
_PROGRAMS_KEPT = 8


def _model_key(record_model: RecordModel) -> Any:
    """Two models that trace alike share a program: the same class with the same attributes. (A
    program keeps its model alive, so an ``id`` in a key cannot be reused while the key is kept.)"""
    state = tuple(sorted(vars(record_model).items()))
    try:
        hash(state)
    except TypeError:  # an attribute that cannot be hashed: this instance only
        return (type(record_model), id(record_model))
    return (type(record_model), state)


def _nuts_program(record_model: RecordModel, settings: MCMCSettings) -> Callable:
    """``(X, y, w, key) -> (constrained draws by chain, divergences, valid start per chain)``, jitted.

    Per chain (the key split into ``chains``; each part split again into a start key and a kernel
    key, as NumPyro's vectorised HMC does): a valid start (``find_valid_initial_params``: uniform(−2, 2)
    in the unconstrained space, redrawn up to 100 times until the potential and its gradient are
    finite), NUTS's initial state with ``warmup`` adaptation steps, ``warmup`` transitions discarded,
    ``draws`` transitions kept and mapped to the constrained space.
    """
    key = (_model_key(record_model), settings)
    program = _PROGRAMS.get(key)
    if program is not None:
        return program
    model = functools.partial(weighted_model, record_model)

    def run(X: Any, y: Any, w: Any, key: Any) -> tuple[dict[str, Any], Any, Any]:
        args = (X, y, w)
        keys = jax.random.split(key, settings.chains)
        kernel_keys, start_keys = jnp.swapaxes(jax.vmap(jax.random.split)(keys), 0, 1)
        sites = trace(seed(model, 0)).get_trace(*args)  # the unconstrained parameters' shapes
        prototype = {
            k: biject_to(v["fn"].support).inv(v["value"])
            for k, v in sites.items()
            if v["type"] == "sample" and not v["is_observed"]
        }
        init_kernel, sample_kernel = hmc(potential_fn=functools.partial(potential_energy, model, args, {}), algo="NUTS")

        def chain(start: Any, k: Any) -> tuple[Any, Any, Any]:
            # The chain's start, drawn inside the chain's own map: with the keys of all chains
            # ``find_valid_initial_params`` maps this same search over them itself (``lax.map``), a
            # second loop around it that added 1 s (of 9) to every compile of the program.
            (z, _, _), valid = find_valid_initial_params(start, model, model_args=args, prototype_params=prototype)
            state = init_kernel(
                z,
                num_warmup=settings.warmup,
                target_accept_prob=settings.target_accept,
                max_tree_depth=settings.max_tree_depth,
                dense_mass=[],
                trajectory_length=None,
                rng_key=k,
            )

            # One scan over warm-up and sampling (the kernel adapts while its step count is below
            # ``warmup``): one copy of NUTS in the program (compiled in 6.1 s against 7.6 for two scans).
            def step(s: Any, _: Any) -> tuple[Any, tuple[Any, Any]]:
                s = sample_kernel(s)
                return s, (s.z, s.diverging)

            _, (zs, diverging) = jax.lax.scan(step, state, None, length=settings.warmup + settings.draws)
            return jax.tree.map(lambda a: a[settings.warmup :], zs), diverging[settings.warmup :], valid

        zs, diverging, valid = jax.lax.map(lambda a: chain(*a), (start_keys, kernel_keys))
        constrain = functools.partial(constrain_fn, model, args, {})
        return jax.vmap(jax.vmap(constrain))(zs), diverging, valid

    program = jax.jit(run)
    if len(_PROGRAMS) >= _PROGRAMS_KEPT:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    _PROGRAMS[key] = program
    return program


def check_fit(fit: Fit, what: str) -> list[str]:
    """Refuse a fit that did not converge; return warnings for one that is borderline.

    Refused: split R-hat > :data:`RHAT_MAX`, bulk ESS < :data:`ESS_MIN`, or divergent transitions
    (the draws then misrepresent the posterior, and Δ — a maximum over them — with it).
    """
    fix = "raise the MCMC settings (--option warmup=, draws=, target_accept=0.95), or simplify the model"
    if fit.divergences:
        raise DipsyError(
            f"the {what} fit had {fit.divergences} divergent transitions: its draws, and the Lipschitz "
            "bound computed over them, cannot be trusted",
            fix,
        )
    if fit.rhat > RHAT_MAX or fit.ess < ESS_MIN:
        raise DipsyError(
            f"the {what} fit did not converge (max split R-hat {fit.rhat:.3f} > {RHAT_MAX}, or min bulk ESS "
            f"{fit.ess:.0f} < {ESS_MIN:.0f})",
            fix,
        )
    return [f"the {what} fit's max split R-hat is {fit.rhat:.3f} (> {RHAT_WARN})"] if fit.rhat > RHAT_WARN else []


def lipschitz(F: np.ndarray) -> np.ndarray:
    """Record-level Lipschitz bounds ``Δ_{x_i} = max_s |f_{θ_s}(x_i)|`` (SWH), from ``F[s, i]``.

    >>> lipschitz(np.array([[-1.0, 2.0], [-3.0, 0.5]])).tolist()
    [3.0, 2.0]
    """
    return np.max(np.abs(F), axis=0)


def outside_probability(L: np.ndarray) -> np.ndarray:
    """``λ_i = Pr(x*_i ∉ R_i) = 1 − (1/S) Σ_s P_{θ_s}(R_i)`` under the posterior predictive (S-001 Part 1)."""
    return np.clip(1.0 - np.mean(np.exp(L), axis=0), 0.0, 1.0)


def _given(value: np.ndarray | None, what: str, standard: str) -> np.ndarray:
    """``value``, which the ``standard`` standard needs (None only under adp)."""
    if value is None:
        raise DipsyError(f"the {standard} standard needs {what}", "compute it from the sensitive range, as release_draws does")
    return value


def record_risk(standard: str, F: np.ndarray, L: np.ndarray | None = None) -> np.ndarray:
    """Each record's risk under ``standard`` from the unweighted fit (see the module's step 2)."""
    if standard == "adp":
        return lipschitz(F)
    if standard == "truncated":
        return np.max(np.abs(F - _given(L, "the log range masses L", standard)), axis=0)
    if standard == "averaged":
        return (1.0 - outside_probability(_given(L, "the log range masses L", standard))) * lipschitz(F)
    raise DipsyError(f"unknown privacy standard {standard!r}", f"use one of {', '.join(STANDARDS)}")


def weights(risk: np.ndarray, rule: str = "linear", c: float = 1.0, g: float = 0.0, raise_to: float | None = None) -> np.ndarray:
    r"""Record weights α_i ∈ [0, 1] from record risks (higher risk, lower weight).

    - ``linear`` (Hu's ``ComputeAlphas_constant``): ``r_i`` the risk min-max normalised to [0, 1],
      ``α_i = clip(c (1 − r_i) + g, 0, 1)``;
    - ``lipschitz`` (SWH; Hu, Savitsky & Williams 2020): ``α_i ∝ 1/Δ_{x_i}``, scaled so the least
      risky record gets 1: ``α_i = min_j Δ_j / Δ_i``;
    - ``none``: ``α_i = 1`` (the unweighted posterior; its ε is still reported).

    ``raise_to`` = B re-weights toward a database bound (Hu, Savitsky & Williams 2020): every record
    whose ``α_i Δ_i`` falls short of B is raised to ``min(1, B/Δ_i)``, and none is left above B:
    ``α_i = min(1, B/Δ_i)``. With B = max_i α_i Δ_i from the rule, the riskiest record keeps its
    weight and the others gain utility at (about) the same ε.

    >>> weights(np.array([1.0, 2.0, 3.0])).tolist()
    [1.0, 0.5, 0.0]
    >>> weights(np.array([1.0, 2.0, 4.0]), "lipschitz").tolist()
    [1.0, 0.5, 0.25]
    >>> weights(np.array([1.0, 2.0, 4.0]), "lipschitz", raise_to=1.5).tolist()
    [1.0, 0.75, 0.375]
    """
    risk = np.asarray(risk, dtype=float)
    alpha = weights_at(risk, risk.min(), risk.max(), rule, c, g)  # also refuses an unknown rule
    return alpha if raise_to is None else weights_at(risk, risk.min(), risk.max(), raise_to=raise_to)


def weights_at(
    risk: np.ndarray, lo: Any, hi: Any, rule: str = "linear", c: float = 1.0, g: float = 0.0, raise_to: float | None = None
) -> np.ndarray:
    r""":func:`weights` with the normaliser — the least and the largest risk of the data set — given as
    arguments (arrays broadcast): the move bound (:func:`.range_bound.move_bound`) asks what the rule gives when one
    record's risk, and with it the data set's least or largest risk, changes.

    An infinite ``hi`` (a risk without a finite bound) normalises every finite risk to 0 and an
    infinite one to 1. For ``lo <= risk <= hi`` the result lies in [0, 1]; outside (a record's old risk
    under a neighbour's normaliser) the linear map is still clipped and the Lipschitz rule is not.

    >>> weights_at(np.array([1.0, 2.0, 3.0]), 1.0, 5.0).tolist()
    [1.0, 0.75, 0.5]
    >>> weights_at(np.array([2.0, np.inf]), 1.0, np.inf).tolist()
    [1.0, 0.0]
    """
    risk = np.asarray(risk, dtype=float)
    if raise_to is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(risk > 0, np.minimum(1.0, raise_to / np.where(risk > 0, risk, 1.0)), 1.0)
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))
    if rule == "none":
        return np.ones(np.broadcast_shapes(risk.shape, lo.shape))
    if rule == "linear":
        span = hi - lo
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (risk - lo) / np.where(span > 0, span, 1.0)
        r = np.where(np.isinf(risk) & np.isinf(hi), 1.0, r)
        r = np.where(span > 0, r, 0.0)
        return np.clip(c * (1.0 - r) + g, 0.0, 1.0)
    if rule == "lipschitz":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(risk > 0, lo / np.where(risk > 0, risk, 1.0), 1.0)
    raise DipsyError(f"unknown weight rule {rule!r}", "use weights=linear, lipschitz or none")


def database_bound(
    standard: str,
    alpha: np.ndarray,
    F: np.ndarray,
    L: np.ndarray | None = None,
    lam: np.ndarray | None = None,
    eq3: str = "scaled",
) -> tuple[float, np.ndarray]:
    r"""(Δ, the per-record bounds) over the weighted fit's draws under ``standard`` (module step 5).

    ``adp``: ``max_s max_i |α_i f_{θ_s}(x_i)|`` (SWH). ``truncated``: S-001 eq. (3) in the form
    ``eq3`` names (:data:`EQ3_FORMS`), ``L[s, i] = log P_{θ_s}(R_i)``:

    - ``printed`` (the paper's, as printed): ``max_s max_i |α_i f_{θ_s}(x_i) − log P_{θ_s}(R_i)|``;
    - ``scaled`` (dipsy's reading): ``max_s max_i α_i |f_{θ_s}(x_i) − log P_{θ_s}(R_i)|``.

    ``averaged``: ``max_s max_i (1 − λ_i) α_i |f_{θ_s}(x_i)|`` — dipsy's reconstruction of S-001
    Part 1, whose formula the source does not print (METHODS.md §3.2 [R]).

    **What each truncated figure bounds** (S-001 Theorem 1, eq. 4, with the draws for Θ). The fit
    is ``ξ^w(θ | x) ∝ ξ(θ) exp Σ_j w_j f_θ(x_j)`` (module step 4). Take the *censoring* neighbour x'
    of record i, in which the record's exact value is replaced by the public knowledge that it
    lies in ``R_i`` and its term in the exponent by its range's log mass ``log P_θ(R_i)``, every
    other term and weight held fixed: at full weight (``printed``: the truncated likelihood of
    eq. 1, ``p_θ(x_i)^{α_i} / P_θ(R_i)``, the weight on the density only) or at the record's weight
    α_i (``scaled``: ``(p_θ(x_i) / P_θ(R_i))^{α_i}``, the weight on the whole range-truncated
    contribution). The two exponents differ by ``g_i(θ) = α_i f_θ(x_i) − log P_θ(R_i)``
    (printed) or ``α_i (f_θ(x_i) − log P_θ(R_i))`` (scaled), and by the oscillation theorem of
    :func:`.range_bound.move_bound`, ``|log ξ^w(B | x) − log ξ^{w'}(B | x')| <= sup g_i − inf g_i
    <= 2 sup_θ |g_i(θ)|`` for every measurable B. So 2Δ under either form bounds its own censoring
    neighbour, over the draws (the maximum of eq. 3 is over them) — a different neighbour from
    the one the release states under a range (a move within the range, every weight recomputed:
    :func:`.range_bound.move_bound`), so these figures are reported beside the stated ε_x, never
    as it. The printed ``g_i`` is the scaled one plus ``(1 − α_i) |log P_θ(R_i)|`` (``log P <= 0``),
    so the two forms agree at α_i = 1 and differ by at most that much; a record of weight 0 keeps
    ``|log P_θ(R_i)|`` under the printed form and 0 under the scaled one (the first record below).

    >>> F, L, a = np.array([[-2.0, -1.0]]), np.array([[-0.5, -3.0]]), np.array([0.5, 0.0])
    >>> database_bound("truncated", a, F, L, eq3="scaled")[1].tolist()
    [0.75, 0.0]
    >>> database_bound("truncated", a, F, L, eq3="printed")[1].tolist()
    [0.5, 3.0]
    """
    if eq3 not in EQ3_FORMS:
        raise DipsyError(f"unknown form of S-001 eq. 3 {eq3!r}", f"use eq3={' or eq3='.join(EQ3_FORMS)}")
    if standard == "adp":
        per = np.max(np.abs(alpha * F), axis=0)
    elif standard == "truncated":
        L = _given(L, "the log range masses L", standard)
        per = (
            np.max(np.abs(alpha * F - L), axis=0)
            if eq3 == "printed"  # eq. 3 as printed
            else alpha * np.max(np.abs(F - L), axis=0)
        )  # eq. 3 with α_i on the whole truncated term
    elif standard == "averaged":
        per = (1.0 - _given(lam, "the outside probabilities λ", standard)) * alpha * np.max(np.abs(F), axis=0)
    else:
        raise DipsyError(f"unknown privacy standard {standard!r}", f"use one of {', '.join(STANDARDS)}")
    return float(np.max(per)), per


def thin(size: int, m: int) -> np.ndarray:
    """Indices of m draws evenly spaced over ``size`` retained draws (the last of each block).

    >>> thin(4000, 4).tolist()
    [999, 1999, 2999, 3999]
    """
    if m > size:
        raise DipsyError(
            f"{m} synthetic sets need {m} posterior draws, and only {size} were retained", "raise --option draws= or lower --sets"
        )
    return np.arange(1, m + 1) * (size // m) - 1


@dataclass(frozen=True)
class Outcome:
    """What one release of the mechanism produced (private until the caller releases parts of it)."""

    standard: str
    delta: float  # Δ under the standard, over the weighted draws
    delta_adp: float  # the same release's Δ with no range, max |w_i f| (equals ``delta`` under adp)
    alpha: np.ndarray
    effective: np.ndarray  # w_i, the exponent each record's likelihood gets in the fit
    draws: dict[str, np.ndarray]  # the m thinned draws
    unweighted: Fit
    weighted: Fit
    record_bounds: np.ndarray
    warnings: tuple[str, ...] = ()
    lam: np.ndarray | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    #: Under a range standard: S-001 eq. 3's Δ (a neighbour that censors the record into its range),
    #: for comparison only — ``delta`` is the bound of a move within the range (:func:`.range_bound.move_bound`).
    delta_printed: float | None = None
    worst: int | None = None  # the record whose move attains ε_x (private)
    eq3: str | None = None  # under truncated, the form of eq. 3 ``delta_printed`` takes (:data:`EQ3_FORMS`)

    @property
    def epsilon(self) -> float:
        """The local guarantee of one draw, ε_x = 2Δ."""
        return 2.0 * self.delta
