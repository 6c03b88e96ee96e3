"""Go emulation, one place per concept: what Kyverno's and Kubernetes' Go code prints and parses, byte for byte.

json (encoding/json: Marshal, the `any` round trip), strconv (FormatFloat, Quote, ParseFloat, ParseInt),
fmt (`%v`), time (ParseDuration, Duration.String, layouts, RFC 3339), wildcard (go-wildcard, Kyverno's
pkg/utils/wildcard). Bottom layer: imports nothing of kubectl_kyrec outside this package.
"""
