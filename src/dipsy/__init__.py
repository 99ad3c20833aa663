"""dipsy: differentially private synthetic data with exact privacy statements."""

__version__ = "0.1.0"
