r"""Record models of the pseudo-posterior mechanism: a prior, a per-record log-likelihood, a CDF.

The contract (what a user's own model implements too; see :class:`RecordModel`):

- ``prior(p)`` samples the parameters θ inside a NumPyro model (``numpyro.sample`` statements) and
  returns them as a dict; ``p`` is the number of columns of the design matrix;
- ``log_likelihood(theta, X, y)`` is the vector ``f_θ(y_i | x_i) = log p(y_i | x_i, θ)``, one value
  per record, as a JAX array — the quantity whose weighted sum the pseudo likelihood is made of and
  whose size is the privacy guarantee (S-001; METHODS.md §3.1). It must be the log *density* (or
  mass) of ``y`` itself: the Lipschitz bound depends on the scale it is written in;
- ``cdf(theta, X, t)`` is ``P(Y_i <= t_i | x_i, θ)`` per record (for the range standards; ``None``
  when the model has none, e.g. a categorical response);
- ``predict(theta, X, rng)`` draws a synthetic ``y`` per record from ``p(· | x_i, θ)`` with a NumPy
  generator (post-processing of one posterior draw).

The mechanism (:mod:`.mechanism`) builds the NumPyro model

    θ ~ prior;   target += Σ_i w_i · f_θ(y_i | x_i)

with ``numpyro.factor`` — exactly the weighted pseudo log-likelihood ``Σ_i α_i log p(x_i | θ)`` of
Savitsky, Williams & Hu (2022), the ``target += sum(alpha .* log_lik)`` of Hu's Stan code.

Priors are weakly informative and fixed in advance (they must not depend on the data: the
guarantee is for a fixed prior): coefficients N(0, 10²) on a design whose numeric columns are
scaled by their *public* bounds (:mod:`.design`); scales half-normal(0, 5²); the negative binomial's
concentration half-normal(0, 10²).

>>> import jax.numpy as jnp
>>> theta = {"beta": jnp.array([0.0, 1.0]), "sigma": jnp.array(1.0)}
>>> X = jnp.array([[1.0, 0.0], [1.0, 1.0]])
>>> [round(float(v), 4) for v in MODELS["normal"]().log_likelihood(theta, X, jnp.array([0.0, 1.0]))]
[-0.9189, -0.9189]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln, log_ndtr, xlogy

jax.config.update("jax_enable_x64", True)  # Lipschitz bounds are maxima of log densities: keep them exact to 1e-12

#: Prior scale of regression coefficients (on the public-bounds-scaled design) and of σ.
COEFFICIENT_SD = 10.0
SIGMA_SD = 5.0
CONCENTRATION_SD = 10.0


class RecordModel(ABC):
    """A model of the response given the predictors, with a per-record log-likelihood.

    Subclasses set ``name`` and implement :meth:`prior`, :meth:`log_likelihood`, :meth:`predict`
    (and :meth:`cdf` for the range standards). ``kind`` is the response it takes: ``"real"``,
    ``"positive"`` (> 0), ``"count"`` (whole numbers >= 0) or ``"category"`` (codes 0..k−1).
    """

    name: ClassVar[str] = "custom"
    kind: ClassVar[str] = "real"
    #: Number of response categories (categorical models only; set from the public domain).
    categories: int = 0

    @abstractmethod
    def prior(self, p: int) -> dict[str, Any]:
        """Sample θ inside a NumPyro model; ``p`` columns in the design."""

    @abstractmethod
    def log_likelihood(self, theta: dict[str, Any], X: Any, y: Any) -> Any:
        """``log p(y_i | x_i, θ)`` per record (a JAX array of length n)."""

    def cdf(self, theta: dict[str, Any], X: Any, t: Any) -> Any:
        """``P(Y_i <= t_i | x_i, θ)`` per record; None when the model has no CDF."""
        return None

    def log_interval(self, theta: dict[str, Any], X: Any, lower: Any, upper: Any) -> Any:
        """``log P(lower_i <= Y_i <= upper_i | x_i, θ)``; by default from :meth:`cdf`.

        Subclasses override it with a form that keeps its precision in the tails.
        """
        hi, lo = self.cdf(theta, X, upper), self.cdf(theta, X, lower)
        return jnp.log(jnp.clip(hi - lo, 1e-300, None))

    @abstractmethod
    def predict(self, theta: dict[str, np.ndarray], X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A synthetic response per record from ``p(· | x_i, θ)``."""


