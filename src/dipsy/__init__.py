"""dipsy: differentially private synthetic data with exact privacy statements.

>>> import dipsy
>>> [m.name for m in dipsy.methods()][:5]
['dirichlet-multinomial', 'beta-binomial', 'dp-prior', 'gamma-poisson', 'laplace-sanitizer']
"""

import importlib
import importlib.util
import sys
import types

from .version import __version__

#: What ``import dipsy`` offers, each imported from its module on first use, so that the command
#: line (:mod:`dipsy.__main__`) starts, and answers Ctrl-C, before NumPy, pandas and JAX load.
_EXPORTS = {
    "synthesize": "api",
    "discover_domain": "api",
    "Column": "domain",
    "Domain": "domain",
    "methods": "methods",
    "Release": "api",  # as the API loads, releases can write their report (dipsy.release.REPORTER)
    "Synthesizer": "synthesizer",
}


def __getattr__(name: str):  # noqa: ANN202 - PEP 562
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)  # a submodule, as an eager import would have bound it
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Package(types.ModuleType):
    """The package, whose ``methods`` stays the listing function when the submodule of that name
    is loaded (the import system binds each submodule it loads to its package's attribute)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "methods" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def evaluate(original, release, domain=None, **options):  # noqa: ANN001, ANN201
    """Utility metrics of a release against the original (see :func:`dipsy.evaluation.evaluate`)."""
    from .errors import speaks_python
    from .evaluation import evaluate as run  # imported on use: scikit-learn and statsmodels are heavy

    return speaks_python(run)(original, release, domain, **options)


__all__ = ["Column", "Domain", "Release", "Synthesizer", "__version__", "discover_domain", "evaluate", "methods", "synthesize"]
