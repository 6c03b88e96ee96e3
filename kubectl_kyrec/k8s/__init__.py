"""Kubernetes rules that are not CEL, shared by every stage: label selectors (labels), RFC 3339 times
(times), kind names (kinds, over load.run_inputs.kinds' table), quantities (quantity),
image references (image_reference), the API server's defaulting of built-in kinds (defaulting, with
pod_defaulting and go_fields), JSON patches (json_patch)."""
