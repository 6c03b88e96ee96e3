"""The YAML loaders on PyPI, measured on kyrec's own inputs: speed, positions, exactness.

    python bench/yaml_loaders.py [--pods 50000] [--skip-corpus] [--skip-testdata] [--only NAME] [--reading-only]

Inputs: a manifest of N Pods in the shapes bench/eval.py generates (one document each, written once to
the temporary directory and reused), every YAML file of ../shared/corpus, every YAML file of testdata/.
For each loader: CPU seconds (time.process_time, one pass, the collector paused as kyrec pauses it), MB/s,
documents/s, and the files it refused. Exactness: the project's own yaml-scalar tests (the scalar and key
tests of tests/load/test_documents.py, the go-yaml v2 scalar cases of tests/cel/test_kyverno_yaml.py) run
against each loader's output. A loader that is not installed is a visible "not installed" row.

Then the -r file read the ways kyrec can read it (a fresh process each): CPU seconds and peak memory.

Positions: what the loader's Python API gives for `file:line` messages: per node (every field's line, as
LineIndex needs for policies), per document, or only in errors.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import os
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import yaml  # noqa: E402

from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents  # noqa: E402
from kubectl_kyrec.load.yaml_scalars import json_number, key_string, resolve_plain, resolve_tagged  # noqa: E402

SHARED = Path(os.environ.get("KYREC_SHARED") or ROOT.parent / "shared")


# ---------------------------------------------------------------------------------------------------------
# candidates: name, module to import (None: always there), how positions are kept, load_all(text) -> values


def _kyrec(text: str) -> list[Any]:
    return [d.value for d in iter_yaml_documents(text, "bench.yaml")]


def _pyyaml_compose(text: str) -> list[Any]:
    return list(yaml.compose_all(text, Loader=yaml.CSafeLoader))


def _pyyaml_csafe(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=yaml.CSafeLoader))


def _ruamel_c(text: str) -> list[Any]:
    from ruamel.yaml import YAML
    loader = YAML(typ="safe", pure=False)
    return list(loader.load_all(text))


def _ruamel_c_compose(text: str) -> list[Any]:
    from ruamel.yaml import YAML
    loader = YAML(typ="safe", pure=False)
    return list(loader.compose_all(text))


def _ryml_kyrec(text: str) -> list[Any]:
    """rapidyaml's tree, walked from Python with kyrec's scalar rules on plain scalars."""
    import ryml
    tree = ryml.parse_in_arena(text.encode())
    tree.resolve()  # anchors, aliases and `<<` merges expanded in the tree

    def scalar(raw: memoryview, plain: bool, tag: str | None) -> Any:
        s = bytes(raw).decode()
        if tag is not None:
            return resolve_tagged("tag:yaml.org,2002:" + tag[2:] if tag.startswith("!!") else tag, s)
        if not plain:
            return s
        value = resolve_plain(s)
        return json_number(value) if value.__class__ is float else value

    def value(n: int) -> Any:
        if tree.is_map(n):
            out = {}
            child = tree.first_child(n)
            while child != ryml.NONE:
                key = key_string(scalar(tree.key(child), tree.is_key_plain(child),
                                        bytes(tree.key_tag(child)).decode() if tree.has_key_tag(child) else None))
                if key in out:
                    raise ValueError(f"duplicate key {key}")
                out[key] = value(child)
                child = tree.next_sibling(child)
            return out
        if tree.is_seq(n):
            items = []
            child = tree.first_child(n)
            while child != ryml.NONE:
                items.append(value(child))
                child = tree.next_sibling(child)
            return items
        if tree.val_is_null(n):
            return None
        return scalar(tree.val(n), tree.is_val_plain(n),
                      bytes(tree.val_tag(n)).decode() if tree.has_val_tag(n) else None)

    root = tree.root_id()
    if tree.is_stream(root):
        return [value(d) for d in ryml.children(tree, root)]
    return [value(root)]


def _yaml_rs(text: str) -> list[Any]:
    import yaml_rs
    out = yaml_rs.loads(text)
    return out if text.count("\n---") and isinstance(out, list) else [out]


def _ryaml(text: str) -> list[Any]:
    import ryaml
    return list(ryaml.loads_all(text))


def _fast_yaml(text: str) -> list[Any]:
    import fast_yaml
    return list(fast_yaml.safe_load_all(text))


def _oryaml(text: str) -> list[Any]:
    import oryaml  # one document per call: the stream is split at its `---` lines
    return [oryaml.loads(part) for part in _split_documents(text) if part.strip()]


def _yaml12(text: str) -> list[Any]:
    import yaml12
    return list(yaml12.parse_yaml(text, multi=True))


def _pyyaml_rs(text: str) -> list[Any]:
    import pyyaml_rs
    return list(pyyaml_rs.safe_load_all(text))


def _split_documents(text: str) -> list[str]:
    parts, current = [], []
    for line in text.splitlines(keepends=True):
        if line.rstrip() == "---":
            parts.append("".join(current))
            current = []
        else:
            current.append(line)
    parts.append("".join(current))
    return parts


@dataclass(frozen=True)
class Candidate:
    name: str
    package: str          # on PyPI
    module: str | None    # imported to tell whether it is installed
    positions: str
    load_all: Callable[[str], list[Any]]
    values: bool = True   # False: gives nodes, not values (a lower bound, not a loader)


CANDIDATES = [
    Candidate("kyrec: PyYAML C composer + yaml_scalars", "PyYAML", "yaml",
              "per node (start_mark of every node)", _kyrec),
    Candidate("  of which: PyYAML C composer alone (nodes)", "PyYAML", "yaml",
              "per node", _pyyaml_compose, values=False),
    Candidate("PyYAML CSafeLoader (its own YAML 1.1 rules)", "PyYAML", "yaml",
              "none in values (nodes only via compose)", _pyyaml_csafe),
    Candidate("ruamel.yaml C loader (typ=safe)", "ruamel.yaml.clib", "ruamel.yaml",
              "none in values (nodes only via compose)", _ruamel_c),
    Candidate("  ruamel.yaml C composer alone (nodes)", "ruamel.yaml.clib", "ruamel.yaml",
              "per node", _ruamel_c_compose, values=False),
    Candidate("rapidyaml (C++) tree + yaml_scalars walk", "rapidyaml", "ryml",
              "errors only (no node location in the Python binding)", _ryml_kyrec),
    Candidate("yaml-rs (Rust)", "yaml-rs", "yaml_rs", "errors only", _yaml_rs),
    Candidate("ryaml (Rust, serde_yaml)", "ryaml", "ryaml", "errors only", _ryaml),
    Candidate("fastyaml-rs (Rust)", "fastyaml-rs", "fast_yaml", "errors only", _fast_yaml),
    Candidate("oryaml (Rust; one document per call)", "oryaml", "oryaml", "errors only", _oryaml),
    Candidate("py-yaml12 (Rust, YAML 1.2)", "py-yaml12", "yaml12", "errors only", _yaml12),
    Candidate("pyyaml-rs (Rust)", "pyyaml-rs", "pyyaml_rs", "errors only", _pyyaml_rs),
]


def installed(candidate: Candidate) -> bool:
    try:
        importlib.import_module(candidate.module or "yaml")
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------------
# inputs


def pods_manifest(n: int) -> Path:
    path = Path(tempfile.gettempdir()) / f"kyrec-bench-pods-{n}.yaml"
    if path.exists():
        return path
    from eval import pod_spec  # bench/eval.py's generator, the shapes of the corpus Pod tests
    rng = random.Random(7)
    with path.open("w") as out:
        for i in range(n):
            obj = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"p-{i}", "namespace": f"ns-{i % 50}", "labels": {"app": f"app-{i}"}},
                   "spec": pod_spec(rng, i)}
            out.write("---\n")
            out.write(yaml.dump(obj, Dumper=yaml.CSafeDumper, sort_keys=False))
    return path


def yaml_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


# ---------------------------------------------------------------------------------------------------------
# measuring


@dataclass
class Figure:
    seconds: float
    megabytes: float
    documents: int
    refused: int


def measure(candidate: Candidate, texts: list[str]) -> Figure:
    documents = refused = 0
    size = sum(len(t.encode()) for t in texts) / 1e6
    gc.collect()
    gc.disable()
    start = time.process_time()
    try:
        for text in texts:
            try:
                documents += len(candidate.load_all(text))
            except Exception:  # noqa: BLE001  any loader's own error type
                refused += 1
    finally:
        seconds = time.process_time() - start
        gc.enable()
    return Figure(seconds, size, documents, refused)


# ---------------------------------------------------------------------------------------------------------
# exactness: the project's yaml-scalar tests, run against each loader's output


_DOCUMENT_TESTS = [
    "test_yaml_1_1_booleans_like_kubectl", "test_boolean_and_number_keys_become_json_strings",
    "test_timestamps_stay_strings", "test_numbers_follow_go_yaml_and_the_json_round_trip",
    "test_values_are_plain_python_types", "test_key_order_is_kept",
    "test_merge_keys_and_aliases_expand_to_independent_copies",
]
# test_duplicate_keys_are_refused_like_kubectl and test_nan_and_infinity_are_refused also check kyrec's own
# wording; here only that the loader refuses (the wording is kyrec's to add)
_REFUSED = ["apiVersion: v1\nkind: X\nspec:\n  a: 1\n  b: 2\n  a: 3\n", "apiVersion: v1\nkind: X\nx: .inf\n"]


def _load_test_module(relative: str) -> Any:
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exactness(candidate: Candidate) -> tuple[int, int, list[str]]:
    """(passed, run, names of the failed) over the yaml-scalar tests with `candidate` as the loader."""
    import pytest

    from kubectl_kyrec.errors import InputError
    from kubectl_kyrec.model import Document, Source

    documents = _load_test_module("tests/load/test_documents.py")

    def documents_from_text(text: str, file: str, **_: Any) -> list[Document]:
        try:
            values = candidate.load_all(text)
        except InputError:
            raise
        except Exception as err:  # noqa: BLE001  a refusal, as the tests expect it: an InputError
            raise InputError(str(err).splitlines()[0] if str(err) else type(err).__name__, Source(file, 0)) from None
        return [Document(v, Source(file, 1)) for v in values if v is not None]

    documents.documents_from_text = documents_from_text
    passed, failed = 0, []
    for name in _DOCUMENT_TESTS:
        try:
            getattr(documents, name)()
            passed += 1
        except (Exception, pytest.fail.Exception):  # noqa: BLE001  an assertion, or the loader's own error
            failed.append(name)
    for text in _REFUSED:
        try:
            candidate.load_all(text)
            failed.append("refuses " + text.splitlines()[-1].strip())
        except Exception:  # noqa: BLE001  any loader's own error
            passed += 1
    # tests/cel/test_kyverno_yaml.py: the go-yaml v2 scalar table, numbers as float64 after sigs.k8s.io/yaml
    cel = _load_test_module("tests/cel/test_kyverno_yaml.py")
    mark = next(m for m in cel.test_plain_scalars_resolve_like_go_yaml_v2.pytestmark if m.name == "parametrize")
    for scalar, expected in mark.args[1]:
        try:
            got = candidate.load_all(f"v: {scalar}")[0]["v"]
            if isinstance(got, (int, float)) and not isinstance(got, bool):
                got = float(got)
            ok = got == expected and type(got) is type(expected)
        except Exception:  # noqa: BLE001
            ok = False
        if ok:
            passed += 1
        else:
            failed.append(f"v: {scalar}")
    return passed, len(_DOCUMENT_TESTS) + len(_REFUSED) + len(mark.args[1]), failed


# ---------------------------------------------------------------------------------------------------------


# reading one -r file as kyrec does, each way in a fresh process: CPU seconds and peak RSS
READING = {
    "text": "read_text + documents_from_text, a list (kyrec before streaming)",
    "list": "load_manifests, a list (streamed from the file)",
    "iter": "iter_manifests, each document dropped when the next comes (the consumer streams too)",
}


def child(mode: str, path: str) -> None:
    from kubectl_kyrec.load.documents import documents_from_text, iter_manifests, load_manifests
    from kubectl_kyrec.load.files import read_text

    gc.disable()  # as the command runs (cli/common.py)
    start = time.process_time()
    if mode == "text":
        count = len(documents_from_text(read_text(path)[1], path))
    elif mode == "list":
        count = len(load_manifests(path)[0])
    else:
        count = sum(1 for _ in iter_manifests(path))
    seconds = time.process_time() - start
    print(json.dumps({"seconds": seconds, "rss": peak_rss_mib(), "documents": count}))


def peak_rss_mib() -> float:
    """This process's peak resident memory. Not ru_maxrss: Linux carries that over fork and exec, so a
    child started by a large parent reports the parent's peak."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reading_rows(path: Path) -> None:
    import subprocess

    base = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                           "import kubectl_kyrec.load.documents, yaml_loaders; print(yaml_loaders.peak_rss_mib())",
                           str(ROOT / "bench")], check=True, capture_output=True, text=True)
    print(f"\nReading {path.name} ({path.stat().st_size / 1e6:.1f} MB) as -r does, each in a fresh process "
          f"(the interpreter with kyrec's loader imported: {float(base.stdout):.0f} MiB):\n")
    print("| how | CPU s | peak RSS MiB | documents |")
    print("|---|---|---|---|")
    for mode, label in READING.items():
        out = subprocess.run([sys.executable, __file__, "--child", mode, str(path)],
                             check=True, capture_output=True, text=True)
        figure = json.loads(out.stdout)
        print(f"| {label} | {figure['seconds']:.2f} | {figure['rss']:.0f} | {figure['documents']:,} |", flush=True)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--reading-only", action="store_true", help="only the -r reading rows")
    parser.add_argument("--skip-corpus", action="store_true")
    parser.add_argument("--skip-testdata", action="store_true")
    parser.add_argument("--only", help="measure only the candidates whose name contains one of these (comma-separated)")
    args = parser.parse_args()

    inputs: list[tuple[str, list[str]]] = []
    pods = pods_manifest(args.pods)
    if args.reading_only:
        reading_rows(pods)
        return
    inputs.append((f"{args.pods:,} Pods, one file", [pods.read_text()]))
    if not args.skip_corpus:
        inputs.append(("../shared/corpus", [p.read_text(errors="replace") for p in yaml_files(SHARED / "corpus")]))
    if not args.skip_testdata:
        inputs.append(("testdata/", [p.read_text(errors="replace") for p in yaml_files(ROOT / "testdata")]))

    print("| loader | positions | exact (yaml-scalar tests) | " +
          " | ".join(f"{label}: s, MB/s, docs/s, refused" for label, _ in inputs) + " |")
    print("|---|---|---|" + "---|" * len(inputs))
    for candidate in CANDIDATES:
        if args.only and not any(part in candidate.name for part in args.only.split(",")):
            continue
        if not installed(candidate):
            print(f"| {candidate.name} | | not installed (`pip install {candidate.package}`) |" + " |" * len(inputs))
            continue
        if candidate.values:
            passed, run, failed = exactness(candidate)
            exact = f"{passed}/{run}" + (f" (fails: {', '.join(failed[:6])}{' ...' if len(failed) > 6 else ''})"
                                         if failed else "")
        else:
            exact = "n/a (nodes only)"
        cells = []
        for _, texts in inputs:
            try:
                f = measure(candidate, texts)
            except Exception:  # noqa: BLE001
                cells.append("crashed: " + traceback.format_exc(limit=1).splitlines()[-1][:60])
                continue
            rate = f.megabytes / f.seconds if f.seconds else math.inf
            docs = f.documents / f.seconds if f.seconds else math.inf
            cells.append(f"{f.seconds:.2f}, {rate:.1f}, {docs:,.0f}, {f.refused}")
        print(f"| {candidate.name} | {candidate.positions} | {exact} | " + " | ".join(cells) + " |", flush=True)
    reading_rows(pods)


if __name__ == "__main__":
    main()
