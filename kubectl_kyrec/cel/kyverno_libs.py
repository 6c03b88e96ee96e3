"""Kyverno's CEL libraries for one policy kind (docs/semantics/cel-libraries.md#kyvernos-libraries).

| kind                          | gets                                                                   |
|-------------------------------|------------------------------------------------------------------------|
| ValidatingPolicy              | every library below, `resource.*` with a namespace argument            |
| NamespacedValidatingPolicy    | the same, `resource.*` without it (the policy's namespace); HTTP calls |
|                               | fail unless allowed; globalContext lookups fail                        |
| GeneratingPolicy              | every library except `parseServiceAccount` (no user library)           |
| NamespacedGeneratingPolicy    | as GeneratingPolicy, with the namespaced restrictions above            |
| DeletingPolicy                | as GeneratingPolicy (kk: pkg/cel/policies/dpol/compiler/compiler.go)   |
| NamespacedDeletingPolicy      | the same, `resource.*` without a namespace argument (the policy's);    |
|                               | HTTP and globalContext are not confined: the deleting controller binds |
|                               | its context as it is (dpol compiler/policy.go Evaluate)                |
| MutatingPolicy                | every library but hash and gzip; `resource.*` of a namespaced one      |
|                               | without namespace argument, with no HTTP/globalContext restriction     |
|                               | (kk: pkg/cel/policies/mpol/compiler/compiler.go)                       |
| ValidatingAdmissionPolicy     | none: Kubernetes evaluates VAPs with its own libraries only            |
| ImageValidatingPolicy (and    | globalContext, http, image, imagedata, resource, user, math, hash,     |
| its Namespaced form)          | json, yaml, random, time, transform (no x509, no gzip: kk              |
|                               | imageverification/evaluator/compiler.go); the image verification       |
|                               | functions are bound per policy (cel/kyverno_imageverify.py)            |

`generator.Apply` belongs to the generating-policy engine and is not built here.
"""

from __future__ import annotations

from kubectl_kyrec.cel.context import LibraryContext
from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.kyverno_external import global_context_library, http_library, image_data_library
from kubectl_kyrec.cel.kyverno_gzip import gzip_library
from kubectl_kyrec.cel.kyverno_hash import hash_library
from kubectl_kyrec.cel.kyverno_image import image_library
from kubectl_kyrec.cel.kyverno_json import json_library
from kubectl_kyrec.cel.kyverno_math import math_library
from kubectl_kyrec.cel.kyverno_random import random_library
from kubectl_kyrec.cel.kyverno_resource import resource_library
from kubectl_kyrec.cel.kyverno_time import time_library
from kubectl_kyrec.cel.kyverno_transform import transform_library
from kubectl_kyrec.cel.kyverno_user import user_library
from kubectl_kyrec.cel.kyverno_x509 import x509_library
from kubectl_kyrec.cel.kyverno_yaml import yaml_library

VALIDATING_KINDS = frozenset({"ValidatingPolicy", "NamespacedValidatingPolicy"})
GENERATING_KINDS = frozenset({"GeneratingPolicy", "NamespacedGeneratingPolicy"})
DELETING_KINDS = frozenset({"DeletingPolicy", "NamespacedDeletingPolicy"})
MUTATING_KINDS = frozenset({"MutatingPolicy", "NamespacedMutatingPolicy"})
IMAGE_VALIDATING_KINDS = frozenset({"ImageValidatingPolicy", "NamespacedImageValidatingPolicy"})
NAMESPACED_KINDS = frozenset({"NamespacedValidatingPolicy", "NamespacedGeneratingPolicy", "NamespacedDeletingPolicy",
                              "NamespacedImageValidatingPolicy"})
# the namespaced kinds whose HTTP and globalContext calls are confined
CONFINED_KINDS = frozenset({"NamespacedValidatingPolicy", "NamespacedGeneratingPolicy"})
POLICY_KINDS = (VALIDATING_KINDS | GENERATING_KINDS | MUTATING_KINDS | DELETING_KINDS | IMAGE_VALIDATING_KINDS
                | {"ValidatingAdmissionPolicy"})


def kyverno_libraries(ctx: LibraryContext, *, policy_kind: str,
                      allow_http_in_namespaced_policies: bool = False) -> list[Library]:
    """The Kyverno libraries `policy_kind` is compiled with, bound to `ctx`.

    For a namespaced kind, `ctx.policy_namespace` must be the policy's namespace.
    `allow_http_in_namespaced_policies` is Kyverno's `--allowHTTPInNamespacedPolicies`.
    """
    if policy_kind not in POLICY_KINDS:
        raise ValueError(f"no Kyverno libraries for policy kind {policy_kind!r}; expected one of "
                         f"{', '.join(sorted(POLICY_KINDS))}")
    if policy_kind == "ValidatingAdmissionPolicy":
        return []
    if policy_kind in MUTATING_KINDS:
        return _mutating_libraries(ctx, namespaced=policy_kind == "NamespacedMutatingPolicy")
    namespaced = policy_kind in NAMESPACED_KINDS
    if namespaced and not ctx.policy_namespace:
        raise ValueError(f"{policy_kind} needs the policy's namespace in LibraryContext.policy_namespace")
    provider = ctx.provider
    if policy_kind in IMAGE_VALIDATING_KINDS:
        # the ivpol compiler confines neither globalContext nor http for its namespaced kind
        return [
            global_context_library(provider),
            http_library(provider),
            image_library(),
            image_data_library(provider),
            resource_library(provider, ctx.policy_namespace if namespaced else ""),
            user_library(),
            math_library(),
            hash_library(),
            json_library(),
            yaml_library(),
            random_library(ctx.rng),
            time_library(ctx.now),
            transform_library(),
        ]
    confined = policy_kind in CONFINED_KINDS
    libraries = [
        global_context_library(provider, denied=confined),
        http_library(provider, denied=confined and not allow_http_in_namespaced_policies),
        image_library(),
        image_data_library(provider),
        resource_library(provider, ctx.policy_namespace if namespaced else ""),
        hash_library(),
        math_library(),
        json_library(),
        yaml_library(),
        random_library(ctx.rng),
        x509_library(),
        time_library(ctx.now),
        transform_library(),
        gzip_library(),
    ]
    if policy_kind in VALIDATING_KINDS:
        libraries.append(user_library())
    return libraries


def _mutating_libraries(ctx: LibraryContext, *, namespaced: bool) -> list[Library]:
    """The mpol compiler's list (compiler.go Compile): no hash or gzip library; a namespaced policy's
    `resource.*` reads its own namespace, and its HTTP and globalContext calls are not restricted."""
    if namespaced and not ctx.policy_namespace:
        raise ValueError("NamespacedMutatingPolicy needs the policy's namespace in LibraryContext.policy_namespace")
    provider = ctx.provider
    return [
        global_context_library(provider, denied=False),
        http_library(provider, denied=False),
        image_library(),
        image_data_library(provider),
        math_library(),
        resource_library(provider, ctx.policy_namespace if namespaced else ""),
        user_library(),
        json_library(),
        yaml_library(),
        random_library(ctx.rng),
        x509_library(),
        time_library(ctx.now),
        transform_library(),
    ]
