r"""The local guarantee of a range standard: one record's value moved anywhere in its range (S-001).

Under ``range=a,b`` the neighbour of the confidential data set x moves one record's value y_i to
any y' in its sensitive range ``[a·y_i, b·y_i]``, and the mechanism (:mod:`.mechanism`) recomputes
every record's risk and weight for it. :func:`move_bound` bounds the change that move makes to the
log pseudo posterior over the retained draws; its oscillation is the release's ε_x per draw
(:func:`.draws.release_draws` calls it). The supremum over each range is bounded by branch and
bound on cells of the range, exact or tangent-bounded on the built-in models' shapes
(:func:`shape_of`); a model without a known shape is refused (:func:`check_range_options`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import DipsyError
from .mechanism import Fit, Sampler, weights_at
from .models import RecordModel, log_normal_interval

# -- the move bound: ε_x under a range standard --------------------------------------------------

#: How :func:`move_bound` cuts each record's sensitive range: into COARSE_CELLS cells, then (branch
#: and bound) each cell whose bound could be the largest into SPLIT, up to DEPTH times — cells of
#: 1/2048 of the range at most. The bound is sound inside every cell; its slack shrinks with the
#: cells' width.
COARSE_CELLS, SPLIT, DEPTH = 4, 8, 3
#: Points per side of the risk normaliser's path in :func:`move_bound` (step 4).
NORMALISER_POINTS = 64
#: Draws × cells the branch and bound of :func:`move_bound` cuts per round: it takes the cells of the
#: largest bounds first, so this decides which cells are cut, and with them the bound.
BATCH_ELEMENTS = 2**21
#: Draws × rows per compiled block (bounded memory: about 16 MB per array). A round's cells are
#: evaluated in blocks of this size, the last padded to it (one compiled shape per function): it sets
#: memory and speed only, and a bound's last digit (sums over the draws round by the block's shape).
BLOCK_ELEMENTS = 2**21


@dataclass(frozen=True)
class Shape:
    """How a built-in model's ``f_θ(y)`` varies with the value y: what :func:`move_bound` needs to bound
    a supremum over a range, found with :func:`shape_of`.

    ``family``: ``quadratic`` (normal; lognormal in ``u = log y`` with its Jacobian ``−u``: a concave
    quadratic in u), ``poisson`` (concave in y), ``negative-binomial`` (concave in y for φ >= 1, convex
    and decreasing for φ < 1). ``scale``: the variable u the range is cut into cells in, and how
    ``[a·y, b·y]`` reads in it — ``additive`` (a log response, u = log y: ``[u + log a, u + log b]``),
    ``log`` (lognormal, u = log y, the same window), ``linear`` (u = y), ``integer`` (counts: the whole
    numbers in ``[a·y, b·y]``). ``jacobian`` is J in ``−J u`` (1 for the lognormal density of y).
    """

    family: str
    scale: str
    jacobian: float = 0.0

    @property
    def window(self) -> bool:
        """The range is a fixed window ``[u + log a, u + log b]`` around u under a normal model: then the
        range's mass is log-concave in u and ``f − log P(R)`` concave (:func:`_risk_edges`)."""
        return self.family == "quadratic" and self.scale in ("additive", "log")


def shape_of(record_model: RecordModel, log_response: bool = False) -> Shape:
    """The :class:`Shape` of a built-in model; a range standard is refused for any other.

    The type is matched exactly: a subclass may change ``log_likelihood``, and with it the shape
    the bound's proof rests on.
    """
    from .models import LogNormal, NegativeBinomial, Normal, Poisson

    kind = type(record_model)
    if kind is Normal:
        return Shape("quadratic", "additive" if log_response else "linear")
    if kind is LogNormal and not log_response:
        return Shape("quadratic", "log", 1.0)
    if kind is Poisson and not log_response:
        return Shape("poisson", "integer")
    if kind is NegativeBinomial and not log_response:
        return Shape("negative-binomial", "integer")
    raise DipsyError(
        f"a sensitive range needs a model whose log-likelihood dipsy can bound over the range; "
        f"{getattr(record_model, 'name', kind.__name__)!r} is not one of the built-in models",
        "use model=normal, lognormal, poisson or negative-binomial with range=, or leave out range= "
        "(the no-range bound holds for any model)",
    )


def check_range_options(record_model: Any, log_response: bool = False, reweight: bool = False) -> None:
    """Refuse what :func:`move_bound` cannot bound: a model without a known shape (:func:`shape_of`), and
    ``reweight`` (its target is the largest weighted risk over all records, which one record's move
    changes in a way the bound does not follow; ``target=`` fixes the target instead)."""
    shape_of(record_model, log_response)
    if reweight:
        raise DipsyError(
            "reweight=true cannot be combined with range=: the bound of a move within the range does not "
            "follow how one record's move changes the re-weighting target",
            "leave out reweight=, or pass target=EPSILON (a fixed target) instead",
        )


