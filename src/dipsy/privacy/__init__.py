"""Privacy core: budgets, the accountant, the persistent ledger, randomness."""

from .accountant import Accountant, Spend
from .budget import ZCDP, ApproxDP, Budget, PureDP
from .ledger import Ledger, default_ledger_path
from .rng import make_rng

__all__ = ["Accountant", "ApproxDP", "Budget", "Ledger", "PureDP", "Spend", "ZCDP", "default_ledger_path", "make_rng"]
