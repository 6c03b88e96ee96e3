"""The double's storage: objects per resource type, uid and resourceVersion bookkeeping, paginated LISTs
with continue tokens, server-side apply, create/update with field ownership, preconditioned delete."""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tests.kubeapi import fields as fp
from tests.kubeapi import status as st
from tests.kubeapi.catalogue import Catalogue, ResourceType
from tests.kubeapi.selectors import parse_field_selector, parse_label_selector


@dataclass(frozen=True)
class Manager:
    manager: str
    operation: str                  # "Apply" | "Update"
    api_version: str
    time: str
    fields: frozenset[fp.Path]

    @property
    def identity(self) -> tuple[str, str, str]:
        # an applier is one manager whatever apiVersion it applies with; an updater is one per apiVersion
        return (self.manager, self.operation, "" if self.operation == "Apply" else self.api_version)

    def printed(self) -> str:
        """How conflict messages name it (managedfields' printManager)."""
        if self.operation == "Update":
            return f'"{self.manager}" using {self.api_version}'
        return f'"{self.manager}"'

    def to_json(self) -> dict[str, Any]:
        return {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
                "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": fp.to_fields_v1(self.fields)}


def _sorted_managers(managers: list[Manager]) -> list[Manager]:
    # sortEncodedManagedFields: operation, then time, then manager name, then apiVersion
    return sorted(managers, key=lambda m: (m.operation, m.time, m.manager, m.api_version))


@dataclass
class Entry:
    obj: dict[str, Any]
    managers: list[Manager] = field(default_factory=list)


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise st.bad_request(f"continue key is not valid: {token!r}") from None


