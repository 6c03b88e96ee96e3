"""The one output seam: a command hands its run result, its `-o FORMAT[=FILE]` outputs and the renderers of
the formats that are its own; each output is written through render/sink.py.

JSON and YAML are the run's document (errors.RunResult.document) unless a command renders them itself, each
written part by part as it is made; every other format is a text the renderer returns, or writes into the
output's stream as it goes (a writer), so a large output is never held whole.

A run whose reads failed (errors.RunResult.failed_reads) has its tables start with one line saying the
picture is incomplete and what was not read (errors.incomplete_line), here for every command at once: a
person reading stdout must not take a partial run for a clean one.
"""

from __future__ import annotations

import enum
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from kubectl_kyrec.errors import RunResult


class OutputFormat(enum.Enum):
    TABLE = "table"
    WIDE = "wide"
    YAML = "yaml"
    JSON = "json"
    REPORTS = "reports"
    DIFF = "diff"
    JUNIT = "junit"
    GITHUB = "github"
    SARIF = "sarif"


@dataclass(frozen=True)
class OutputSpec:
    format: OutputFormat
    path: str | None      # None: stdout


Writer = Callable[[TextIO], None]
# one output of a command: its text, or a writer run on the output's stream; None when it wrote the output
# itself (diff handing stdout to the KUBECTL_EXTERNAL_DIFF program)
Output = Callable[[OutputSpec], "str | Writer | None"]


def write_outputs(result: RunResult, specs: Sequence[OutputSpec], outputs: Mapping[OutputFormat, Output], *,
                  extra: Callable[[], Mapping[str, Any]] = dict,
                  color: Callable[[OutputSpec], bool] = lambda spec: False) -> None:
    """Every output in the order given. `extra`: keys after the document's own (the baseline's); `color`:
    whether a text output keeps its escape sequences on a stdout that is no terminal."""
    from kubectl_kyrec.errors import incomplete_line
    from kubectl_kyrec.render.sink import write_stream, write_text

    for spec in specs:
        output = outputs.get(spec.format)
        if output is None:
            write_stream(spec.path, functools.partial(write_document, result, spec.format, extra))
            continue
        made = output(spec)
        if made is None:
            continue
        if spec.format in TABLES and result.failed_reads:
            made = _after_line(incomplete_line(result.failed_reads), made)
        if isinstance(made, str):
            write_text(spec.path, made, color=color(spec))
        else:
            write_stream(spec.path, made)


# the outputs a person reads first, which start with the incomplete line when reads failed
TABLES = frozenset((OutputFormat.TABLE, OutputFormat.WIDE))


def _after_line(line: str, made: str | Writer) -> str | Writer:
    if isinstance(made, str):
        return f"{line}\n{made}"

    def write(stream: TextIO) -> None:
        stream.write(line + "\n")
        made(stream)

    return write


def write_document(result: RunResult, fmt: OutputFormat, extra: Callable[[], Mapping[str, Any]],
                   stream: TextIO) -> None:
    """The run's kyrec/v1 document as JSON or YAML, built as it is written."""
    from kubectl_kyrec.render.envelope import run_document, write_json_document, write_yaml_document

    if fmt not in (OutputFormat.JSON, OutputFormat.YAML):
        raise ValueError(f"no renderer for -o {fmt.value}")
    write = write_json_document if fmt is OutputFormat.JSON else write_yaml_document
    kind, parts = run_document(result)
    write(kind, itertools.chain(parts, extra().items()), stream.write)
