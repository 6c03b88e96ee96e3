"""The phases a long run shows on a terminal (render/progress.py): the input files counted as they are opened
(`loading N files`), the evaluation's rate and time left, then `writing output` while a pipe or a file gets
the output. Synthetic clock for the redraw rules; eval itself on a pseudo-terminal for the wiring."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.files import reading_files
from kubectl_kyrec.render.progress import Progress, writing_output
from tests.pty_read import drain

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_loading_counts_files_at_most_every_interval_and_the_first_at_once() -> None:
    clock, terminal = Clock(), Terminal()
    progress = Progress("evaluated", terminal, interval=1.0, clock=clock)
    progress.loading("a.yaml")
    assert terminal.getvalue() == "\rloading 1 file\x1b[K"
    for name in ("b.yaml", "c.yaml"):           # within the interval: counted, not drawn
        clock.now += 0.2
        progress.loading(name)
    assert terminal.getvalue() == "\rloading 1 file\x1b[K"
    clock.now += 1.0
    progress.loading("d.yaml")
    assert terminal.getvalue().endswith("\rloading 4 files\x1b[K")
    assert progress.files == 4
    # the evaluation starts: the file count, which no longer moves, gives way to the evaluation's line
    progress.expect(500)
    assert terminal.getvalue().endswith("\revaluated 0 of 500 objects\x1b[K")


def test_loading_then_evaluating_keeps_the_rate_from_the_evaluation_alone() -> None:
    clock, terminal = Clock(), Terminal()
    progress = Progress("evaluated", terminal, interval=1.0, every=1, clock=clock)
    for n in range(300):                        # 30 s of loading
        clock.now += 0.1
        progress.loading(f"{n}.yaml")
    progress.expect(100)
    for _ in range(50):                         # then 10 objects a second
        clock.now += 0.1
        progress.tick()
    last = re.findall(r"\revaluated (\d+) of 100 objects \((\d+)/s, about (\d+)s left\)", terminal.getvalue())[-1]
    done, rate, left = (int(g) for g in last)
    # 30 s of loading counted in would make it 1/s and 40-odd seconds left
    assert done >= 40 and rate == 10 and left == round((100 - done) / 10)


def test_writing_output_shows_only_while_the_output_goes_elsewhere() -> None:
    terminal, pipe = Terminal(), io.StringIO()
    with writing_output(terminal, pipe):
        assert terminal.getvalue() == "\rwriting output\x1b[K"
    assert terminal.getvalue().endswith("\r\x1b[K")         # cleared once written
    try:
        with writing_output(terminal, pipe):
            raise OSError("disk full")
    except OSError:
        pass
    assert terminal.getvalue().endswith("\r\x1b[K")         # and when the writing fails
    for stream, output in ((Terminal(), Terminal()), (io.StringIO(), io.StringIO())):
        with writing_output(stream, output):                 # the output on the terminal, or no terminal
            pass
        assert stream.getvalue() == ""


def test_the_loaders_say_each_file_they_open(tmp_path: Path) -> None:
    for n in range(3):
        (tmp_path / f"{n}.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{n}\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    opened: list[str] = []
    with reading_files(opened.append):
        docs = load_documents([str(tmp_path)])
    assert len(docs) == 3
    assert opened == [str(tmp_path / f"{n}.yaml") for n in range(3)]
    load_documents([str(tmp_path / "0.yaml")])              # outside the block: nobody is told
    assert len(opened) == 3


POLICY = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Audit
  rules:
  - name: team
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    validate:
      message: a team label is required
      pattern:
        metadata:
          labels:
            team: "?*"
"""


def _stderr_on_a_terminal(args: list[str], *, stdout_terminal: bool) -> str:
    """Run kyrec with stderr on a pseudo-terminal (stdout a pipe, or the same terminal) and return what the
    terminal got."""
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", "from kubectl_kyrec.cli.console import main; main()", *args],
                            stdout=child if stdout_terminal else subprocess.DEVNULL, stderr=child,
                            env={**os.environ, "TERM": "xterm"}, cwd=ROOT)
    os.close(child)
    output = drain(main)
    proc.wait(timeout=120)
    os.close(main)
    return output.decode()


def test_eval_on_a_terminal_shows_its_phases(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    resources = tmp_path / "resources"
    resources.mkdir()
    for n in range(3):
        (resources / f"{n}.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{n}\n"
                                             f"  namespace: default\n")
    args = ["eval", "-p", str(tmp_path / "policy.yaml"), "-r", str(resources), "-o", "json",
            "--now", "2026-09-01T00:00:00Z"]
    shown = _stderr_on_a_terminal(args, stdout_terminal=False)
    assert "\rloading 1 file\x1b[K" in shown                    # the first file is drawn at once
    assert "\revaluated 0 of 3 objects\x1b[K" in shown
    assert "\rwriting output\x1b[K" in shown
    assert shown.index("loading 1 file") < shown.index("evaluated 0 of 3") < shown.index("writing output")
    assert shown.endswith("\r\x1b[K")                          # nothing left on the line
    # the output on the terminal itself: no `writing output` in its way
    assert "writing output" not in _stderr_on_a_terminal(args, stdout_terminal=True)