class Store:
    def __init__(self, catalogue: Catalogue, now: Callable[[], datetime.datetime] | None = None) -> None:
        self.catalogue = catalogue
        self.lock = threading.RLock()
        self.rv = 1000
        self.compacted = 0
        self.uids = 0
        self._now = now or (lambda: datetime.datetime.now(datetime.timezone.utc))
        self.objects: dict[tuple[str, str], dict[str, Entry]] = {}
        self._sorted: dict[tuple[str, str], list[str]] = {}

    # ---- helpers -------------------------------------------------------------------------------------

    def timestamp(self) -> str:
        return self._now().strftime("%Y-%m-%dT%H:%M:%SZ")

    def _bucket(self, rtype: ResourceType) -> dict[str, Entry]:
        return self.objects.setdefault((rtype.group, rtype.resource), {})

    def _keys(self, rtype: ResourceType) -> list[str]:
        k = (rtype.group, rtype.resource)
        if k not in self._sorted:
            self._sorted[k] = sorted(self._bucket(rtype))
        return self._sorted[k]

    def _touch(self, rtype: ResourceType) -> None:
        self._sorted.pop((rtype.group, rtype.resource), None)

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _next_uid(self) -> str:
        self.uids += 1
        return f"00000000-0000-4000-8000-{self.uids:012d}"

    def compact(self) -> None:
        """Make every continue token handed out so far stale (as etcd compaction does)."""
        with self.lock:
            self.rv += 1
            self.compacted = self.rv

    @staticmethod
    def _served(rtype: ResourceType, version: str, obj: Mapping[str, Any], *, in_list: bool) -> dict[str, Any]:
        out = dict(obj)
        if in_list and not rtype.crd:
            out.pop("apiVersion", None)
            out.pop("kind", None)
        else:
            out["apiVersion"] = rtype.api_version(version)
            out["kind"] = rtype.kind
        return out

    # ---- reads ---------------------------------------------------------------------------------------

    def list(self, rtype: ResourceType, version: str, namespace: str, *, label_selector: str = "",
             field_selector: str = "", limit: int = 0, continue_token: str = "") -> dict[str, Any]:
        labels_ok = parse_label_selector(label_selector) if label_selector else None
        fields_ok = parse_field_selector(field_selector) if field_selector else None
        with self.lock:
            snapshot, start = self.rv, ""
            if continue_token:
                snapshot, start = decode_continue(continue_token)
                if snapshot < self.compacted:
                    raise st.expired_continue(encode_continue(self.rv, start))
            bucket = self._bucket(rtype)
            keys = self._keys(rtype)
            prefix = f"{namespace}/" if namespace and rtype.namespaced else ""
            items: list[dict[str, Any]] = []
            last = ""
            remaining = 0
            more = False
            for key in keys:
                if prefix and not key.startswith(prefix):
                    continue
                if start and key < start:
                    continue
                obj = bucket[key].obj
                if labels_ok is not None and not labels_ok((obj.get("metadata") or {}).get("labels") or {}):
                    continue
                if fields_ok is not None and not fields_ok(obj):
                    continue
                if limit and len(items) >= limit:
                    more = True
                    remaining += 1
                    continue
                items.append(self._served(rtype, version, obj, in_list=True))
                last = key
            meta: dict[str, Any] = {"resourceVersion": str(snapshot)}
            if more:
                meta["continue"] = encode_continue(snapshot, last + "\x00")
                if labels_ok is None and fields_ok is None:
                    meta["remainingItemCount"] = remaining
            return {"kind": rtype.list_kind, "apiVersion": rtype.api_version(version), "metadata": meta,
                    "items": items}

    def get(self, rtype: ResourceType, version: str, namespace: str, name: str) -> dict[str, Any]:
        with self.lock:
            entry = self._bucket(rtype).get(_key(namespace if rtype.namespaced else "", name))
            if entry is None:
                raise st.not_found(rtype.group, rtype.resource, name)
            return self._served(rtype, version, entry.obj, in_list=False)

    def all_objects(self, rtype: ResourceType) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(self._served(rtype, rtype.versions[0], e.obj, in_list=False))
                    for e in self._bucket(rtype).values()]

    # ---- writes ---------------------------------------------------------------------------------------

    def _check_body(self, rtype: ResourceType, version: str, namespace: str, name: str | None,
                    body: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(body, Mapping):
            raise st.bad_request("the body of the request was in an unknown format")
        if body.get("apiVersion") not in (None, rtype.api_version(version)) or \
                body.get("kind") not in (None, rtype.kind):
            raise st.bad_request(f"the API version in the data ({body.get('apiVersion')}) does not match the "
                                 f"expected API version ({rtype.api_version(version)})")
        meta = body.get("metadata") or {}
        if name is not None and meta.get("name") not in (None, name):
            raise st.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the "
                                 f"URL ({name})")
        if rtype.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise st.bad_request("the namespace of the provided object does not match the namespace sent on "
                                 "the request")
        return copy.deepcopy(dict(body))

    def _finish(self, rtype: ResourceType, version: str, namespace: str, name: str, obj: dict[str, Any],
                old: Entry | None, managers: list[Manager]) -> dict[str, Any]:
        obj["apiVersion"] = rtype.api_version(version)
        obj["kind"] = rtype.kind
        meta = obj.setdefault("metadata", {})
        meta["name"] = name
        if rtype.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if rtype.kind == "Secret" and isinstance(obj.get("stringData"), Mapping):
            # the API server folds stringData into data on every write
            data = dict(obj.get("data") or {})
            for k, v in obj.pop("stringData").items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data
        fp.apply_key_defaults(obj, rtype.kind)
        if old is None:
            meta["uid"] = self._next_uid()
            meta["creationTimestamp"] = self.timestamp()
            if "spec" in obj:
                meta["generation"] = 1
        else:
            for k in ("uid", "creationTimestamp", "generation"):
                if k in old.obj["metadata"]:
                    meta[k] = old.obj["metadata"][k]
                else:
                    meta.pop(k, None)
            if "spec" in obj and obj.get("spec") != old.obj.get("spec"):
                meta["generation"] = int(meta.get("generation") or 0) + 1
        managers = _sorted_managers([m for m in managers if m.fields])
        meta["managedFields"] = [m.to_json() for m in managers]
        return obj

    def _store(self, rtype: ResourceType, namespace: str, name: str, obj: dict[str, Any],
               managers: list[Manager], dry_run: bool) -> None:
        if dry_run:
            return
        obj["metadata"]["resourceVersion"] = self._next_rv()
        bucket = self._bucket(rtype)
        key = _key(namespace if rtype.namespaced else "", name)
        if key not in bucket:
            self._touch(rtype)
        bucket[key] = Entry(obj, _sorted_managers([m for m in managers if m.fields]))

    def create(self, rtype: ResourceType, version: str, namespace: str, body: Mapping[str, Any], *,
               manager: str, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            obj = self._check_body(rtype, version, namespace, None, body)
            name = str((obj.get("metadata") or {}).get("name") or "")
            if not name:
                raise st.invalid(rtype.group, rtype.kind, "", "metadata.name",
                                 "Required value: name or generateName is required")
            key = _key(namespace if rtype.namespaced else "", name)
            if key in self._bucket(rtype):
                raise st.already_exists(rtype.group, rtype.resource, name)
            (obj.get("metadata") or {}).pop("managedFields", None)
            obj = self._finish(rtype, version, namespace, name, obj, None, [])
            managers = self._updated(rtype, None, obj, [], manager, rtype.api_version(version))
            obj["metadata"]["managedFields"] = [m.to_json() for m in _sorted_managers(managers)]
            self._store(rtype, namespace, name, obj, managers, dry_run)
            return self._served(rtype, version, obj, in_list=False)

    def update(self, rtype: ResourceType, version: str, namespace: str, name: str, body: Mapping[str, Any], *,
               manager: str, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            obj = self._check_body(rtype, version, namespace, name, body)
            old = self._bucket(rtype).get(_key(namespace if rtype.namespaced else "", name))
            if old is None:
                raise st.not_found(rtype.group, rtype.resource, name)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv and rv != old.obj["metadata"]["resourceVersion"]:
                raise st.conflict(rtype.group, rtype.resource, name, "the object has been modified; please apply "
                                  "your changes to the latest version and try again")
            (obj.get("metadata") or {}).pop("managedFields", None)
            obj = self._finish(rtype, version, namespace, name, obj, old, old.managers)
            managers = self._updated(rtype, old.obj, obj, old.managers, manager, rtype.api_version(version))
            # a manager left owning nothing is dropped from managedFields, as kube-apiserver does
            managers = [m for m in managers if m.fields]
            obj["metadata"]["managedFields"] = [m.to_json() for m in _sorted_managers(managers)]
            self._store(rtype, namespace, name, obj, managers, dry_run)
            return self._served(rtype, version, obj, in_list=False)

    def _updated(self, rtype: ResourceType, old: Mapping[str, Any] | None, new: Mapping[str, Any],
                 managers: list[Manager], manager: str, api_version: str) -> list[Manager]:
        modified, added, removed = fp.compare(old, new, rtype.kind, rtype.status_subresource)
        changed = modified | added
        out = []
        mine = frozenset()
        for m in managers:
            if (m.manager, m.operation, m.api_version) == (manager, "Update", api_version):
                mine = m.fields
                continue
            # an update always wins: it takes over what it changed
            out.append(replace(m, fields=frozenset(m.fields - changed - removed)))
        fields = frozenset((mine | changed) - removed)
        if fields:
            out.append(Manager(manager, "Update", api_version, self.timestamp(), fields))
        return out

    def apply(self, rtype: ResourceType, version: str, namespace: str, name: str, config: Mapping[str, Any], *,
              manager: str, force: bool, dry_run: bool = False) -> tuple[int, dict[str, Any]]:
        """Server-side apply; (201 created | 200, object)."""
        with self.lock:
            cfg = self._check_body(rtype, version, namespace, name, config)
            if not cfg.get("apiVersion") or not cfg.get("kind"):
                raise st.bad_request("apiVersion and kind must be set in an apply patch")
            meta = cfg.get("metadata") or {}
            if meta.get("managedFields"):
                raise st.bad_request("metadata.managedFields must be nil")
            key = _key(namespace if rtype.namespaced else "", name)
            old = self._bucket(rtype).get(key)
            if old is not None and meta.get("resourceVersion") not in (None, "",
                                                                         old.obj["metadata"]["resourceVersion"]):
                raise st.conflict(rtype.group, rtype.resource, name, "the object has been modified; please apply "
                                  "your changes to the latest version and try again")
            # a uid in the body, as kube-apiserver 1.36 answers it: a 409 when there is no object (so an apply
            # naming the uid it read cannot re-create a deleted object), a 422 (immutable) when the object
            # there has another uid
            if old is None and meta.get("uid"):
                raise st.conflict(rtype.group, rtype.resource, name,
                                  f"uid mismatch: the provided object specified uid {meta['uid']}, and no existing "
                                  "object was found")
            if old is not None and meta.get("uid") not in (None, "", old.obj["metadata"]["uid"]):
                message = f'Invalid value: "{meta["uid"]}": field is immutable'
                cause = {"reason": "FieldValueInvalid", "message": message, "field": "metadata.uid"}
                raise st.status(422, f'{rtype.kind} "{name}" is invalid: metadata.uid: {message}', "Invalid",
                                {"name": name, **({"group": rtype.group} if rtype.group else {}), "kind": rtype.kind,
                                 "causes": [cause, cause]})      # 1.36 lists the cause twice
            api_version = rtype.api_version(version)
            applied = fp.applied_set(cfg, rtype.kind, rtype.status_subresource)
            managers = list(old.managers) if old else []
            me = next((m for m in managers if m.identity == (manager, "Apply", "")), None)
            others = [m for m in managers if m is not me]
            live = copy.deepcopy(old.obj) if old else {"metadata": {}}
            for k in ("managedFields", "resourceVersion"):
                live["metadata"].pop(k, None)
            view = fp.owned_view(cfg, rtype.status_subresource)
            new = fp.merge(live, view, rtype.kind)
            if me is not None:
                owned_by_others = frozenset().union(*(m.fields for m in others)) if others else frozenset()
                fp.remove_paths(new, me.fields - applied - owned_by_others)
            new = self._finish(rtype, version, namespace, name, new, old, managers)
            modified, added, removed = fp.compare(old.obj if old else None, new, rtype.kind,
                                                  rtype.status_subresource)
            changed = modified | added
            conflicts = [(m, p) for m in others for p in m.fields & changed]
            if conflicts and not force:
                conflicts.sort(key=lambda c: (c[0].printed(), fp.path_sort_key(c[1])))
                raise st.apply_conflict([(m.printed(), fp.path_string(p)) for m, p in conflicts])
            kept = [replace(m, fields=frozenset(m.fields - changed - removed)) for m in others]
            mine = Manager(manager, "Apply", api_version, self.timestamp(), applied)
            if me is not None and me.fields == applied and me.api_version == api_version:
                mine = me      # nothing new owned: the entry (and its time) stays as it was
            result = [*kept, mine]
            new["metadata"]["managedFields"] = [m.to_json() for m in _sorted_managers([m for m in result
                                                                                          if m.fields])]
            if old is not None and _same(old, new, result):
                return 200, self._served(rtype, version, old.obj, in_list=False)
            self._store(rtype, namespace, name, new, result, dry_run)
            return (200 if old else 201), self._served(rtype, version, new, in_list=False)

    def delete(self, rtype: ResourceType, version: str, namespace: str, name: str, *,
               preconditions: Mapping[str, Any] | None = None, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            key = _key(namespace if rtype.namespaced else "", name)
            entry = self._bucket(rtype).get(key)
            if entry is None:
                raise st.not_found(rtype.group, rtype.resource, name)
            meta = entry.obj["metadata"]
            pre = preconditions or {}
            uid_differs = pre.get("uid") is not None and pre["uid"] != meta.get("uid")
            rv_differs = (pre.get("resourceVersion") is not None
                          and pre["resourceVersion"] != meta.get("resourceVersion"))
            if (uid_differs or rv_differs) and rtype.resource == "namespaces" and not rtype.group:
                # the namespace registry checks preconditions itself, with the storage layer's wording
                failure = (f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                           f"{meta.get('uid')}" if uid_differs else
                           f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                           f"ResourceVersion in object meta: {meta.get('resourceVersion')}")
                raise st.conflict("", "namespaces", name, failure)
            # every other kind: rest.BeforeDelete checks them (uid first) and names the Kind, not the resource
            # (kube-apiserver 1.36: `Operation cannot be fulfilled on ConfigMap "x": the ResourceVersion in
            # the precondition (1) does not match ...`; the storage layer's "StorageError: invalid object" is
            # no longer reached)
            if uid_differs:
                raise st.conflict(rtype.group, rtype.kind, name,
                                  f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                                  f"({meta.get('uid')}). The object might have been deleted and then recreated")
            if rv_differs:
                raise st.conflict(rtype.group, rtype.kind, name,
                                  f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not "
                                  f"match the ResourceVersion in record ({meta.get('resourceVersion')}). The "
                                  "object might have been modified")
            if not dry_run:
                del self._bucket(rtype)[key]
                self._touch(rtype)
                self._next_rv()
                if rtype.resource == "namespaces" and not rtype.group:
                    self._delete_namespace_contents(name)
            details: dict[str, Any] = {"name": name}
            if rtype.group:
                details["group"] = rtype.group
            details["kind"] = rtype.resource
            details["uid"] = meta.get("uid")
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def _delete_namespace_contents(self, namespace: str) -> None:
        for (group, resource), bucket in self.objects.items():
            rtype = next((t for t in self.catalogue.types if (t.group, t.resource) == (group, resource)), None)
            if rtype is None or not rtype.namespaced:
                continue
            for key in [k for k in bucket if k.startswith(f"{namespace}/")]:
                del bucket[key]
            self._sorted.pop((group, resource), None)

    # ---- seeding (Python side, no HTTP) ----------------------------------------------------------------

    def seed(self, obj: Mapping[str, Any], *, manager: str = "kubectl-create", operation: str = "Update",
             force: bool = True) -> dict[str, Any]:
        """Store an object as if `manager` had written it: Update (create/replace) or Apply. Keeps given
        uid, resourceVersion and managedFields when the object carries them."""
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        rtype = self.catalogue.by_kind(api_version, kind)
        if rtype is None:
            raise KeyError(f"the double does not serve {api_version} {kind}")
        version = api_version.rpartition("/")[2]
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or ("default" if rtype.namespaced else ""))
        name = str(meta["name"])
        with self.lock:
            given = copy.deepcopy(dict(obj))
            preset = {k: meta[k] for k in ("uid", "resourceVersion", "creationTimestamp") if meta.get(k)}
            if meta.get("managedFields"):
                managers = [Manager(m["manager"], m.get("operation", "Update"), m.get("apiVersion", api_version),
                                    m.get("time", self.timestamp()), fp.from_fields_v1(m.get("fieldsV1") or {}))
                            for m in meta["managedFields"]]
                given["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
                done = self._finish(rtype, version, namespace, name, given, None, managers)
                self._store(rtype, namespace, name, done, managers, False)
            elif operation == "Apply":
                for k in ("uid", "resourceVersion", "creationTimestamp"):
                    given.get("metadata", {}).pop(k, None)
                self.apply(rtype, version, namespace, name, given, manager=manager, force=force)
            else:
                old = self._bucket(rtype).get(_key(namespace if rtype.namespaced else "", name))
                for k in ("uid", "resourceVersion", "creationTimestamp"):
                    given.get("metadata", {}).pop(k, None)
                if old is None:
                    self.create(rtype, version, namespace, given, manager=manager)
                else:
                    self.update(rtype, version, namespace, name, given, manager=manager)
            entry = self._bucket(rtype)[_key(namespace if rtype.namespaced else "", name)]
            entry.obj["metadata"].update(preset)
            return copy.deepcopy(self._served(rtype, version, entry.obj, in_list=False))

    def mutate(self, api_version: str, kind: str, namespace: str, name: str,
               change: Callable[[dict[str, Any]], None], *, manager: str = "kubectl-edit") -> dict[str, Any]:
        """Edit a stored object as an Update by `manager` (what `kubectl edit` does)."""
        rtype = self.catalogue.by_kind(api_version, kind)
        if rtype is None:
            raise KeyError(kind)
        version = api_version.rpartition("/")[2]
        with self.lock:
            obj = copy.deepcopy(self.get(rtype, version, namespace, name))
            change(obj)
            obj["metadata"].pop("managedFields", None)
            return self.update(rtype, version, namespace, name, obj, manager=manager)


def _same(old: Entry, new: Mapping[str, Any], managers: list[Manager]) -> bool:
    a = {k: v for k, v in old.obj.items() if k != "metadata"}
    b = {k: v for k, v in new.items() if k != "metadata"}
    ma = {k: v for k, v in old.obj["metadata"].items() if k not in ("managedFields", "resourceVersion")}
    mb = {k: v for k, v in new["metadata"].items() if k not in ("managedFields", "resourceVersion")}
    before = {m.identity: m.fields for m in old.managers}
    after = {m.identity: m.fields for m in managers if m.fields}
    return a == b and ma == mb and before == after
