"""How a command ends: its exit code kept, the run it built released before the cyclic collector is back."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

from kubectl_kyrec.cli.common import handle_errors


class _Built:
    """Stands for what a run builds (the state, results, reports)."""


def test_exit_keeps_the_code_and_drops_the_run_before_the_collector_is_back() -> None:
    built: list[weakref.ref[_Built]] = []
    enabled_inside: list[bool] = []

    @handle_errors
    def command() -> None:
        run = _Built()
        built.append(weakref.ref(run))
        enabled_inside.append(gc.isenabled())
        sys.exit(3)

    was_enabled = gc.isenabled()
    gc.enable()
    try:
        with pytest.raises(SystemExit) as raised:
            command()
        assert raised.value.code == 3
        # the SystemExit that leaves the command no longer holds the command's frame (and so its locals)
        assert built[0]() is None
        assert enabled_inside == [False] and gc.isenabled()
    finally:
        if not was_enabled:
            gc.disable()


def test_a_command_that_returns_returns_its_value() -> None:
    @handle_errors
    def command() -> int:
        return 7

    assert command() == 7
