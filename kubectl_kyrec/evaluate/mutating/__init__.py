"""MutatingPolicy / NamespacedMutatingPolicy (kk: pkg/cel/policies/mpol): the engine, mutateExisting, and explain's
tree.
"""