def _coefficients(p: int, name: str = "beta") -> Any:
    return numpyro.sample(name, dist.Normal(0.0, COEFFICIENT_SD).expand([p]).to_event(1))


def log_normal_interval(lo: Any, hi: Any) -> Any:
    """``log(Φ(hi) − Φ(lo))`` for ``lo < hi``, precise in both tails.

    In the upper tail it uses ``Φ(hi) − Φ(lo) = Φ(−lo) − Φ(−hi)``; each difference is written as
    ``log Φ(u) + log1p(−exp(log Φ(l) − log Φ(u)))``, so a far-tail interval (mass 1e-40) is not 0.

    >>> round(float(log_normal_interval(jnp.array(-1.0), jnp.array(1.0))), 6)  # log 0.682689
    -0.381715
    >>> round(float(log_normal_interval(jnp.array(12.0), jnp.array(13.0))), 3)  # no underflow (log 2.4e-33)
    -75.411
    """
    upper_tail = lo > 0
    u = jnp.where(upper_tail, -lo, hi)
    l = jnp.where(upper_tail, -hi, lo)
    lu, ll = log_ndtr(u), log_ndtr(l)
    return lu + jnp.log1p(-jnp.exp(jnp.minimum(ll - lu, -1e-300)))


class Normal(RecordModel):
    r"""Normal linear regression: ``y_i ~ N(x_iᵀβ, σ²)``; ``f = −½ log 2πσ² − (y − xᵀβ)²/2σ²``."""

    name = "normal"

    def prior(self, p: int) -> dict[str, Any]:
        return {"beta": _coefficients(p), "sigma": numpyro.sample("sigma", dist.HalfNormal(SIGMA_SD))}

    def _z(self, theta, X, t):
        return (t - X @ theta["beta"]) / theta["sigma"]

    def log_likelihood(self, theta, X, y):
        z = self._z(theta, X, y)
        return -0.5 * jnp.log(2 * jnp.pi) - jnp.log(theta["sigma"]) - 0.5 * z**2

    def cdf(self, theta, X, t):
        return jax.scipy.stats.norm.cdf(self._z(theta, X, t))

    def log_interval(self, theta, X, lower, upper):
        return log_normal_interval(self._z(theta, X, lower), self._z(theta, X, upper))

    def predict(self, theta, X, rng):
        return rng.normal(X @ theta["beta"], theta["sigma"])


class LogNormal(Normal):
    r"""Lognormal regression: ``log y_i ~ N(x_iᵀβ, σ²)``, ``y > 0``.

    ``f = log N(log y; xᵀβ, σ²) − log y`` — the density of y itself (the Jacobian term is part of the
    record's contribution, so its Lipschitz bound is on the scale the record is released in).
    """

    name = "lognormal"
    kind = "positive"

    def log_likelihood(self, theta, X, y):
        return super().log_likelihood(theta, X, jnp.log(y)) - jnp.log(y)

    def cdf(self, theta, X, t):
        return super().cdf(theta, X, jnp.log(jnp.clip(t, 1e-300, None)))

    def log_interval(self, theta, X, lower, upper):
        return super().log_interval(theta, X, jnp.log(jnp.clip(lower, 1e-300, None)), jnp.log(upper))

    def predict(self, theta, X, rng):
        return np.exp(super().predict(theta, X, rng))


