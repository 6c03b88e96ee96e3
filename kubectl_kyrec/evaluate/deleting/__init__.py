"""DeletingPolicy / NamespacedDeletingPolicy (kk: pkg/cel/policies/dpol): the engine and explain's tree."""
