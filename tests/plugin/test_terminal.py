"""Terminal manners: colour only on a terminal and never with NO_COLOR / TERM=dumb; tables fitted without
ever cutting a cell (render/fit.py)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_kyrec.cli.terminal import color_enabled
from kubectl_kyrec.render.fit import REF, TEXT, Column, fit_table, render_table, short_ref, wrap
from tests.pty_read import drain

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
    proc = subprocess.Popen([sys.executable, "-c", "from kubectl_kyrec.cli.console import main; main()", *args],
                            stdout=child, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(child)
    output = drain(main)
    proc.wait(timeout=60)
    os.close(main)
    return output.decode()


def test_diff_colours_a_terminal_unless_told_not_to() -> None:
    args = ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(CASE / "policy.yaml"), "--state",
            str(CASE / "state.yaml"), "-o", "diff"]
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    base["TERM"] = "xterm"
    assert "\x1b[" in _on_a_terminal(*args, env=base)
    assert "\x1b[" not in _on_a_terminal(*args, env=dict(base, NO_COLOR="1"))
    assert "\x1b[" not in _on_a_terminal(*args, env=dict(base, TERM="dumb"))
    assert "\x1b[" not in _on_a_terminal(*args, "--no-color", env=base)
    plain = subprocess.run([sys.executable, "-c", "from kubectl_kyrec.cli.console import main; main()", *args],
                           capture_output=True, text=True, env=base, cwd=ROOT)
    assert "\x1b[" not in plain.stdout and plain.stdout        # a pipe is not a terminal


def test_short_ref_is_kubectls_type_slash_name() -> None:
    assert short_ref("Deployment shop/web") == "shop deploy/web"
    assert short_ref("ConfigMap team-a/x") == "team-a cm/x"
    assert short_ref("Namespace team-a") == "ns/team-a"
    assert short_ref("NetworkPolicy shop/default-deny") == "shop netpol/default-deny"
    assert short_ref("ClusterPolicy require-labels") == "cpol/require-labels"
    assert short_ref("Policy shop/p") == "shop pol/p"
    assert short_ref("PolicyReport shop/1111") == "shop polr/1111"
    # a kind without a short name (or unknown: a custom kind) is the lower-case kind, which kubectl takes too
    assert short_ref("Job shop/nightly") == "shop job/nightly"
    assert short_ref("Widget shop/w") == "shop widget/w"
    # anything that is not `Kind ns/name` is left as it is
    assert short_ref("-") == "-" and short_ref("") == "" and short_ref("a b c") == "a b c"


COLUMNS = (Column("POLICY"), Column("SUBJECT", REF), Column("RESULT"), Column("MESSAGE", TEXT),
           Column("LOCATION", drop=1))
ROW = ["require-a-team-label-on-every-namespace", "Deployment team-payments-production/checkout-7f9c",
       "fail", "the deployment needs a team label so that the on-call rota can be found at night",
       "testdata/a-directory-with-a-rather-long-name/workloads.yaml:16"]


def test_no_width_is_no_limit_and_a_table_that_fits_is_left_alone() -> None:
    assert fit_table(COLUMNS, [ROW], None).rows == [ROW]
    assert fit_table(COLUMNS, [ROW], 1000).rows == [ROW]


def _width(row: list[str]) -> int:
    """The width of a one-row table of COLUMNS: each column as wide as its header or its cell."""
    return sum(max(len(c.header), len(cell)) for c, cell in zip(COLUMNS, row)) + 2 * (len(row) - 1)


def test_fitting_goes_short_names_then_text_under_the_row_then_fewer_columns() -> None:
    # 1. short kind names alone, when they are enough
    row = [*ROW[:1], "Deployment shop/web", *ROW[2:]]
    short = [*ROW[:1], "shop deploy/web", *ROW[2:]]
    fitted = fit_table(COLUMNS, [row], _width(short))
    assert fitted.rows == [short] and fitted.below is None
    assert fit_table(COLUMNS, [row], _width(short) - 1).below is not None
    # 2. then the message under its row
    fitted = fit_table(COLUMNS, [ROW], _width(ROW) - len(ROW[3]))
    assert fitted.headers == ["POLICY", "SUBJECT", "RESULT", "LOCATION"]
    assert fitted.rows[0][1] == "team-payments-production deploy/checkout-7f9c"
    assert fitted.below == ["    " + ROW[3]]
    # 3. then the optional column; and what still does not fit is printed whole, never cut
    fitted = fit_table(COLUMNS, [ROW], 30)
    assert fitted.headers == ["POLICY", "SUBJECT", "RESULT"]
    assert fitted.rows == [[ROW[0], "team-payments-production deploy/checkout-7f9c", "fail"]]
    assert fitted.below is not None and all(len(line) <= 30 for line in fitted.below[0].splitlines())
    assert " ".join(fitted.below[0].split()) == ROW[3]


def test_wrapping_never_breaks_a_word() -> None:
    name = "a-very-long-generated-name-that-is-wider-than-the-terminal-x7k2p"
    lines = wrap(f"pod {name} needs a team label", 30)
    assert f"    {name}" in lines and all(line.startswith("    ") for line in lines)
    text = render_table(COLUMNS, [[*ROW[:3], f"pod {name} fails", ROW[4]]], 40)
    assert name in text and "..." not in text


def test_eval_table_never_cuts_and_wide_shows_every_column(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    manifest = tmp_path / "a-directory-with-a-rather-long-name" / "pods.yaml"
    manifest.parent.mkdir()
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a-pod-with-a-very-long-generated-name-x7k2p, "
                        "namespace: team-payments-production}\nspec: {containers: [{name: c, image: nginx}]}\n")
    args = ["eval", "-p", str(ROOT / "testdata" / "examples" / "policies"), "-r", str(manifest)]
    pipe = CliRunner().invoke(cli, args).stdout
    # on a pipe: no width limit, every row on one line, as kubectl prints it
    assert "Pod team-payments-production/a-pod-with-a-very-long-generated-name-x7k2p" in pipe
    assert str(manifest) in pipe and "..." not in pipe
    narrow = CliRunner().invoke(cli, args, env={"COLUMNS": "80"}).stdout
    assert "team-payments-production po/a-pod-with-a-very-long-generated-name-x7k2p" in narrow
    assert "..." not in narrow
    wide = CliRunner().invoke(cli, [*args, "-o", "wide"], env={"COLUMNS": "80"}).stdout
    assert "Pod team-payments-production/a-pod-with-a-very-long-generated-name-x7k2p" in wide
    assert str(manifest) in wide and "SEVERITY" in wide.splitlines()[0]


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

    text = CliRunner().invoke(cli, ["version"], env={"COLUMNS": "80"}).stdout
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
