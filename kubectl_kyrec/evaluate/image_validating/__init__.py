"""ImageValidatingPolicy / NamespacedImageValidatingPolicy (kk: pkg/cel/policies/ivpol): the engine and explain's
tree.
"""
