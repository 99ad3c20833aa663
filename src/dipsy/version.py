"""dipsy's version, which every release and discovered domain records (kept apart from the
package's ``__init__`` so that any layer can read it without importing the package's façade)."""

__version__ = "0.1.0"
