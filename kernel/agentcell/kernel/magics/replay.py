"""The notebook's recording: ``%record`` and ``%replay`` (see ``providers/replay.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ...errors import AgentCellError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ...providers.replay import Replayer

__all__ = ["ReplayMagics"]


@magics_class
class ReplayMagics(MagicGroup):
    TITLE: ClassVar[str] = "Recording and replay"
    HELP: ClassVar[dict[str, str]] = {
        "record": "%record  re-record the notebook: a fresh conversation whose requests run live and replace its "
        "recording (NAME.agentcell.jsonl); run the cells from the top, and do not keep %record in the notebook",
        "replay": "%replay [auto | off | status]  replay the notebook from its recording in a fresh conversation "
        "(auto: run unrecorded requests live); off: everything live; status: mode and counts",
    }

    def _replayer(self, name: str) -> Replayer:
        replayer = self.host.engine.replay
        if replayer is None:
            raise UsageError(f"%{name}: this kernel runs no notebook (no JPY_SESSION_NAME), so it has no recording")
        return replayer

    @line_magic
    def record(self, line: str) -> None:
        """Re-record: a new conversation whose requests run live and replace the notebook's recording."""
        args = self._guard("record", line)
        if args is None:
            return
        if args:
            raise UsageError(self.HELP["record"])
        try:
            replayer = self._replayer("record")
            session = self.host.new_session()
        except AgentCellError as exc:
            raise self._fail(exc) from None
        replayer.mode = "record"
        print(f"recording into {replayer.path.name} (new session {session.id}); run the cells from the top")

    @line_magic
    def replay(self, line: str) -> None:
        """Replay the notebook from its recording (auto: unrecorded requests live), go live (off), or show
        the status."""
        args = self._guard("replay", line)
        if args is None:
            return
        action = args[0] if args else "replay"
        if len(args) > 1 or action not in ("replay", "auto", "off", "status"):
            raise UsageError(self.HELP["replay"])
        try:
            replayer = self._replayer("replay")
            if action == "status":
                print(replayer.status())
                return
            if action == "off":
                replayer.mode = "off"
                print("replay off: every request runs live")
                return
            replayer.mode = "replay" if action == "replay" else "auto"
            # The recording holds one conversation from its start: replay it again from its first answer.
            replayer.recording.rewind()
            session = self.host.new_session()
            entries = len(replayer.recording.entries)
        except AgentCellError as exc:
            raise self._fail(exc) from None
        print(
            f"replay mode {replayer.mode}: {entries} recorded requests in {replayer.path.name} (new session "
            f"{session.id}); run the cells from the top"
        )
