"""GeneratingPolicy (kk: pkg/cel/policies/gpol): the engine, the downstream objects as Kyverno writes them, and
explain's tree.
"""
