"""A `-p` directory's non-policy documents are passed over from their apiVersion and kind, not composed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load import yaml_nodes
from kubectl_kyrec.load.documents import load_policy_documents
from kubectl_kyrec.load.policy.policies import is_policy_document
from kubectl_kyrec.load.yaml_peek import blank_plain_non_policies

ROOT = Path(__file__).resolve().parents[2]
POLICY = (ROOT / "testdata" / "examples" / "policies" / "limit-memory.yaml").read_text()


def _is_policy(api_version: str, kind: str) -> bool:
    return kind.endswith("Policy")


def test_blanks_plain_non_policies_keeping_lines() -> None:
    text = ("apiVersion: v1\nkind: ConfigMap\ndata:\n  kind: Policy\n---\n" + POLICY
            + "--- # a comment\napiVersion: 'v1'\nkind: \"Secret\"  # quoted\n...\n")
    out, blanked = blank_plain_non_policies(text, _is_policy)
    assert blanked == ["v1/ConfigMap", "v1/Secret"]
    assert out.count("\n") == text.count("\n")
    assert POLICY in out and "ConfigMap" not in out and "Secret" not in out


@pytest.mark.parametrize("text", [
    "%YAML 1.1\n---\napiVersion: v1\nkind: ConfigMap\n",           # a directive
    "--- !tagged\napiVersion: v1\nkind: ConfigMap\n",              # content after the marker
    "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n",             # a key twice: the composer refuses it
    "<<: *base\napiVersion: v1\nkind: ConfigMap\n",                # a merge key
    "apiVersion: v1\nkind: List\nitems: []\n",                     # a List's items may be policies
    "apiVersion: v1\nkind: |\n  ConfigMap\n",                      # a block scalar
    "apiVersion: v1\nkind: null\n",                                # no string to YAML
    "apiVersion: v1\nkind: *alias\n",                              # an alias
    '{"apiVersion": "v1", "kind": "ConfigMap"}\n',                 # JSON
    "  apiVersion: v1\n  kind: ConfigMap\n",                       # an indented mapping
])
def test_leaves_to_the_composer_what_it_cannot_read_plainly(text: str) -> None:
    assert blank_plain_non_policies(text, _is_policy) == (text, [])


def test_a_large_non_policy_file_below_p_is_not_composed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an earlier `-o yaml` (one document) and a state written as many documents, several MB each
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "limit-memory.yaml").write_text(POLICY)
    row = "  - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns}, data: {k: " + "v" * 200 + "}}\n"
    (policies / "eval-output.yaml").write_text("apiVersion: kyrec/v1\nkind: EvalResult\nresults:\n" + row * 12_000)
    doc = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ns\ndata:\n  k: " + "v" * 200
    doc += "\n"
    (policies / "state.yaml").write_text(doc * 12_000)
    assert all((policies / name).stat().st_size > 2_000_000 for name in ("eval-output.yaml", "state.yaml"))
    composed: list[int] = []
    convert = yaml_nodes._Converter.convert_document

    def counting(self: yaml_nodes._Converter, node: object) -> object:
        composed.append(1)
        return convert(self, node)                          # type: ignore[arg-type]

    monkeypatch.setattr(yaml_nodes._Converter, "convert_document", counting)
    files = load_policy_documents([str(policies)], is_policy_document)
    assert [d.document.kind for d in files.documents] == ["ValidatingPolicy"]
    assert len(composed) == 1                              # the policy alone
    assert files.skipped == 12_001
    assert files.skipped_kinds == {"kyrec/v1/EvalResult", "v1/ConfigMap"}
    # the notice still counts them as passed over
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"
                   "spec: {containers: [{name: c, image: nginx, resources: {limits: {memory: 1Gi}}}]}\n")
    result = CliRunner().invoke(cli, ["eval", "-p", str(policies), "-r", str(pod)])
    assert result.exit_code == 0, result.output
    assert ("passed over 12001 document(s) below the -p directories that are not policies: kyrec/v1/EvalResult, "
            "v1/ConfigMap") in result.stderr
