"""The session's "always" approval rules, as ``%permissions`` lists them and ``%permissions revoke NAME``
drops them.

An "Allow always" (or "Deny always") answer makes one rule per key of its request (``bash:$ git status``:
bash running that command, each part of a command line a rule of its own; ``write_file:edit:/data``:
writing outside the workspace, there; ``python:kernel``: the python tool running, any code). The answer is
in the session's log (``user.tool_confirmation`` with its ``keys``), a revocation too
(``user.permission_revoked``), so the rules outlive a kernel restart and the log says when each was made and
undone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import InvalidInputError

if TYPE_CHECKING:
    from ...sessions import Session

__all__ = ["describe_python_tool", "describe_rules", "describe_sandbox", "revoke_rules"]


def describe_sandbox(preset: str) -> str:
    """What confines an approved command under ``preset``, in one line."""
    from ...tools.sandbox import sandbox_problem

    if preset == "danger-full-access":
        return "commands: run with your full rights (no sandbox under danger-full-access)"
    problem = sandbox_problem()
    if problem is not None:
        return f"commands: NOT sandboxed here ({problem}); every command asks, and Allow always is not remembered"
    if preset == "read-only":
        return "commands: refused (in the bubblewrap sandbox nothing would be writable)"
    return (
        "commands: asked, then run in a bubblewrap sandbox (writable: the workspace but .git, and the temp "
        "folder; no network; credential folders and keys hidden)"
    )


def describe_python_tool(preset: str) -> str:
    """What the python tool may do under ``preset``, in one line (as the permission table enforces it)."""
    from ...tools.python_access import python_tool_setting

    if preset == "read-only":
        return "python tool: refused (its code runs in this kernel, which nothing would keep read-only)"
    if preset == "danger-full-access":
        return "python tool: runs unasked, with your full rights"
    if python_tool_setting() == "allow":
        return (
            "python tool: runs unasked (AgentCell.python_tool = 'allow'), with guard rails that are not a "
            "sandbox: its code runs in this kernel"
        )
    return (
        "python tool: asked before each run (its code runs in this kernel, not sandboxed; Allow always makes "
        "the python:kernel rule; %config AgentCell.python_tool = 'allow' runs it unasked)"
    )


def describe_rules(session: Session) -> str:
    """One line per rule in force, or a line saying there are none."""
    from ...tools.approvals import describe_rules as describe  # the kernel starts without the tools

    return describe(session.approvals.remembered, "revoke with %permissions revoke NAME, or all")


def revoke_rules(session: Session, names: list[str]) -> str:
    """Revoke the rules named (a rule's key, a tool's name for all of its rules, or ``all``); the log keeps
    the revocation. Raises InvalidInputError, listing the rules, when a name matches none."""
    from ...events import UserPermissionRevoked  # the kernel starts without the engine's models

    rules = session.approvals.remembered
    if not names:
        raise InvalidInputError(f"%permissions revoke: name a rule, a tool or 'all'; {describe_rules(session)}")
    chosen: list[str] = []
    for name in names:
        matched = [key for key in rules if name in ("all", key) or key.split(":", 1)[0] == name]
        if not matched:
            raise InvalidInputError(f"%permissions revoke: no always rule named {name!r}; {describe_rules(session)}")
        chosen += [key for key in matched if key not in chosen]
    revoked = session.approvals.revoke(chosen)
    session.emit(session.make(UserPermissionRevoked, keys=revoked))
    return f"revoked: {', '.join(revoked)} (such calls ask again)"
