"""kubectl-kyrec: evaluate Kyverno policies offline and diff what should exist against a cluster."""

__version__ = "0.1.0"
