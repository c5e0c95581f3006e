"""``%context``: what each turn takes from the notebook, shown and switched.

``%context`` prints what the next turn would send (the code cells run since the previous turn, as the model
reads them, and the summary of the variables); ``%context on|off|cells|variables`` switches what is sent
(``AgentCell.context``); ``%context inspect NAME`` describes one variable as the summary does.
"""

from __future__ import annotations

from typing import ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ._base import MagicGroup

__all__ = ["CONTEXT_HELP", "ContextMagics"]

CONTEXT_HELP = (
    "%context [on|off|cells|variables|inspect NAME]  what the next turn takes from the notebook (the code "
    "cells run since the last turn, your variables): print it, or switch it"
)

_SAID = {
    "on": "each turn takes the code cells run since the last turn and a summary of your variables",
    "off": "turns take nothing from the notebook: no code cells, no variables",
    "cells": "each turn takes the code cells run since the last turn (no variables)",
    "variables": "each turn takes a summary of your variables (no code cells)",
}


@magics_class
class ContextMagics(MagicGroup):
    TITLE: ClassVar[str] = "The session"
    HELP: ClassVar[dict[str, str]] = {"context": CONTEXT_HELP}

    @line_magic
    def context(self, line: str) -> None:
        """Print what the next turn takes from the notebook, or switch it."""
        args = self._guard("context", line)
        if args is None:
            return
        source = self.host.context_source
        if source is None:
            raise UsageError("%context: this shell records no cells (agentcell is not loaded here)")
        from ..._secrets import scrub, secret_values

        if not args:  # secrets are scrubbed from what is printed, as from what the model is sent
            print(scrub(self._next_turn(), secret_values()))
            return
        if args[0] == "inspect":
            if len(args) != 2:
                raise UsageError("%context inspect NAME: one variable's name")
            print(scrub(self._inspect(args[1]), secret_values()))
            return
        if len(args) != 1 or args[0] not in _SAID:
            raise UsageError(f"%context: say on, off, cells, variables or inspect NAME, not {' '.join(args)!r}")
        self.host.config.context = args[0]
        print(f"context {args[0]}: {_SAID[args[0]]}")

    def _next_turn(self) -> str:
        from ...engine.notebook_context import context_text

        source = self.host.context_source
        assert source is not None
        mode = source.mode
        context = source.build(take=False)
        head = f"context {mode}: {_SAID[mode]}."
        if context is None or context.empty:
            return f"{head}\nThe next turn would send nothing from the notebook."
        return f"{head}\nThe next turn would send ({context.describe()}):\n\n{context_text(context)}"

    def _inspect(self, name: str) -> str:
        from ..namespace import describe_variable

        assert self.shell is not None  # registered magics always have their shell
        namespace = self.shell.user_ns
        if name not in namespace or name in self.shell.user_ns_hidden:
            raise UsageError(f"%context inspect: no variable named {name!r}")
        kind, summary = describe_variable(name, namespace[name])
        return f"{name}: {kind}" + (f", {summary}" if summary else "")
