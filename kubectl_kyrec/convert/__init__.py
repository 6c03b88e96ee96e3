"""Policy -> policy conversion: ClusterPolicy/Policy to the CEL kinds Kyverno's migration guidance maps them to
(docs/convert.md). Nothing here evaluates: run/convert.py verifies a conversion with the engines."""
