"""The context provider a run's CEL functions consult: the state (as the cluster) and a Context file.

`resource.Get/List` are answered from the run's ClusterState objects."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.cel.context import ObjectsProvider, Refused, Unread
from kubectl_kyrec.errors import KIND_NOT_CAPTURED, READ_FAILED, InputError
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
from kubectl_kyrec.load.run_inputs.sources import Inputs

if TYPE_CHECKING:
    from kubectl_kyrec.cel.environment import Environments, LibraryFactory
    from kubectl_kyrec.cel.generator_lib import GeneratorSink


def provider_for(inputs: Inputs, extra_objects: list[dict[str, Any]] | None = None,
                 base_dir: str | None = None) -> ObjectsProvider:
    """The provider answering `resource.*`, images and global context: the state and the Context file.

    Indexing a large state costs time, and several stages of one run ask: the plain one is built once.
    """
    plain = extra_objects is None and base_dir is None
    if plain and inputs.provider is not None:
        return inputs.provider  # type: ignore[no-any-return]
    provider = _build_provider(inputs, extra_objects, base_dir)
    if plain:
        inputs.provider = provider
    return provider


@dataclass
class RunEnvironments:
    """A run's CEL libraries and environments over its provider (environments_for)."""

    now: datetime.datetime
    provider: ObjectsProvider
    libraries: LibraryFactory
    envs: Environments
    _generating: tuple[Environments, GeneratorSink] | None = field(default=None, repr=False)

    @property
    def generating(self) -> tuple[Environments, GeneratorSink]:
        """The generating policies' environments and sink (generating_environments), built when first asked."""
        if self._generating is None:
            from kubectl_kyrec.cel.context import LibraryContext
            from kubectl_kyrec.evaluate.generating.engine import generating_environments

            self._generating = generating_environments(LibraryContext(now=self.now, provider=self.provider))
        return self._generating


def environments_for(inputs: Inputs, now: datetime.datetime) -> RunEnvironments:
    """The run's CEL environments over provider_for(inputs), built once as the provider is: the policy
    validation compiles every policy in them (validated_inputs) and every stage of the run (evaluation,
    generation, deletion, reports, explain) evaluates with them, and an environment compiles a text once
    (cel/engine.py), so each expression is compiled once per run whatever the command."""
    from kubectl_kyrec.cel.context import LibraryContext
    from kubectl_kyrec.cel.environment import Environments
    from kubectl_kyrec.cel.libraries import library_factory

    held = inputs.environments
    if isinstance(held, RunEnvironments) and held.now == now:
        return held
    provider = provider_for(inputs)
    libraries = library_factory(LibraryContext(now=now, provider=provider))
    made = RunEnvironments(now, provider, libraries, Environments(libraries))
    inputs.environments = made
    return made


def validated_for_run(inputs: Inputs, now: datetime.datetime, registry: Any = None
                      ) -> tuple[Inputs, RunEnvironments]:
    """`inputs` with their policies validated (evaluate/policy_validation.py) in the run's environments,
    and those environments: what every command that evaluates policies starts with. `registry`: the run's
    `--registry` (load.registry.Registry), which ImageValidatingPolicies are compiled with."""
    from kubectl_kyrec.evaluate.policy_validation import validated_inputs

    run_envs = environments_for(inputs, now)
    if registry is not None:
        # `image.GetMetadata` answers from the registry too (what the context file does not hold), as a
        # cluster's Kyverno does; the run's one provider, so every stage after this one sees it
        run_envs.provider.registry = registry
    # the generating environments only for GeneratingPolicies to compile in: built (and their engine imported)
    # when first asked, which a run without one never does
    generating = run_envs.generating if inputs.policies.generating else None
    return validated_inputs(inputs, now, run_envs.envs, generating, registry), run_envs


def _build_provider(inputs: Inputs, extra_objects: list[dict[str, Any]] | None,
                    base_dir: str | None) -> ObjectsProvider:
    resource_of, kind_of = inputs.kinds.resource_of, inputs.kinds.kind_of

    def read_file(path: str) -> Any:
        from kubectl_kyrec.load.documents import load_documents

        full = path if os.path.isabs(path) or base_dir is None else os.path.join(base_dir, path)
        docs = load_documents([full])
        return docs[0].obj if len(docs) == 1 else [d.obj for d in docs]

    refused, unread = state_lookups(inputs.state)
    objects = inputs.state.objs + list(extra_objects or [])
    try:
        return ObjectsProvider(objects, resource_of, inputs.context_file, kind_of=kind_of, read_file=read_file,
                               refused=refused, implicit_namespaces=True, unread=unread,
                               cluster_images=True)
    except ValueError as exc:
        raise InputError(f"--context-file: {exc}") from None


def state_lookups(state: ClusterState) -> tuple[Refused, Unread | None]:
    """How the state answers a lookup (a classic context entry, `resource.Get/List`) of a kind it holds no
    answer for: `refused`, why the cluster refused its LIST there (401/403, Kyverno's forbidden error);
    `unread`, for objects read from a cluster (live, or a capture: `served` is recorded), why a kind not
    listed there is unknown rather than absent (cluster/live.py reads ahead only the lookups a policy writes
    as literals), with its reason (`read-failed`, `kind-not-captured`: cel/decl.py LookupUnread, which the
    engines make the result's `undetermined` reason). A state of files alone answers as Kyverno's CLI does:
    what is not given is not found."""

    def refused(api_version: str, kind: str, namespace: str) -> str | None:
        """Why the cluster refused the state's LIST of this kind there (401/403), else None."""
        group = api_version.rpartition("/")[0]
        for key, read in state.unreadable.items():
            if key.api_version.rpartition("/")[0] == group and key.kind == kind and \
                    key.namespace in ("", namespace) and (read.status in (401, 403) or
                                                          read.reason in ("Forbidden", "Unauthorized")):
                return read.message or read.status_text()
        return None

    def unread(api_version: str, kind: str, namespace: str) -> tuple[str, str] | None:
        """Why the objects cannot tell whether this kind has an object there, and its reason, else None."""
        listed = state.is_listed(api_version, kind, namespace)
        if listed:
            return None
        where = f"namespace {namespace}" if namespace else "every namespace"
        origin = "the cluster" if state.source == "live" else "the captured cluster"
        if listed is False:
            return f"{kind}s in {where} could not be read from {origin}", READ_FAILED
        return (f"{kind}s in {where} were not read from {origin} (kyrec reads the kinds a lookup names as "
                "literals)", KIND_NOT_CAPTURED)

    return refused, unread if state.served is not None else None
