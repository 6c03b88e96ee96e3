"""ClusterPolicy / Policy rules (kk: pkg/engine, pkg/background): validate (and its CEL), mutate at admission,
generate, and explain's tree; the rule language itself is kubectl_kyrec/classic/.
"""
