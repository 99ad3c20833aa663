"""dipsy: differentially private synthetic data with exact privacy statements.

>>> import dipsy
>>> [m.name for m in dipsy.methods()][:5]
['dirichlet-multinomial', 'beta-binomial', 'dp-prior', 'gamma-poisson', 'laplace-sanitizer']
"""

__version__ = "0.1.0"

from .api import discover_domain, synthesize  # noqa: E402
from .domain import Column, Domain  # noqa: E402
from .methods import methods  # noqa: E402
from .release import Release  # noqa: E402



def evaluate(original, release, domain=None, **options):  # noqa: ANN001, ANN201
    """Utility metrics of a release against the original (see :func:`dipsy.evaluation.evaluate`)."""
    from .evaluation import evaluate as run  # imported on use: scikit-learn and statsmodels are heavy

    return run(original, release, domain, **options)


__all__ = ["Column", "Domain", "Release", "__version__", "discover_domain", "evaluate", "methods", "synthesize"]
