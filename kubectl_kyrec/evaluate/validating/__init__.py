"""ValidatingPolicy / NamespacedValidatingPolicy (kk: pkg/cel/policies/vpol): the engine, its JSON, HTTP and Envoy
payload modes, and explain's tree.
"""