class Poisson(RecordModel):
    r"""Poisson regression with log link: ``y_i ~ Poisson(exp(x_iᵀβ))``; ``f = y log μ − μ − log y!``."""

    name = "poisson"
    kind = "count"

    def prior(self, p: int) -> dict[str, Any]:
        return {"beta": _coefficients(p)}

    def _log_mu(self, theta, X):
        return X @ theta["beta"]

    def log_likelihood(self, theta, X, y):
        log_mu = self._log_mu(theta, X)
        return y * log_mu - jnp.exp(log_mu) - gammaln(y + 1)

    def cdf(self, theta, X, t):
        k = jnp.floor(t)
        return jnp.where(k < 0, 0.0, jax.scipy.special.gammaincc(k + 1, jnp.exp(self._log_mu(theta, X))))

    def log_interval(self, theta, X, lower, upper):
        return _count_interval(self, theta, X, lower, upper)

    def predict(self, theta, X, rng):
        return rng.poisson(np.exp(X @ theta["beta"])).astype(float)


class NegativeBinomial(Poisson):
    r"""Negative-binomial (NB2) regression: mean ``μ_i = exp(x_iᵀβ)``, concentration φ,
    ``Var = μ + μ²/φ``; ``f = log Γ(y+φ) − log Γ(φ) − log y! + φ log(φ/(φ+μ)) + y log(μ/(φ+μ))``."""

    name = "negative-binomial"

    def prior(self, p: int) -> dict[str, Any]:
        return {"beta": _coefficients(p), "phi": numpyro.sample("phi", dist.HalfNormal(CONCENTRATION_SD))}

    def log_likelihood(self, theta, X, y):
        mu, phi = jnp.exp(self._log_mu(theta, X)), theta["phi"]
        return gammaln(y + phi) - gammaln(phi) - gammaln(y + 1) + phi * jnp.log(phi / (phi + mu)) + xlogy(y, mu / (phi + mu))

    def cdf(self, theta, X, t):
        mu, phi = jnp.exp(self._log_mu(theta, X)), theta["phi"]
        k = jnp.floor(t)
        return jnp.where(k < 0, 0.0, jax.scipy.special.betainc(phi, jnp.maximum(k, 0) + 1, phi / (phi + mu)))

    def predict(self, theta, X, rng):
        mu, phi = np.exp(X @ theta["beta"]), theta["phi"]
        return rng.poisson(rng.gamma(phi, mu / phi)).astype(float)


def _count_interval(model: RecordModel, theta, X, lower, upper):
    """``log P(⌈lower⌉ <= Y <= ⌊upper⌋)`` for a count model (the integers inside the range)."""
    hi = model.cdf(theta, X, jnp.floor(upper))
    lo = model.cdf(theta, X, jnp.ceil(lower) - 1)
    return jnp.log(jnp.clip(hi - lo, 1e-300, None))


class Categorical(RecordModel):
    r"""Multinomial logit: ``P(y_i = k) = softmax(x_iᵀB)_k`` with the first category's column fixed
    at 0 (identified); ``f = log softmax(x_iᵀB)_{y_i}``. No CDF: the range standards do not apply."""

    name = "categorical"
    kind = "category"

    def __init__(self, categories: int = 2) -> None:
        self.categories = int(categories)

    def prior(self, p: int) -> dict[str, Any]:
        return {"B": numpyro.sample("B", dist.Normal(0.0, COEFFICIENT_SD).expand([p, self.categories - 1]).to_event(2))}

    def _logits(self, theta, X):
        eta = X @ theta["B"]
        return jnp.concatenate([jnp.zeros(eta.shape[:-1] + (1,)), eta], axis=-1)

    def log_likelihood(self, theta, X, y):
        logp = jax.nn.log_softmax(self._logits(theta, X), axis=-1)
        return jnp.take_along_axis(logp, jnp.asarray(y, dtype=jnp.int32)[:, None], axis=-1)[:, 0]

    def predict(self, theta, X, rng):
        eta = np.concatenate([np.zeros((X.shape[0], 1)), X @ theta["B"]], axis=1)
        p = np.exp(eta - eta.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        u = rng.random(X.shape[0])[:, None]
        return np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), self.categories - 1).astype(float)


#: The built-in models by name (the ``model=`` option).
MODELS: dict[str, type[RecordModel]] = {m.name: m for m in (Normal, LogNormal, Poisson, NegativeBinomial, Categorical)}
