"""Terminal manners: colour only on a terminal and never with NO_COLOR / TERM=dumb; tables cut to fit."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_kyrec.cli.terminal import color_enabled
from kubectl_kyrec.render.fit import END, MIDDLE, START, cut_middle, fit_rows

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "testdata" / "diff" / "sync-off-edited-downstream"


def test_color_rules() -> None:
    assert color_enabled("auto", is_tty=True, environ={}) is True
    assert color_enabled("auto", is_tty=False, environ={}) is False
    assert color_enabled("auto", is_tty=True, environ={"NO_COLOR": "1"}) is False
    assert color_enabled("auto", is_tty=True, environ={"NO_COLOR": ""}) is True      # empty means unset
    assert color_enabled("auto", is_tty=True, environ={"TERM": "dumb"}) is False
    assert color_enabled("never", is_tty=True, environ={}) is False
    assert color_enabled("always", is_tty=False, environ={"NO_COLOR": "1"}) is True  # the flag wins


def _on_a_terminal(*args: str, env: dict[str, str]) -> str:
    """Run kyrec with stdout on a pseudo-terminal and return what it printed there."""
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", "from kubectl_kyrec.cli.main import main; main()", *args],
                            stdout=child, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode()


def test_diff_colours_a_terminal_unless_told_not_to() -> None:
    args = ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(CASE / "policy.yaml"), "--state",
            str(CASE / "state.yaml"), "-o", "diff"]
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    base["TERM"] = "xterm"
    assert "\x1b[" in _on_a_terminal(*args, env=base)
    assert "\x1b[" not in _on_a_terminal(*args, env=dict(base, NO_COLOR="1"))
    assert "\x1b[" not in _on_a_terminal(*args, env=dict(base, TERM="dumb"))
    assert "\x1b[" not in _on_a_terminal(*args, "--no-color", env=base)
    plain = subprocess.run([sys.executable, "-c", "from kubectl_kyrec.cli.main import main; main()", *args],
                           capture_output=True, text=True, env=base, cwd=ROOT)
    assert "\x1b[" not in plain.stdout and plain.stdout        # a pipe is not a terminal


def test_cuts_keep_the_telling_ends() -> None:
    assert cut_middle("PolicyReport shop/11111111-0000-0000-0000-000000000002", 20) == "PolicyRep...00000002"
    rows = [["a" * 10, "Deployment shop/" + "x" * 40, "testdata/examples/resources/workloads.yaml:16",
             "a message " * 10]]
    fitted = fit_rows(["P", "SUBJECT", "LOCATION", "MESSAGE"], rows, {1: MIDDLE, 2: START, 3: END})
    width = sum(len(str(c)) for c in fitted[0]) + 2 * 3
    assert width <= 80
    assert fitted[0][0] == "a" * 10                                # not cuttable: whole
    assert fitted[0][1].startswith("Deploy") and fitted[0][1].endswith("xxx")
    assert fitted[0][2].startswith("...") and fitted[0][2].endswith("workloads.yaml:16")
    assert fitted[0][3].startswith("a message") and fitted[0][3].endswith("...")


def test_narrow_tables_are_left_alone() -> None:
    rows = [["x", "y"]]
    assert fit_rows(["A", "B"], rows, {0: MIDDLE}) == rows


def test_eval_table_fits_80_columns_and_wide_does_not_cut(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    manifest = tmp_path / "a-directory-with-a-rather-long-name" / "pods.yaml"
    manifest.parent.mkdir()
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a-pod-with-a-very-long-generated-name-x7k2p, "
                        "namespace: team-payments-production}\nspec: {containers: [{name: c, image: nginx}]}\n")
    args = ["eval", "-p", str(ROOT / "testdata" / "examples" / "policies"), "-r", str(manifest)]
    table = CliRunner().invoke(cli, args).stdout
    assert max(len(line) for line in table.splitlines()) <= 80
    assert "..." in table
    wide = CliRunner().invoke(cli, [*args, "-o", "wide"]).stdout
    assert "Pod team-payments-production/a-pod-with-a-very-long-generated-name-x7k2p" in wide
    assert str(manifest) in wide


def test_every_help_has_an_example_to_paste() -> None:
    """`kubectl kyrec --help` and each command's: an `Example:` block whose lines run kyrec as a plugin."""
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import COMMANDS, cli

    for words in ([], *([name] for name in COMMANDS)):
        text = CliRunner().invoke(cli, [*words, "--help"], prog_name="kubectl kyrec").stdout
        assert "Example:" in text, words
        block = text[text.index("Example:"):].split("\n\n")[0].splitlines()[1:]
        assert block and all("kubectl kyrec " + " ".join(words) in line for line in block), (words, block)


@pytest.mark.parametrize(("words", "columns"), [
    (["diff"], ["NEXT SCAN", "OLDEST EPHEMERAL"]),
    (["coverage"], ["COVERS", "INTEGRITY", "UNPAIRED", "REASON"]),
    (["eval"], ["RESULT", "CHANGE", "BEFORE", "AFTER"]),
])
def test_column_names_that_need_a_word_have_it_in_the_help(words: list[str], columns: list[str]) -> None:
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    # the words of the help, wrapped lines joined: each column is named (in capitals) where it is explained
    text = " ".join(CliRunner().invoke(cli, [*words, "--help"]).stdout.split())
    for column in columns:
        assert column in text, (words, column)


def test_version_says_the_kyverno_release_and_fits_80_columns() -> None:
    import json

    import yaml
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import KYVERNO_RELEASE, cli

    text = CliRunner().invoke(cli, ["version"]).stdout
    assert f"Kyverno: behaves as release {KYVERNO_RELEASE} (" in text
    assert max(len(line) for line in text.splitlines()) <= 80, text
    doc = json.loads(CliRunner().invoke(cli, ["version", "-o", "json"]).stdout)
    assert yaml.safe_load(CliRunner().invoke(cli, ["version", "-o", "yaml"]).stdout) == doc
    # every API version is in the wrapped text too
    assert all(api in " ".join(text.split()) for api in doc["kyvernoAPIs"])


def test_a_mistyped_command_is_named_as_kubectl_names_it() -> None:
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    typo = CliRunner().invoke(cli, ["evl"])
    assert typo.exit_code == 2 and "Error: No such command 'evl'. Did you mean 'eval'?" in typo.stderr
    far = CliRunner().invoke(cli, ["zzz"])
    assert far.exit_code == 2 and "Error: No such command 'zzz'.\n" in far.stderr and "Did you mean" not in far.stderr
