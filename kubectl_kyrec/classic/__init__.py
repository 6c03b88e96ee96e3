"""Kyverno classic policies (ClusterPolicy / Policy): the JMESPath dialect, variables, conditions, patterns, rules."""