def range_of(shape: Shape, y: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each record's sensitive range ``[a·y, b·y]`` in the shape's variable u, as ``[lo, hi]`` (counts:
    the whole numbers ``lo .. hi − 1``), and the record's own u.

    ``y`` is the response as the sampler holds it (the log for a log response). A count's range is
    taken with a margin of 1e-9, so that a product like 0.6 × 5, which rounds to
    3.0000000000000004, still admits 3 (more neighbours, never fewer).
    """
    y = np.asarray(y, dtype=float)
    if shape.scale == "integer":
        return np.ceil(a * y - 1e-9), np.floor(b * y + 1e-9) + 1.0, y
    if shape.scale == "additive":
        return y + math.log(a), y + math.log(b), y
    if shape.scale == "log":
        u = np.log(y)
        return u + math.log(a), u + math.log(b), u
    return np.minimum(a * y, b * y), np.maximum(a * y, b * y), y


def split_cells(shape: Shape, lo: np.ndarray, hi: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``[lo, hi]`` cut into k cells: their ends (m × (k + 1)) and which hold a value (m × k; a count
    cell ``[l, next l)`` holds the whole numbers up to ``next l − 1``, and may hold none). Cutting a
    cell of ``split_cells(..., k0)`` again gives cells that partition it.

    >>> ends, valid = split_cells(Shape("poisson", "integer"), np.array([3.0]), np.array([7.0]), 8)
    >>> ends[0, :-1][valid[0]].tolist()
    [3.0, 4.0, 5.0, 6.0]
    """
    j = np.arange(k + 1)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if shape.scale == "integer":
        ends = lo[:, None] + np.floor(j * (hi - lo)[:, None] / k)
        return ends, ends[:, 1:] > ends[:, :-1]
    ends = lo[:, None] + (hi - lo)[:, None] * (j / k)
    ends[:, -1] = hi
    return ends, np.ones((len(lo), k), dtype=bool)


def record_cells(shape: Shape, y: np.ndarray, a: float, b: float, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each record's sensitive range cut into k cells: (ends, own u, valid) — :func:`range_of` then :func:`split_cells`."""
    lo, hi, u = range_of(shape, y, a, b)
    ends, valid = split_cells(shape, lo, hi, k)
    return ends, u, valid


def _cell_right(shape: Shape, ends: Any) -> Any:
    """The cells' right ends: a count cell ``[l, next l)`` holds the whole numbers up to ``next l − 1``."""
    return ends[..., 1:] - 1.0 if shape.scale == "integer" else ends[..., 1:]


def _neighbour_range(shape: Shape, u: Any, a: float, b: float, xp: Any = jnp) -> tuple[Any, Any]:
    """The range ``[a·y', b·y']`` a record moved to u has, as the sampler's response (both ends rise with u).

    ``xp`` is the array module: ``jnp`` inside compiled functions, NumPy outside them (JAX would
    compile each operation anew for every data shape)."""
    if shape.window:
        return (u + xp.log(a), u + xp.log(b)) if shape.scale == "additive" else (a * xp.exp(u), b * xp.exp(u))
    return xp.minimum(a * u, b * u), xp.maximum(a * u, b * u)


def _quadratic_extremes(c0: Any, c1: Any, c2: Any, zl: Any, zr: Any) -> tuple[Any, Any]:
    """Exact (min, max) of ``c0 + c1 z + c2 z²`` over ``[zl, zr]``: at the ends or the vertex."""
    vl, vr = c0 + c1 * zl + c2 * zl**2, c0 + c1 * zr + c2 * zr**2
    curved = c2 != 0
    zs = jnp.where(curved, -c1 / (2.0 * jnp.where(curved, c2, 1.0)), zl)
    inside = curved & (zs > zl) & (zs < zr)
    vs = jnp.where(inside, c0 + c1 * zs + c2 * zs**2, vl)
    return jnp.minimum(jnp.minimum(vl, vr), vs), jnp.maximum(jnp.maximum(vl, vr), vs)


def _special(xp: Any) -> Any:
    """SciPy's special functions beside NumPy, JAX's beside jax.numpy. The count models' shape code runs
    on NumPy: XLA takes seconds to compile digamma and lgamma, SciPy none."""
    if xp is np:
        import scipy.special

        return scipy.special
    return jax.scipy.special


def _convex_floor(vl: Any, vr: Any, sl: Any, sr: Any, l: Any, r: Any, xp: Any = jnp) -> Any:
    """A lower bound of a convex function on ``[l, r]`` from its ends' values and slopes.

    It lies above both end tangents, so its minimum is at least the lowest point of their upper
    envelope: the left end when it rises there (``sl >= 0``), the right end when it falls there
    (``sr <= 0``), else the tangents' crossing (in [l, r] by convexity).
    """
    denominator = xp.where(sl < sr, sl - sr, -1.0)
    t = xp.clip((vr - vl + sl * l - sr * r) / denominator, l, r)
    return xp.where(sl >= 0, vl, xp.where(sr <= 0, vr, vl + sl * (t - l)))


def _curved_extremes(vl: Any, vr: Any, sl: Any, sr: Any, l: Any, r: Any, convex: Any, xp: Any = jnp) -> tuple[Any, Any]:
    """(lower, upper) bounds over ``[l, r]`` of a function whose curvature has a known sign there: a
    convex one's maximum is at an end and its minimum above :func:`_convex_floor`; a concave one mirrored."""
    floor = _convex_floor(vl, vr, sl, sr, l, r, xp)
    ceiling = -_convex_floor(-vl, -vr, -sl, -sr, l, r, xp)
    return xp.where(convex, floor, xp.minimum(vl, vr)), xp.where(convex, xp.maximum(vl, vr), ceiling)


def _nb_terms(eta: Any, phi: Any, xp: Any = jnp) -> tuple[Any, Any]:
    """``log(μ/(φ+μ))`` and ``φ log(φ/(φ+μ))`` of the NB2 model, from ``η = log μ``."""
    log_total = xp.logaddexp(xp.log(phi), eta)
    return eta - log_total, phi * (xp.log(phi) - log_total)


def _nb_log_pmf(y: Any, eta: Any, phi: Any, xp: Any = jnp) -> Any:
    log_q, intercept = _nb_terms(eta, phi, xp)
    gl = _special(xp).gammaln
    return gl(y + phi) - gl(phi) - gl(y + 1.0) + intercept + y * log_q


def _f_extremes(shape: Shape, theta: dict[str, Any], X: Any, l: Any, r: Any, xp: Any = jnp) -> tuple[Any, Any]:
    """Bounds of ``f_θ(u)`` over each cell ``[l, r]`` at every draw (S × rows): exact for the quadratic
    family (a concave quadratic: ends and vertex); for counts exact on the side where the extremum
    is at an end, tangent-bounded on the other (:func:`_curved_extremes`)."""
    eta = theta["beta"] @ X.T
    if shape.family == "quadratic":
        sigma = theta["sigma"][:, None]

        def f(u):
            return -0.5 * math.log(2 * math.pi) - xp.log(sigma) - 0.5 * ((u - eta) / sigma) ** 2 - shape.jacobian * u

        return xp.minimum(f(l), f(r)), f(xp.clip(eta - shape.jacobian * sigma**2, l, r))
    sp = _special(xp)
    if shape.family == "poisson":  # f'' = −ψ'(y + 1) < 0

        def f(y):
            return y * eta - xp.exp(eta) - sp.gammaln(y + 1.0)

        return _curved_extremes(f(l), f(r), eta - sp.digamma(l + 1.0), eta - sp.digamma(r + 1.0), l, r, False, xp)
    phi = theta["phi"][:, None]  # f'' = ψ'(y + φ) − ψ'(y + 1): convex for φ < 1, concave otherwise
    log_q, _ = _nb_terms(eta, phi, xp)
    slope = lambda y: sp.digamma(y + phi) - sp.digamma(y + 1.0) + log_q  # noqa: E731
    return _curved_extremes(
        _nb_log_pmf(l, eta, phi, xp),
        _nb_log_pmf(r, eta, phi, xp),
        slope(l),
        slope(r),
        l,
        r,
        xp.broadcast_to(phi < 1.0, eta.shape),
        xp,
    )


def _d_extremes(shape: Shape, theta: dict[str, Any], X: Any, l: Any, r: Any, u: Any, xp: Any = jnp) -> tuple[Any, Any]:
    """Bounds over each cell of ``d_s(u') = f_{θ_s}(u') − f_ref(u')``, f less a function of u' that is
    the same at every draw (it cancels in the oscillation over draws).

    Quadratic family: ``f_s(u + z) = c0_s + c1_s z + c2_s z²`` (+ terms free of θ) around the record's
    own u; the reference is the draws' mean of each coefficient, so d_s is a quadratic in z and its
    extremes exact. Poisson: the reference is the mean of ``f_s`` itself,
    ``d_s(y') = d_s(y) + (y' − y)(η_s − η̄)``, linear: exact at the ends. Negative binomial: the
    reference is the NB2 log pmf at ``η̄`` (the draws' mean) and ``φ̄`` (their geometric mean), so
    ``d_s'' = ψ'(y + φ_s) − ψ'(y + φ̄)`` has the sign of ``φ̄ − φ_s`` (ψ' falls): exact on one side,
    tangent-bounded on the other.
    """
    eta = theta["beta"] @ X.T
    if shape.family == "quadratic":
        sigma = theta["sigma"][:, None]
        c0 = -xp.log(sigma) - 0.5 * ((u - eta) / sigma) ** 2
        c1, c2 = -(u - eta) / sigma**2, -0.5 / sigma**2 * xp.ones_like(eta)  # −J u is the same at every draw
        return _quadratic_extremes(c0 - c0.mean(0), c1 - c1.mean(0), c2 - c2.mean(0), l - u, r - u)
    if shape.family == "poisson":
        c0, c1 = u * eta - xp.exp(eta), eta
        c0, c1 = c0 - c0.mean(0), c1 - c1.mean(0)
        vl, vr = c0 + c1 * (l - u), c0 + c1 * (r - u)
        return xp.minimum(vl, vr), xp.maximum(vl, vr)
    sp = _special(xp)
    phi = theta["phi"][:, None]
    phi_ref, eta_ref = xp.exp(xp.mean(xp.log(phi))), eta.mean(0)
    log_q, _ = _nb_terms(eta, phi, xp)
    log_q_ref, _ = _nb_terms(eta_ref, phi_ref, xp)
    d = lambda y: _nb_log_pmf(y, eta, phi, xp) - _nb_log_pmf(y, eta_ref, phi_ref, xp)  # noqa: E731
    slope = lambda y: sp.digamma(y + phi) - sp.digamma(y + phi_ref) + log_q - log_q_ref  # noqa: E731
    return _curved_extremes(d(l), d(r), slope(l), slope(r), l, r, xp.broadcast_to(phi < phi_ref, eta.shape), xp)


def _abs_extremes(lo: Any, hi: Any, xp: Any = jnp) -> tuple[Any, Any]:
    """Bounds of ``|v|`` for v in ``[lo, hi]`` (``xp``: the array module, as in :func:`_neighbour_range`)."""
    return (xp.where((lo <= 0) & (hi >= 0), 0.0, xp.minimum(xp.abs(lo), xp.abs(hi))), xp.maximum(xp.abs(lo), xp.abs(hi)))


def _risk_from(standard: str, f_lo: Any, f_hi: Any, m_lo: Any, m_hi: Any, xp: Any = jnp) -> tuple[Any, Any, Any, Any]:
    """Bounds on the moved record's risk and λ from per-draw bounds of f and of ``log P(R)`` over a cell
    (for ``truncated``, ``m_lo``/``m_hi`` bound ``f − log P(R)`` itself; ``xp`` as in :func:`_neighbour_range`)."""
    if standard == "truncated":  # ρ = max_s |f_s(y') − log P_s(R(y'))|
        t_lo, t_hi = _abs_extremes(m_lo, m_hi, xp)
        zero = xp.zeros(t_lo.shape[1:])
        return t_lo.max(0), t_hi.max(0), zero, zero
    # averaged: ρ = (1 − λ) max_s |f_s(y')|, 1 − λ = mean_s P_s(R(y')), clipped to [0, 1] as the mechanism does
    a_lo, a_hi = _abs_extremes(f_lo, f_hi, xp)
    p_lo = xp.clip(xp.exp(m_lo).mean(0), 0.0, 1.0)
    p_hi = xp.clip(xp.exp(xp.minimum(m_hi, 0.0)).mean(0), 0.0, 1.0)
    return p_lo * a_lo.max(0), p_hi * a_hi.max(0), 1.0 - p_hi, 1.0 - p_lo


@functools.partial(jax.jit, static_argnums=(1,))
def _risk_edges(jacobian: Any, standard: str, theta: dict[str, Any], X: Any, ends: Any, a: float, b: float) -> tuple[Any, ...]:
    r"""Risk and λ bounds per cell for a normal model on a window (:attr:`Shape.window`), from the
    values and slopes at the cells' ends only (records × cells; step 2 of :func:`move_bound`).
    ``jacobian`` is the shape's J, an argument rather than part of the compiled function's key: the
    lognormal and a normal model on a log response share one program.

    With ``z = (u − μ)/σ`` and the window ``[z + A, z + B]`` (``A = log a/σ < 0 < B = log b/σ``), the
    range's mass ``m(z) = ∫_A^B φ(z + v) dv`` has ``m' = φ(z + B) − φ(z + A) = −m E W`` and
    ``m'' = m (E W² − 1)`` (differentiate under the integral, ``φ'(x) = −x φ(x)``), W the standard
    normal truncated to the window; so ``(log m)' = −E W`` and ``(log m)'' = Var W − 1``. A truncated normal's variance is below 1, so log m is
    concave (averaged: ``P_s`` between the smaller end and the tangents' ceiling), and
    ``f − log m = −z²/2 − log m − J u + const`` has second derivative ``−Var W <= 0`` in z: concave too
    (truncated: the same two bounds). f itself is a concave quadratic (exact extremes).
    """
    mu = (theta["beta"] @ X.T)[:, :, None]
    sigma = theta["sigma"][:, None, None]
    u = ends[None]
    z = (u - mu) / sigma
    half_log_2pi = 0.5 * math.log(2 * math.pi)

    def log_density(v):
        return -half_log_2pi - jnp.log(sigma) - 0.5 * ((v - mu) / sigma) ** 2 - jacobian * v

    f, df = log_density(u), -z / sigma - jacobian
    zl, zh = z + jnp.log(a) / sigma, z + jnp.log(b) / sigma
    lm = log_normal_interval(zl, zh)
    dlm = (jnp.exp(-half_log_2pi - 0.5 * zh**2 - lm) - jnp.exp(-half_log_2pi - 0.5 * zl**2 - lm)) / sigma  # m' = φ(z+B) − φ(z+A)
    l, r = u[..., :-1], u[..., 1:]
    L, R = slice(None, -1), slice(1, None)
    f_lo = jnp.minimum(f[..., L], f[..., R])
    f_hi = log_density(jnp.clip(mu - jacobian * sigma**2, l, r))  # the vertex, in the cell
    if standard == "truncated":
        h, dh = f - lm, df - dlm
        lo, hi = _curved_extremes(h[..., L], h[..., R], dh[..., L], dh[..., R], l, r, False)
    else:
        lo, hi = _curved_extremes(lm[..., L], lm[..., R], dlm[..., L], dlm[..., R], l, r, False)
    return _risk_from(standard, f_lo, f_hi, lo, hi)


@functools.partial(jax.jit, static_argnums=(1,))
def _risk_around(
    jacobian: Any, standard: str, theta: dict[str, Any], X: Any, t: Any, F: Any, L: Any, ends: Any, a: float, b: float
) -> tuple[Any, ...]:
    r"""Risk and λ bounds per cell for a normal model on a window (:attr:`Shape.window`) from what the
    mechanism computed at the record's own value t only — ``F = f_s(t)`` and ``L = log m_s(t)`` (S ×
    records) — with no new mass: the coarse pass of :func:`move_bound` (``jacobian`` as in :func:`_risk_edges`).

    In z = (u − μ)/σ both ``log m`` and ``h = f − log m`` have second derivatives in [−1, 0]
    (:func:`_risk_edges`: ``Var W − 1`` and ``−Var W``, and a truncated normal's variance is at most 1),
    so each lies below its tangent at t and above that tangent less ``(u − t)²/(2σ²)`` (a concave
    curve: its least value on a cell is at an end). Also above a Lipschitz line: ``h' = (E W − z)/σ − J``
    with ``E W − z ∈ [A, B]``; ``(log m)' = −E W/σ`` with E W in the window, so at most
    ``max(|z + A|, |z + B|)/σ`` at the extremes of z between t and the cell. f: exact (a concave quadratic).
    """
    mu = theta["beta"] @ X.T  # S × records
    sigma = theta["sigma"][:, None]
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    A, B = jnp.log(a) / sigma, jnp.log(b) / sigma
    z = (t - mu) / sigma
    dlm = (jnp.exp(-half_log_2pi - 0.5 * (z + B) ** 2 - L) - jnp.exp(-half_log_2pi - 0.5 * (z + A) ** 2 - L)) / sigma
    dh = -z / sigma - jacobian - dlm  # the slope of h = f − log m at t
    mu, sigma, t3 = mu[..., None], sigma[..., None], t[None, :, None]
    l, r = ends[None, :, :-1] - t3, ends[None, :, 1:] - t3  # the cell, from t

    far = jnp.maximum(jnp.abs(l), jnp.abs(r))

    def between(value, slope, steep):  # (least, largest) over the cell, from the value and slope at t and a bound on |slope|
        top = value[..., None] + jnp.maximum(slope[..., None] * l, slope[..., None] * r)
        low = value[..., None] + jnp.minimum(
            slope[..., None] * l - 0.5 * (l / sigma) ** 2, slope[..., None] * r - 0.5 * (r / sigma) ** 2
        )
        return jnp.maximum(low, value[..., None] - steep * far), top

    def log_density(v):
        return -half_log_2pi - jnp.log(sigma) - 0.5 * ((v - mu) / sigma) ** 2 - jacobian * v

    f_lo = jnp.minimum(log_density(l + t3), log_density(r + t3))
    f_hi = log_density(jnp.clip(mu - jacobian * sigma**2, l + t3, r + t3))
    if standard == "truncated":  # h' = (E W − z)/σ − J and E W − z ∈ [A, B]
        return _risk_from(standard, f_lo, f_hi, *between(F - L, dh, jnp.maximum(-A, B)[..., None] / sigma + jacobian))
    # (log m)' = −E W / σ, E W in the window: |(log m)'| <= max(|z + A|, |z + B|)/σ at the extremes of z from t to the cell
    z_ends = ((t3 + jnp.minimum(l, 0.0)) - mu) / sigma, ((t3 + jnp.maximum(r, 0.0)) - mu) / sigma
    steep = jnp.maximum(*(jnp.maximum(jnp.abs(e + A[..., None]), jnp.abs(e + B[..., None])) for e in z_ends)) / sigma
    return _risk_from(standard, f_lo, f_hi, *between(L, dlm, steep))


_f_cells = jax.jit(_f_extremes, static_argnums=(0,))


def _count_log_mass(shape: Shape, theta: dict[str, Any], X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``log P(⌈lower⌉ <= Y <= ⌊upper⌋)`` at every draw (S × rows) for the Poisson and NB2 models, by the
    formula of :func:`.models._count_interval` (CDF difference, floored at 1e-300) — the mass the
    mechanism itself computes for a moved record — with SciPy's incomplete gamma and beta functions
    (JAX's are slower by two orders of magnitude on a CPU)."""
    from scipy.special import betainc, gammaincc

    mu = np.exp(np.asarray(theta["beta"]) @ X.T)

    def cdf(k):
        if shape.family == "poisson":
            return np.where(k < 0, 0.0, gammaincc(k + 1.0, mu))
        phi = np.asarray(theta["phi"])[:, None]
        return np.where(k < 0, 0.0, betainc(phi, np.maximum(k, 0) + 1.0, phi / (phi + mu)))

    with np.errstate(divide="ignore"):
        return np.log(np.clip(cdf(np.floor(upper)) - cdf(np.ceil(lower) - 1.0), 1e-300, None))


def _risk_cells(
    shape: Shape,
    record_model: RecordModel,
    standard: str,
    theta: dict[str, Any],
    X: np.ndarray,
    l: np.ndarray,
    r: np.ndarray,
    a: float,
    b: float,
) -> tuple[Any, ...]:
    """Risk and λ bounds per cell (row) for the other built-in models (step 2 of :func:`move_bound`):
    the range a value in ``[l, r]`` has holds the cell's intersection ``[lo(r), hi(l)]`` and lies in
    its union ``[lo(l), hi(r)]`` (both ends of the range rise with the value, also as rounded floats),
    so its mass lies between theirs; f's extremes from :func:`_f_extremes`."""
    with np.errstate(all="ignore"):  # in NumPy as JAX computes it: an overflow is inf, 0 · inf is NaN, silently
        lo_l, hi_l = _neighbour_range(shape, np.asarray(l), a, b, np)
        lo_r, hi_r = _neighbour_range(shape, np.asarray(r), a, b, np)
    empty = lo_r > hi_l
    if shape.scale == "integer":
        union = _count_log_mass(shape, theta, X, lo_l, hi_r)
        inner = _count_log_mass(shape, theta, X, np.where(empty, lo_l, lo_r), np.where(empty, hi_r, hi_l))
    else:
        mass = _log_mass(record_model)
        union = np.asarray(mass(theta, jnp.asarray(X), lo_l, hi_r))
        inner = np.asarray(mass(theta, jnp.asarray(X), np.where(empty, lo_l, lo_r), np.where(empty, hi_r, hi_l)))
    inner = np.where(empty, -np.inf, inner)
    if shape.scale == "integer":  # an empty cell may reach y = −1 (lgamma infinite): the caller masks it
        with np.errstate(invalid="ignore", divide="ignore"):
            f_lo, f_hi = _f_extremes(shape, {k: np.asarray(v) for k, v in theta.items()}, X, l, r, np)
    else:
        f_lo, f_hi = (np.asarray(v) for v in _f_cells(shape, theta, jnp.asarray(X), jnp.asarray(l), jnp.asarray(r)))
    with np.errstate(all="ignore"):
        if standard == "truncated":
            return _risk_from(standard, f_lo, f_hi, f_lo - union, f_hi - inner, np)
        return _risk_from(standard, f_lo, f_hi, inner, union, np)


@functools.lru_cache(maxsize=8)
def _log_mass(record_model: RecordModel) -> Callable:
    """The model's ``log_interval`` at every draw, compiled once per model."""
    return jax.jit(jax.vmap(lambda th, X, lower, upper: record_model.log_interval(th, X, lower, upper), (0, None, None, None)))


@functools.partial(jax.jit, static_argnums=(0,))
def _d_cells(family: str, theta: dict[str, Any], X: Any, l: Any, r: Any, u: Any) -> tuple[Any, Any]:
    """:func:`_d_extremes` compiled, keyed by the shape's family, all of the shape it reads: the
    lognormal and a normal model on either scale share one program."""
    return _d_extremes(Shape(family, "linear"), theta, X, l, r, u)


@jax.jit
def _combine(
    d_lo: Any,
    d_hi: Any,
    F: Any,
    w: Any,
    w_lo: Any,
    w_hi: Any,
    P0: Any,
    P_lo: Any,
    P_hi: Any,
    Q_lo: Any,
    Q_hi: Any,
    own_lo: Any,
    own_hi: Any,
) -> Any:
    """Per cell (row): ``max_s U_s − min_s L_s``, a bound on the oscillation over the weighted draws of
    the log-ratio g of a move into the cell (step 5 of :func:`move_bound`).

    ``[d_lo, d_hi]`` (S × rows) bound the centred ``d_s`` over the cell (:func:`_d_extremes`); ``F`` is
    the centred ``F̃_si`` of the row's record, ``w`` its weight, ``[w_lo, w_hi]`` its weight once
    moved; ``P0 = F̃ w`` (S × 1); ``P_lo = F̃ W(ρ_lo)``, ``Q_lo = |F̃| W(ρ_lo)`` and the same at ``ρ_hi``
    are the others' weighted sums at the ends of the cell's risks, with the record's own entries
    ``own_lo``, ``own_hi`` (its term is not one of the others')."""
    mid = P0 - 0.5 * (P_lo + P_hi) - (w - 0.5 * (own_lo + own_hi)) * F
    rad = jnp.maximum(0.5 * (Q_hi - Q_lo) - 0.5 * jnp.abs(F) * (own_hi - own_lo), 0.0)
    up = w * F + jnp.maximum(-w_lo * d_lo, -w_hi * d_lo) + mid + rad
    down = w * F + jnp.minimum(-w_lo * d_hi, -w_hi * d_hi) + mid - rad
    return up.max(0) - down.min(0)


#: The risk bounds of a cell, in the order :meth:`_Release.risk_bounds` returns them.
RISKS = ("rho_lo", "rho_hi", "lam_lo", "lam_hi")


@dataclass(frozen=True)
class MoveBound:
    """What :func:`move_bound` found: ε_x of one draw, each record's bound, and where the largest is."""

    epsilon: float
    per_record: np.ndarray
    record: int  # the record whose move attains ε_x (private: never released)
    refined: int  # cells cut by the branch and bound
    seconds: float


def _blocks(idx: np.ndarray, size: int, pad: bool = True, small: int = 16) -> list[np.ndarray]:
    """``idx`` in blocks of ``size``, the last padded with its final index: one compiled shape per
    function (compiling costs more than the padding). Unpadded (``pad=False``: code that is not
    compiled), fewer than ``size`` make one block of the next power of two, at least ``small``."""
    if len(idx) < size and not pad:
        size = max(small, 1 << max(0, len(idx) - 1).bit_length())
    out = []
    for start in range(0, len(idx), size):
        part = idx[start : start + size]
        out.append(np.concatenate([part, np.full(size - len(part), part[-1])]))
    return out


@dataclass(frozen=True)
class _Release:
    """What one release's move bound works on (arrays of the records, the draws, the rule)."""

    shape: Shape
    record_model: RecordModel
    standard: str
    a: float
    b: float
    X: np.ndarray
    y: np.ndarray
    theta0: dict[str, Any]
    theta1: dict[str, Any]
    Ft: np.ndarray  # F − its mean over the weighted draws (S × n)
    F0: np.ndarray  # f and log P(R) at each record's own value, over the unweighted draws (S × n)
    L0: np.ndarray
    risk: np.ndarray
    lam: np.ndarray | None
    effective: np.ndarray
    u: np.ndarray  # each record's own value in the shape's variable
    m_others: np.ndarray  # each record's neighbour's normaliser when its own risk leaves: min and max of the others
    M_others: np.ndarray
    rule: str
    c: float
    g: float
    raise_to: float | None

    def risk_bounds(self, idx: np.ndarray, ends: np.ndarray, valid: np.ndarray, coarse: bool = False) -> tuple[np.ndarray, ...]:
        """(ρ_lo, ρ_hi, λ_lo, λ_hi), each pieces × cells: piece p is record ``idx[p]`` moved into the
        cells with ends ``ends[p]`` (step 2); ``coarse``: from the record's own value only
        (:func:`_risk_around`). A cell without a value gets the record's own risk and λ."""
        cells = ends.shape[1] - 1
        S = len(next(iter(self.theta0.values())))
        out = [np.empty((len(idx), cells)) for _ in range(4)]
        for block in _blocks(np.arange(len(idx)), max(1, BLOCK_ELEMENTS // (S * (cells + 1))), pad=self.shape.window):
            X = jnp.asarray(self.X[idx[block]])
            if self.shape.window and coarse:
                rec = idx[block]
                got = _risk_around(
                    self.shape.jacobian,
                    self.standard,
                    self.theta0,
                    X,
                    jnp.asarray(self.u[rec]),
                    jnp.asarray(self.F0[:, rec]),
                    jnp.asarray(self.L0[:, rec]),
                    jnp.asarray(ends[block]),
                    self.a,
                    self.b,
                )
            elif self.shape.window:
                got = _risk_edges(self.shape.jacobian, self.standard, self.theta0, X, jnp.asarray(ends[block]), self.a, self.b)
            else:
                rows = (
                    np.repeat(self.X[idx[block]], cells, axis=0),
                    ends[block, :-1].ravel(),
                    _cell_right(self.shape, ends[block]).ravel(),
                )
                got = _risk_cells(self.shape, self.record_model, self.standard, self.theta0, *rows, self.a, self.b)
            for target, value in zip(out, got):
                target[block] = np.asarray(value).reshape(len(block), cells)
        own_lam = self.lam[idx] if self.lam is not None else np.zeros(len(idx))
        for target, value in zip(out, (self.risk[idx], self.risk[idx], own_lam, own_lam)):
            target[~valid] = np.broadcast_to(value[:, None], target.shape)[~valid]
        return tuple(out)

    def moved_weight(self, idx: np.ndarray, rho_lo, rho_hi, lam_lo, lam_hi) -> tuple[np.ndarray, np.ndarray]:
        """Bounds on the moved record's effective weight (step 3)."""

        def alpha(rho):
            lo, hi = np.minimum(self.m_others[idx, None], rho), np.maximum(self.M_others[idx, None], rho)
            return weights_at(rho, lo, hi, self.rule, self.c, self.g, self.raise_to)

        a_hi, a_lo = alpha(rho_lo), alpha(rho_hi)
        if self.standard == "truncated":
            return a_lo, a_hi
        return lam_lo + (1.0 - lam_lo) * a_lo, lam_hi + (1.0 - lam_hi) * a_hi

    def effective_at(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Every record's effective weight (its own risk) under the normalisers (lo, hi): n × len(lo)."""
        alpha = weights_at(self.risk[:, None], lo[None, :], hi[None, :], self.rule, self.c, self.g, self.raise_to)
        return alpha if self.lam is None else self.lam[:, None] + (1.0 - self.lam[:, None]) * alpha

    def oscillation(
        self,
        idx: np.ndarray,
        ends: np.ndarray,
        valid: np.ndarray,
        u: np.ndarray,
        risks: tuple[np.ndarray, ...],
        norm: _Normaliser,
    ) -> np.ndarray:
        """The bound per piece and cell (steps 3–5): piece p is record ``idx[p]`` (own u ``u[p]``) moved
        into the cells ``ends[p]``, whose risk and λ bounds are ``risks``."""
        rho_lo, rho_hi, lam_lo, lam_hi = risks
        w_lo, w_hi = self.moved_weight(idx, rho_lo, rho_hi, lam_lo, lam_hi)
        cells = ends.shape[1] - 1
        out = np.empty((len(idx), cells))
        for block in _blocks(
            np.arange(len(idx)), max(1, BLOCK_ELEMENTS // (self.Ft.shape[0] * cells)), pad=self.shape.family == "quadratic"
        ):
            rec = idx[block]
            flat = lambda v, block=block: jnp.asarray(np.asarray(v)[block].ravel())
            sums = norm.sums(np.repeat(rec, cells), np.asarray(rho_lo)[block].ravel(), np.asarray(rho_hi)[block].ravel())
            rows = (
                np.repeat(self.X[rec], cells, axis=0),
                ends[block, :-1].ravel(),
                _cell_right(self.shape, ends[block]).ravel(),
                np.repeat(u[block], cells),
            )
            if self.shape.family == "quadratic":
                d = _d_cells(self.shape.family, self.theta1, *(jnp.asarray(v) for v in rows))
            else:  # an empty count cell (r = l − 1) may reach y = −1, where lgamma is infinite: it is masked below
                with np.errstate(invalid="ignore", divide="ignore"):
                    d = _d_extremes(self.shape, {k: np.asarray(v) for k, v in self.theta1.items()}, *rows, xp=np)
            got = _combine(
                *(jnp.asarray(v) for v in d),
                jnp.asarray(np.repeat(self.Ft[:, rec], cells, axis=1)),
                jnp.asarray(np.repeat(self.effective[rec], cells)),
                flat(w_lo),
                flat(w_hi),
                norm.P0,
                *sums,
            )
            out[block] = np.asarray(got).reshape(len(block), cells)
        return np.where(valid, out, 0.0)


@dataclass(frozen=True)
class _Normaliser:
    """The others' weights as a function of the neighbour's normaliser (step 4 of :func:`move_bound`).

    Each record's path: its neighbour's normaliser is ``(min(m_{−i}, ρ), max(M_{−i}, ρ))``. Two ways
    to the sums ``F̃ W(ρ)`` and ``|F̃| W(ρ)``:

    - *affine* (the Lipschitz rule; the linear map when ``g >= 0`` and ``c + g <= 1``, so that no
      record inside the normaliser is clipped): every record's weight is ``e0 + p0 e1 + p1 e2 + p2 e3``
      with the fixed vectors ``E = (λ, 1 − λ, (1 − λ) r, (1 − λ)/r)`` (λ = 0, 1 − λ = 1 when truncated)
      and coefficients of the normaliser only (linear: ``p0 = c·hi/(hi − lo) + g``, ``p1 = −c/(hi − lo)``;
      Lipschitz: ``p2 = lo``), so ``F̃ W(ρ) = (F̃ E) p(ρ)`` exactly, at any ρ;
    - *grid* (any other map): columns W at ``points`` normalisers per side of ``[m_{−i}, M_{−i}]`` and
      ``F̃ W``, ``|F̃| W``; a cell's risks ``[ρ_lo, ρ_hi]`` are widened to the grid points around them.

    The record's own entry uses the same formula (unclipped in the affine case), so that subtracting
    it removes exactly its term from the sums.
    """

    P0: Any  # F̃ w, the release's own weights (S × 1)
    m_others: np.ndarray
    M_others: np.ndarray
    affine: bool
    E: np.ndarray | None = None  # affine: the fixed vectors (n × 4; "fixed": the weights, n × 1) and F̃ E, |F̃| E
    PE: np.ndarray | None = None
    QE: np.ndarray | None = None
    rule: str = "linear"
    c: float = 1.0
    g: float = 0.0
    W: np.ndarray | None = None  # grid: the columns (n × K) and F̃ W, |F̃| W
    P: np.ndarray | None = None
    Q: np.ndarray | None = None
    paths: tuple[tuple[float, float, np.ndarray, np.ndarray], ...] = ()  # (m, M, grid, column of each grid point)

    @classmethod
    def build(cls, rel: _Release, rho_lo: np.ndarray, rho_hi: np.ndarray, points: int) -> _Normaliser:
        depends = rel.raise_to is None and rel.rule in ("linear", "lipschitz")  # a fixed target or none: no path
        if not depends:  # the others' weights do not move: their sums stay F̃ w
            return cls(
                jnp.asarray(rel.Ft @ rel.effective)[:, None],
                rel.m_others,
                rel.M_others,
                True,
                rel.effective[:, None],
                rule="fixed",
            )
        affine = (rel.rule == "linear" and rel.g >= 0 and rel.c + rel.g <= 1) or (
            rel.rule == "lipschitz" and np.all(rel.risk > 0)
        )
        if affine:
            keep = np.ones_like(rel.risk) if rel.lam is None else 1.0 - rel.lam
            base = np.zeros_like(rel.risk) if rel.lam is None else rel.lam
            with np.errstate(divide="ignore"):
                E = np.column_stack([base, keep, keep * rel.risk, keep / rel.risk])
            E[~np.isfinite(E)] = 0.0  # 1/r for r = 0 is never used (the linear map's p2 is 0)
            PE, QE = rel.Ft @ E, np.abs(rel.Ft) @ E
            norm = cls(None, rel.m_others, rel.M_others, True, E, PE, QE, rel.rule, rel.c, rel.g)
            p = norm._coefficients(np.array([rel.risk.min()]), np.array([rel.risk.max()]))
            return replace(norm, P0=jnp.asarray(PE @ p[0])[:, None])
        columns: list[np.ndarray] = [rel.effective]
        paths: list[tuple[float, float, np.ndarray, np.ndarray]] = []
        m_all, M_all = rel.risk.min(), rel.risk.max()
        for m_g, M_g in sorted(set(zip(rel.m_others.tolist(), rel.M_others.tolist()))):
            mine = (rel.m_others == m_g) & (rel.M_others == M_g)
            low, high = float(rho_lo[mine].min()), float(rho_hi[mine].max())
            stops = [m_g, M_g]
            if low < m_g:
                stops += np.linspace(low, m_g, points + 1).tolist()
            if high > M_g:  # an unbounded risk (an empty mass) gets its own point at infinity
                finite = float(np.max(rho_hi[mine][np.isfinite(rho_hi[mine])], initial=M_g))
                stops += np.linspace(M_g, finite, points + 1).tolist() + ([high] if math.isinf(high) else [])
            grid = np.unique(stops)
            lo, hi = np.minimum(m_g, grid), np.maximum(M_g, grid)
            own = (lo == m_all) & (hi == M_all)  # the release's own normaliser: column 0, bit for bit
            index = np.zeros(len(grid), dtype=np.int64)
            index[~own] = len(columns) + np.arange(int(np.sum(~own)))
            columns += list(rel.effective_at(lo[~own], hi[~own]).T)
            paths.append((m_g, M_g, grid, index))
        W = np.column_stack(columns)
        P = rel.Ft @ W
        return cls(jnp.asarray(P[:, :1]), rel.m_others, rel.M_others, False, W=W, P=P, Q=np.abs(rel.Ft) @ W, paths=tuple(paths))

    def _coefficients(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """(rows × 4) coefficients of the fixed vectors E under the normalisers (lo, hi) (affine case)."""
        p = np.zeros((len(lo), 4))
        p[:, 0] = 1.0
        if self.rule == "linear":
            span = hi - lo
            unbounded = np.isinf(hi)
            safe = np.where((span > 0) & ~unbounded, span, 1.0)
            p[:, 1] = np.where(unbounded, self.c + self.g, np.where(span > 0, self.c * hi / safe + self.g, self.c + self.g))
            p[:, 2] = np.where((span > 0) & ~unbounded, -self.c / safe, 0.0)
        elif self.rule == "lipschitz":
            p[:, 3] = lo
        else:
            p[:, 0] = 0.0
        return p

    def sums(self, idx: np.ndarray, rho_lo: np.ndarray, rho_hi: np.ndarray) -> tuple[Any, ...]:
        """``F̃ W``, ``|F̃| W`` (S × rows) at the ends of each row's risks on record ``idx``'s path, and the
        record's own entries, for :func:`_combine`: (P_lo, P_hi, Q_lo, Q_hi, own_lo, own_hi)."""
        if self.affine:
            assert self.E is not None  # build gives every affine normaliser its fixed vectors E
            if self.rule == "fixed":
                rows = (self.P0.shape[0], len(idx))
                same, zero, own = jnp.broadcast_to(self.P0, rows), jnp.zeros(rows), jnp.asarray(self.E[idx, 0])
                return same, same, zero, zero, own, own
            assert self.PE is not None and self.QE is not None  # and, unless fixed, their sums F̃ E, |F̃| E
            m, M = self.m_others[idx], self.M_others[idx]
            p_lo = self._coefficients(np.minimum(m, rho_lo), np.maximum(M, rho_lo))
            p_hi = self._coefficients(np.minimum(m, rho_hi), np.maximum(M, rho_hi))
            E = self.E[idx]
            return (
                jnp.asarray(self.PE @ p_lo.T),
                jnp.asarray(self.PE @ p_hi.T),
                jnp.asarray(self.QE @ p_lo.T),
                jnp.asarray(self.QE @ p_hi.T),
                jnp.asarray(np.sum(E * p_lo, axis=1)),
                jnp.asarray(np.sum(E * p_hi, axis=1)),
            )
        assert self.W is not None and self.P is not None and self.Q is not None  # build gives every grid normaliser all three
        k_lo, k_hi = np.zeros(len(idx), dtype=np.int64), np.zeros(len(idx), dtype=np.int64)
        for m_g, M_g, grid, index in self.paths:
            mine = (self.m_others[idx] == m_g) & (self.M_others[idx] == M_g)
            lo, hi = rho_lo[mine], rho_hi[mine]
            if np.any(lo < grid[0]) or np.any(hi > grid[-1]):
                raise AssertionError("a risk outside the normaliser's grid")  # the grid spans every coarse cell's risks
            k_lo[mine] = index[np.searchsorted(grid, lo, side="right") - 1]
            k_hi[mine] = index[np.searchsorted(grid, hi, side="left")]
        return (
            jnp.asarray(self.P[:, k_lo]),
            jnp.asarray(self.P[:, k_hi]),
            jnp.asarray(self.Q[:, k_lo]),
            jnp.asarray(self.Q[:, k_hi]),
            jnp.asarray(self.W[idx, k_lo]),
            jnp.asarray(self.W[idx, k_hi]),
        )


def move_bound(
    sampler: Sampler,
    standard: str,
    a: float,
    b: float,
    unweighted: Fit,
    weighted: Fit,
    F0: np.ndarray,
    L0: np.ndarray,
    F1: np.ndarray,
    risk: np.ndarray,
    lam: np.ndarray | None,
    effective: np.ndarray,
    rule: str = "linear",
    c: float = 1.0,
    g: float = 0.0,
    raise_to: float | None = None,
    coarse: int = COARSE_CELLS,
    split: int = SPLIT,
    depth: int = DEPTH,
    points: int = NORMALISER_POINTS,
) -> MoveBound:
    r"""ε_x of one draw under a range standard: the largest change of the log pseudo posterior that
    moving one record's response anywhere in its sensitive range ``R_i = [a·y_i, b·y_i]`` can make
    (S-001's neighbour), the neighbour's weights recomputed by the mechanism's own rule.

    **The relation.** x' differs from x in record i's response only, ``y'_i ∈ R_i``. The mechanism
    run on x' computes the moved record's risk from its new value and its new range ``[a·y', b·y']``
    (module steps 2–3), every record's weight from the risks (the linear map normalises by the least
    and the largest risk, which the move can change, and so every weight), then fits with weights w'.

    **Theorem.** With ``g(θ) = Σ_j w_j f_θ(x_j) − Σ_j w'_j f_θ(x'_j)``, for every measurable B
    ``|log ξ^w(B | x) − log ξ^{w'}(B | x')| <= sup_θ g − inf_θ g`` (the oscillation of g).
    *Proof.* ``ξ^w(B | x) = ∫_B e^{ℓ' + g} dξ / ∫_Θ e^{ℓ' + g} dξ`` with ``ℓ'`` the neighbour's
    weighted log-likelihood; the numerator lies within ``[e^{inf g}, e^{sup g}] · ∫_B e^{ℓ'} dξ``, the
    denominator within ``[e^{inf g}, e^{sup g}] · ∫_Θ e^{ℓ'} dξ``, so the ratio to ``ξ^{w'}(B | x')``
    lies within ``e^{±(sup g − inf g)}``; the same holds for the densities at any θ. ∎ SWH's ``2Δ``
    (Theorem 3; S-001 Theorem 1, eq. 4) is this with ``g = α_i f_θ(x_i)``, whose oscillation is at
    most ``2 sup |g|``. The oscillation is the sharper form, and the one that does not count terms
    constant in θ (a log scale's Jacobian, a record's own normalising constants), which move no
    posterior probability. So ``ε_x = max_i sup_{y' ∈ R_i} osc g`` is a local guarantee of one draw;
    Δ = ε_x / 2 is reported beside it.

    **Caveats** (what the figure is local to): (i) sup and inf over Θ are taken over the weighted
    fit's retained draws, as S-001 eq. 3 takes its maximum over them; (ii) the neighbour's risks are
    recomputed over *this* release's unweighted draws (a refit on x' would draw others, and the
    weights' dependence through them is not counted — SWH and S-001 hold the weights fixed
    altogether); (iii) y' ranges over all of R_i, the domain's bounds not intersected (more
    neighbours: sound).

    **Computing the supremum over R_i** (vectorised over blocks of records, cells and draws; nothing
    is trusted between grid points):

    1. R_i is cut into cells [l, r] in the variable u of :class:`Shape` (u = log y for the lognormal
       and a log response; whole numbers for counts): ``coarse`` cells for every record; then,
       branch and bound, each cell whose bound exceeds the largest bound among the finest cells so
       far is cut into ``split``, down to ``depth`` cuts (a single whole number is never cut). A
       cell left whole cannot hold a larger value than that largest bound, and a cut cell's
       children keep the smaller of their own bound and their parent's (both hold on them);
    2. per cell, bounds ``[ρ_lo, ρ_hi]`` on the moved record's risk and ``[λ_lo, λ_hi]`` on its λ, over
       the unweighted draws. A normal model on a log scale: in the coarse pass from the values and
       slopes at the record's own value only (:func:`_risk_around`: tangents above, curvature at
       least −1/σ² below), in the cut cells from those at the cells' ends (:func:`_risk_edges`:
       exact at the ends, O(width²) inside), both by the concavity of ``log P(R)`` and of
       ``f − log P(R)``; the other models from f's extremes over the cell (:func:`_f_extremes`) and
       the masses of the cell's intersection and union of ranges (:func:`_risk_cells`: O(width));
    3. the moved record's weight ``w'_i ∈ [ω_lo, ω_hi]``: ``ρ ↦ α(ρ)`` under the neighbour's normaliser
       ``(min(m_{−i}, ρ), max(M_{−i}, ρ))`` does not rise with ρ (linear: the normalised risk is 0
       below ``m_{−i}``, 1 above ``M_{−i}``, rising between; Lipschitz: ``min(1, m_{−i}/ρ)``; a
       target: ``min(1, B/ρ)``), and ``λ' + (1 − λ')α'`` (averaged) rises in both λ' and α';
    4. the others' weights depend on the move only through that normaliser, and each rises with ρ
       (the linear map's ``(r_j − lo)/(hi − lo)`` falls as lo falls below ``r_j`` or as hi rises; the
       Lipschitz rule's ``lo/r_j`` rises with lo), so for ρ in the cell's ``[ρ_lo, ρ_hi]``,
       ``δ_j = w_j − w'_j ∈ [w_j − W_j(ρ_hi), w_j − W_j(ρ_lo)]`` for every j ≠ i. The sums over j of
       W(ρ) against the draws are exact at any ρ when the weights are affine in fixed vectors (the
       Lipschitz rule; the linear map unclipped inside the normaliser, g >= 0 and c + g <= 1), else
       taken at a grid of ``points`` normalisers per side, ρ widened to the grid points around it
       (:class:`_Normaliser`; at most three paths: the least- and the most-risky record each have
       their own);
    5. terms of g constant in θ cancel in the oscillation, so with ``F̃ = F − mean_s F`` and
       ``d_s(u') = f_s(u') − f_ref(u')`` (:func:`_d_extremes`), at each draw
       ``g_s − const = w_i F̃_si − w'_i d_s(u') + Σ_{j≠i} δ_j F̃_sj``. Each term has a per-draw interval
       over the cell: ``−w' d`` is bilinear (extremes at the corners of ``[ω_lo, ω_hi] × [d_lo, d_hi]``),
       and the sum lies within ``mid_s ± rad_s``, ``mid = F̃ (w − (W(ρ_lo) + W(ρ_hi))/2)``,
       ``rad = |F̃| (W(ρ_hi) − W(ρ_lo))/2`` (linear algebra, since ``W(ρ_hi) >= W(ρ_lo)`` entrywise for
       j ≠ i; the record's own entry is subtracted from both). The cell's bound
       ``max_s U_s − min_s L_s`` is at least ``sup osc g`` over the cell (:func:`_combine`);
    6. ``ε_x`` is the largest over records and cells.

    The slack is the spread of each term across one cell, never a point of the supremum missed:
    against brute force over 401 moves of the worst record it was 0.03 % at n = 8000, and within
    0.5 % on the CE sample. Cost: ``n × coarse × (S_unweighted + S_weighted)`` cheap evaluations,
    the cut cells' ends' masses, and four products ``S × n × 4`` (or ``S × n × grid``): on the CE
    sample at 4 × 1000 draws 4 s (7.6 s when it first compiles) beside fits of 15 s and 8 s; with
    1,000 draws 7 s at n = 2000 and 13 s at n = 8000, compilation included
    (benchmarks/pseudo_posterior.py).
    """
    start = time.perf_counter()
    shape = shape_of(sampler.model, sampler.log_response)
    n = len(risk)
    order = np.argsort(risk, kind="stable")
    first, last = np.arange(n) == order[0], np.arange(n) == order[-1]
    y = np.asarray(sampler.y)
    lo, hi, u = range_of(shape, y, a, b)
    rel = _Release(
        shape,
        sampler.model,
        standard,
        a,
        b,
        np.asarray(sampler.X),
        y,
        {k: jnp.asarray(v) for k, v in unweighted.draws.items()},
        {k: jnp.asarray(v) for k, v in weighted.draws.items()},
        F1 - F1.mean(axis=0),
        F0,
        L0,
        risk,
        lam,
        effective,
        u,
        np.where(first, risk[order[min(1, n - 1)]], risk[order[0]]),
        np.where(last, risk[order[max(n - 2, 0)]], risk[order[-1]]),
        rule,
        c,
        g,
        raise_to,
    )
    everyone = np.arange(n)
    ends, valid = split_cells(shape, lo, hi, coarse)
    risks = rel.risk_bounds(everyone, ends, valid, coarse=True)
    norm = _Normaliser.build(rel, risks[0], risks[1], points)
    bound = rel.oscillation(everyone, ends, valid, u, risks, norm)  # n × coarse

    # branch and bound: cut the cells that could hold the maximum; a cell whose bound is at most the
    # largest bound among the finest cells cannot raise ε_x. A cut cell's children keep the tighter of
    # their own bounds and their parent's (both hold on them).
    rec, cell = np.nonzero(np.ones(bound.shape, dtype=bool))
    piece = {
        "rec": rec,
        "lo": ends[rec, cell],
        "hi": ends[rec, cell + 1],
        "valid": valid[rec, cell],
        "depth": np.zeros(len(rec), dtype=np.int64),
        "bound": bound[rec, cell],
        **{k: r[rec, cell] for k, r in zip(RISKS, risks)},
    }
    S = max(unweighted.size, weighted.size)
    batch = max(1, BATCH_ELEMENTS // (S * (split + 1)))
    cut = 0
    while True:
        final = (piece["depth"] == depth) | ((piece["hi"] - piece["lo"] <= 1.0) if shape.scale == "integer" else False)
        finest = piece["bound"][final]
        best = float(finest.max()) if len(finest) else 0.0
        open_ = np.nonzero(~final & (piece["bound"] > best) & piece["valid"])[0]
        if not len(open_):
            break
        take = open_[np.argsort(-piece["bound"][open_], kind="stable")[:batch]]  # the largest bounds first
        r_ = piece["rec"][take]
        c_ends, c_valid = split_cells(shape, piece["lo"][take], piece["hi"][take], split)
        c_risks = rel.risk_bounds(r_, c_ends, c_valid)
        c_risks = tuple(
            np.maximum(v, piece[k][take][:, None]) if k.endswith("lo") else np.minimum(v, piece[k][take][:, None])
            for k, v in zip(RISKS, c_risks)
        )
        c_bound = np.minimum(rel.oscillation(r_, c_ends, c_valid, u[r_], c_risks, norm), piece["bound"][take][:, None])
        children = {
            "rec": np.repeat(r_, split),
            "lo": c_ends[:, :-1].ravel(),
            "hi": c_ends[:, 1:].ravel(),
            "valid": c_valid.ravel(),
            "depth": np.repeat(piece["depth"][take] + 1, split),
            "bound": c_bound.ravel(),
            **{k: v.ravel() for k, v in zip(RISKS, c_risks)},
        }
        keep = np.ones(len(piece["rec"]), dtype=bool)
        keep[take] = False
        piece = {k: np.concatenate([v[keep], children[k]]) for k, v in piece.items()}
        cut += len(take)
    per_record = np.zeros(n)
    np.maximum.at(per_record, piece["rec"], np.where(piece["valid"], piece["bound"], 0.0))
    worst = int(np.argmax(per_record))
    return MoveBound(float(per_record[worst]), per_record, worst, cut, time.perf_counter() - start)
