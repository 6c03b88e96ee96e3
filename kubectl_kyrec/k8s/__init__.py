"""Kubernetes rules that are not CEL, shared by every stage: label selectors (labels), RFC 3339 times
(times), kind names (kinds, over load.kinds' table), quantities (quantity)."""
