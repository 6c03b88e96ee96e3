#!/usr/bin/env bash
# Push a small random image to REF on the test registry (tests/registry/serve.sh), optionally sign it and/or
# attest it in cosign's formats (main.go says which code writes them), and print its digest:
#
#   tests/registry/push.sh 127.0.0.1:PORT/repo:tag [--sign KEY.pem [--cert CERT.pem] [--chain CHAIN.pem]]
#                          [--attest PREDICATE_TYPE PREDICATE.json --key KEY.pem]
#                          [--notary CHAIN.pem KEY.pem [--cose] [--tag-schema] [--expiry SECONDS]] [--tamper]
#                          [--referrer ARTIFACT_TYPE PAYLOAD.json [--referrer-notary CHAIN.pem KEY.pem]]...
#
# KEY.pem: an unencrypted PKCS#8 private key (ECDSA P-256, RSA or Ed25519), e.g.
#   openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
# --cert/--chain: keyless-style, KEY.pem's certificate and its chain (root last) stored with the signature as
# cosign stores a Fulcio certificate. --tamper changes the signed payload after signing (a signature that must
# not verify). --notary: a Notary signature made and stored by notation-go (tests/registry/notary.go): CHAIN.pem
# the signing certificate first and its issuers (root last), KEY.pem its PKCS#8 key; JWS envelope, COSE with
# --cose; stored as an OCI 1.1 referrer, or with --tag-schema under the referrers tag schema; --expiry: the
# signature expires that many seconds after signing. --referrer (repeatable): an OCI 1.1 referrer artifact of the
# image, of that artifact type, its one layer PAYLOAD.json (an attestation an ImageValidatingPolicy names with
# `referrer.type`); --referrer-notary signs the referrer before it with notation-go; with --tamper its payload
# changes after signing (tests/registry/referrer.go).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=$(command -v python3 || command -v python)
bin=$("$python" "$here/build.py")
exec "$bin" push "$@"
