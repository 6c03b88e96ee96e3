"""The image verification functions of an ImageValidatingPolicy, bound to one policy (kk:
pkg/cel/libs/imageverify lib.go and impl.go): `verifyImageSignatures(image, attestors)`,
`verifyAttestationSignatures(image, attestation, attestors)`, `extractPayload(image, attestation)` and
`getImageData(image)`.

Each of them, in Kyverno, fetches the image's manifest and signatures from its registry and checks them
with cosign or notation; kyrec does neither offline. What Kyverno decides before it reaches a registry is
decided here as it does: an image no `matchImageReferences` entry matches counts 0 verified attestors, an
empty attestor list counts 0, and an attestation the policy does not declare is Kyverno's error;
`getImageData` answers with image data the run was given (a kyrec extension: Kyverno's CLI asks the
registry even then). Anything past that point raises a CelFunctionError carrying NEEDS_REGISTRY: the
expression evaluates to an error, and the ivpol evaluator turns an error carrying it into `undetermined`
(never a pass). CEL's logical operators absorb an error where the other side decides the answer, so a
value that survives one is the value whatever the registry would have said.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn

# the text every registry-bound failure carries (see needs_registry)
NEEDS_REGISTRY = "needs registry access"

ImageMatcher = Callable[[str], bool]
"""matching.MatchImage over the policy's matchImageReferences (True when there are none); raises
CelFunctionError when a CEL reference fails."""


def needs_registry(error: str | None) -> bool:
    """Whether an evaluation error came from a function that needs a registry (or a signature check)."""
    return error is not None and NEEDS_REGISTRY in error


def _offline(call: str, what: str) -> CelFunctionError:
    return CelFunctionError(f"{call}: {NEEDS_REGISTRY} to {what} (kyrec verifies no signature offline)")


ImageData = Callable[[str], Any]
"""The image data the run was given for an image (what `image.GetMetadata` answers), or None."""


def imageverify_library(matches: ImageMatcher, attestations: Collection[str],
                        supplied: ImageData = lambda image: None) -> Library:
    """The functions for one policy: `matches` decides its matchImageReferences, `attestations` are the
    names it declares, `supplied` gives image data the run was given: `getImageData` answers with it, as
    Kyverno's answer has the same fields (imagedataloader ImageDescriptor) as `image.GetMetadata`'s."""

    def verify_images(image: str, attestors: list[Any]) -> int:
        if not matches(image) or not attestors:
            return 0
        raise _offline(f"verifyImageSignatures({image!r})", "verify its signatures")

    def verify_attestations(image: str, attestation: str, attestors: list[Any]) -> int:
        if not matches(image) or not attestors:
            return 0
        if attestation not in attestations:
            raise CelFunctionError(f"attestation not found in policy: {attestation}")
        raise _offline(f"verifyAttestationSignatures({image!r}, {attestation!r})", "verify its attestations")

    def extract_payload(image: str, attestation: str) -> Any:
        if attestation not in attestations:
            raise CelFunctionError(f"attestation not found in policy: {attestation}")
        raise _offline(f"extractPayload({image!r}, {attestation!r})", "fetch the attestation's payload")

    def image_data(image: str) -> Any:
        data = supplied(image)
        if data is None:
            raise _offline(f"getImageData({image!r})", "fetch its manifest and config")
        return data

    return Library("kyverno.imageverify", [
        fn("verifyImageSignatures", Overload("verify_image_signature_string_stringarray", ["string", "list<dyn>"],
                                             "int", verify_images)),
        fn("verifyAttestationSignatures", Overload("verify_image_attestations_string_string_stringarray",
                                                   ["string", "string", "list<dyn>"], "int", verify_attestations)),
        fn("getImageData", Overload("get_image_data_string", ["string"], "dyn", image_data)),
        fn("extractPayload", Overload("payload_string_string", ["string", "string"], "dyn", extract_payload)),
    ])
