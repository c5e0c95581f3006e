"""Permission presets: what a tool call may do without asking, what needs the user, what is refused.

Every tool declares what it touches (:data:`Access`): ``read`` and ``edit`` of files (with the paths of a
call, when the tool can name them), ``execute`` (runs arbitrary code or commands, which no path check can
confine), ``kernel`` (runs Python in the notebook's own kernel, the process the user is already running
code in) and ``fetch`` (reaches the network). A preset maps each to allow / ask / deny:

=================  ==========  ===============  ==================
access             read-only   workspace-write  danger-full-access
=================  ==========  ===============  ==================
read, inside       allow       allow            allow
read, outside      ask         ask              allow
edit, inside       deny        allow            allow
edit, outside      deny        ask              allow
execute            deny        ask              allow
kernel             deny        ask (*)          allow
fetch              ask         ask              allow
=================  ==========  ===============  ==================

``kernel`` asks under ``workspace-write`` because code in the kernel's own process cannot be confined: the
python tool's code gets the preset's file rule as guard rails (:mod:`.confine`: it writes only inside, starts
no process and opens no connection, in its own thread and the threads it starts), but in-process code can
get round any in-process check, so the rails are not what stands between the model and the user's files;
the approval is. "Allow always" makes the session's ``python:kernel`` rule. (*) The user may let it run
unasked, and only the user (:mod:`.python_access`: ``%config AgentCell.python_tool = "allow"`` or
``AGENTCELL_PYTHON_TOOL=allow`` when the kernel starts); then the rails are all that confines it.
``read-only`` refuses the python tool; ``danger-full-access`` runs it unasked.

What an approved command may then do is enforced by the OS (:mod:`.sandbox`): under ``workspace-write``
``bash`` runs in bubblewrap, writing only in the workspace and the temp directories (``.git`` stays
read-only), seeing no credential folder and no key in its environment, with no network; under
``read-only`` nothing is writable; ``danger-full-access`` runs it as the user. Where bubblewrap cannot start
the approval says so and nothing is remembered for "always": every command asks.

"Inside" is the workspace or one of the permitted temporary directories, after resolving ``..`` and every
symlink, so ``../x``, an absolute path, a symlink pointing out and a path under a symlinked directory that
leads out are all outside. A call's verdict is the strictest of its accesses. A tool that declares nothing
is allowed everywhere (a user's own function touches what the user wrote it to touch).

Files that run code later (:data:`PROTECTED_NAMES`: ``.git``, ``.envrc``, ``.vscode``, …) are **protected**
inside the workspace: a write there asks under ``workspace-write`` as a write outside does (the bash
sandbox keeps the existing ones read-only, and the python tool's code does not write them).

Some folders inside the workspace are **read-only** whatever the preset: :data:`READ_ONLY_DIRS` (where the
engine mounts skills). An edit there is denied, and a file tool refuses to write there even when a call
was allowed; the python and bash tools run code, which no path check confines (the mounted files are
read-only on disk too, which stops everyone but root).

When a call needs asking and no approver is attached (a script without a UI), it is **denied**: the
preset's answer without a user is "no", so nothing wider than the preset happens unattended.
"""

from __future__ import annotations

import functools
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from ..errors import InvalidInputError, OutsideWorkspaceError
from ..records.common import PERMISSION_PRESETS, PermissionPreset
from .base import Permission
from .python_access import PYTHON_TOOL_HINT, python_tool_setting

__all__ = [
    "PERMISSION_PRESETS",
    "PROTECTED_NAMES",
    "READ_ONLY_DIRS",
    "SKILLS_MOUNT",
    "Access",
    "PathUse",
    "PermissionPolicy",
    "PermissionPreset",
    "Verdict",
]

Access = Literal["read", "edit", "execute", "kernel", "fetch"]

SKILLS_MOUNT = ".agentcell/skills"
"""Where, relative to a workspace, the engine mounts the skills a session activates."""
READ_ONLY_DIRS: tuple[str, ...] = (SKILLS_MOUNT,)
"""Folders of every workspace (relative to it) that no call may write."""

PROTECTED_NAMES: tuple[str, ...] = (
    ".git",
    ".gitmodules",
    ".envrc",
    ".vscode",
    ".idea",
    ".husky",
    ".pre-commit-config.yaml",
)
"""Files and folders whose contents run later, at the user's hand (``.git/config``'s ``core.fsmonitor`` at the
next ``git status``, ``.git/hooks``, direnv's ``.envrc``, an editor's tasks): a write to a path with one of
these names in it, inside the workspace, asks as a write outside does."""

PathUse: TypeAlias = tuple[str, Literal["read", "edit"]]
"""A path a call would touch (relative to the workspace, or absolute) and how."""

_RANK: dict[Permission, int] = {"allow": 0, "ask": 1, "deny": 2}

# (inside, outside) for the path accesses; one answer for the others.
_TABLE: dict[PermissionPreset, dict[str, tuple[Permission, Permission]]] = {
    "read-only": {
        "read": ("allow", "ask"),
        "edit": ("deny", "deny"),
        "execute": ("deny", "deny"),
        "kernel": ("deny", "deny"),
        "fetch": ("ask", "ask"),
    },
    "workspace-write": {
        "read": ("allow", "ask"),
        "edit": ("allow", "ask"),
        "execute": ("ask", "ask"),
        "kernel": ("ask", "ask"),
        "fetch": ("ask", "ask"),
    },
    "danger-full-access": {
        "read": ("allow", "allow"),
        "edit": ("allow", "allow"),
        "execute": ("allow", "allow"),
        "kernel": ("allow", "allow"),
        "fetch": ("allow", "allow"),
    },
}


@functools.lru_cache(maxsize=32)
def _with_preset(policy: PermissionPolicy, preset: PermissionPreset) -> PermissionPolicy:
    # Cached: building a policy resolves its directories on disk, and calls ask for one per session.
    return PermissionPolicy(preset, policy.workspace, policy.temp_dirs)


@dataclass(frozen=True, slots=True)
class Verdict:
    permission: Permission
    reason: str = ""
    """Why the call is asked about or denied, for the user and the model."""
    keys: tuple[str, ...] = ()
    """What an "always" answer is remembered under."""
    outside: bool = False
    """The call touches paths outside the workspace (allowed only by the preset or an approval)."""
    hint: str = ""
    """What the user can do when nobody can be asked (said in the refusal of a headless run)."""


ALLOWED = Verdict("allow")


@dataclass(frozen=True, slots=True)
class PermissionPolicy:
    """A preset applied to one workspace."""

    preset: PermissionPreset = "workspace-write"
    workspace: Path = field(default_factory=Path.cwd)
    temp_dirs: tuple[Path, ...] = field(default_factory=lambda: (Path(tempfile.gettempdir()),))
    """Directories that count as inside besides the workspace (by default the system temp dir)."""
    _roots: tuple[Path, ...] = field(init=False, repr=False, compare=False)
    _read_only: tuple[Path, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.preset not in PERMISSION_PRESETS:
            raise InvalidInputError(f"unknown permission preset {self.preset!r}; choose one of {PERMISSION_PRESETS}")
        workspace = Path(self.workspace).resolve()
        object.__setattr__(self, "workspace", workspace)
        temp = tuple(Path(p).resolve() for p in self.temp_dirs)
        object.__setattr__(self, "temp_dirs", temp)
        object.__setattr__(self, "_roots", (workspace, *temp))
        object.__setattr__(self, "_read_only", tuple(Path(os.path.realpath(workspace / d)) for d in READ_ONLY_DIRS))

    def with_preset(self, preset: PermissionPreset) -> PermissionPolicy:
        """This policy's workspace and temp dirs under another preset."""
        return self if preset == self.preset else _with_preset(self, preset)

    # ------------------------------------------------------------------------------------------ paths

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real path ``path`` names, relative paths taken from the workspace; symlinks are followed
        even where the final target does not exist yet, so a dangling link cannot smuggle a write out."""
        return Path(os.path.realpath(self.workspace / Path(path).expanduser()))

    @property
    def roots(self) -> tuple[Path, ...]:
        """The real directories that count as inside: the workspace and the temp directories."""
        return self._roots

    def contains(self, real: Path) -> bool:
        return any(real == root or real.is_relative_to(root) for root in self._roots)

    def read_only(self, real: Path) -> bool:
        """Whether ``real`` is in a folder no call may write (a mounted skill)."""
        return any(real == root or real.is_relative_to(root) for root in self._read_only)

    def check(self, path: str | os.PathLike[str], kind: Literal["read", "edit"], *, approved: bool) -> Path:
        """Resolve ``path`` for a tool that is about to touch it; raises :class:`OutsideWorkspaceError` when
        neither the preset nor an approval covers it. File tools call this right before opening, so a
        symlink swapped in after the permission check is still caught."""
        real = self.resolve(path)
        if kind == "edit" and self.preset == "read-only":
            raise OutsideWorkspaceError(f"the read-only preset does not allow writing {path}")
        if kind == "edit" and self.read_only(real):
            raise OutsideWorkspaceError(f"{path} is in a read-only folder (a mounted skill); write somewhere else")
        info = _stat(real)
        if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            # A FIFO would block the tool forever; a device or socket is no file to read or write.
            raise OutsideWorkspaceError(f"{path} is not a regular file (a FIFO, socket or device); the file tools "
                                        "read and write regular files only")  # fmt: skip
        if not approved and self.preset != "danger-full-access":
            if kind == "edit" and (name := self.protected(real)):
                raise OutsideWorkspaceError(
                    f"{path} is in {name}, which holds configuration that runs code later; writing it needs "
                    "the user's approval"
                )
            if not self.contains(real):
                raise OutsideWorkspaceError(
                    f"{path} resolves to {real}, outside the workspace {self.workspace}; "
                    "touching it needs the user's approval"
                )
            if info is not None and _aliased(info):
                raise OutsideWorkspaceError(
                    f"{path} is a hard link ({info.st_nlink} names for one file), so the same file may be outside "
                    "the workspace; touching it needs the user's approval"
                )
        return real

    def protected(self, real: Path) -> str:
        """The name of :data:`PROTECTED_NAMES` that ``real`` (inside the workspace or a temp dir) is in, or
        ``""``."""
        for root in self._roots:
            if real.is_relative_to(root):
                return next((part for part in real.relative_to(root).parts if part in PROTECTED_NAMES), "")
        return ""

    def inside(self, real: Path) -> bool:
        """Whether the preset counts ``real`` as inside: under the workspace or a temp dir, and not a file
        with other names (a hard link), which could be outside."""
        return self.contains(real) and not _aliased(_stat(real))

    # ------------------------------------------------------------------------------------------ verdicts

    def evaluate(self, tool: str, access: frozenset[Access], paths: Sequence[PathUse] | None) -> Verdict:
        """The verdict for a call of ``tool`` that touches ``access`` and, for file accesses, ``paths``.

        ``paths`` is None when the tool cannot name its paths: a read then counts as inside (reading
        cannot harm) and an edit as outside (it could be anywhere).
        """
        if not access:
            return ALLOWED
        table = _TABLE[self.preset]
        worst: Permission = "allow"
        reasons: list[str] = []
        keys: list[str] = []
        outside = False
        preset_denied = False

        def weigh(answer: Permission, reason: str, key: str, *, by_preset: bool = True) -> None:
            nonlocal worst, preset_denied
            if answer == "allow":
                return
            preset_denied = preset_denied or (answer == "deny" and by_preset)
            if _RANK[answer] > _RANK[worst]:
                worst = answer
            reasons.append(reason)
            keys.append(key)

        verbs = {
            "execute": "run code or commands",
            "kernel": "run code in the notebook's kernel",
            "fetch": "reach the network",
        }
        for kind, verb in verbs.items():
            if kind in access:
                answer, note = _kernel_answer(table[kind][0]) if kind == "kernel" else (table[kind][0], "")
                weigh(answer, f"{tool} would {verb}{note}", f"{tool}:{kind}")
        for kind in ("read", "edit"):
            if kind not in access:
                continue
            named = [p for p in paths or () if p[1] == kind]
            if paths is None and kind == "edit":
                outside = True
                weigh(table[kind][1], f"{tool} would write files it cannot name in advance", f"{tool}:{kind}")
            for raw, _ in named:
                real = self.resolve(raw)
                verb = "read" if kind == "read" else "write"
                if kind == "edit" and self.read_only(real):
                    reason = f"{tool} would write {real}, in a read-only folder (a mounted skill)"
                    weigh("deny", reason, f"{tool}:read-only", by_preset=False)
                    continue
                if kind == "edit" and (name := self.protected(real)):
                    outside = True  # approved, the file tools may write it; unasked, they refuse
                    reason = f"{tool} would write {real}, in {name}, which holds configuration that runs code later"
                    weigh(table[kind][1], reason, f"{tool}:{kind}:{real.parent}")
                    continue
                if self.inside(real):
                    weigh(table[kind][0], f"{tool} would {verb} {real}", f"{tool}:{kind}")
                    continue
                outside = True
                where = real if real.is_dir() else real.parent
                why = (
                    "outside the workspace"
                    if not self.contains(real)
                    else "a hard link that may be outside the workspace"
                )
                weigh(table[kind][1], f"{tool} would {verb} {real}, {why} {self.workspace}", f"{tool}:{kind}:{where}")
        if worst == "allow":
            return Verdict("allow", outside=outside)
        reason = "; ".join(dict.fromkeys(reasons))
        if worst == "deny" and preset_denied:
            reason = f"the {self.preset} preset does not allow this: {reason}"
        asks_to_run = worst == "ask" and f"{tool}:kernel" in keys
        return Verdict(worst, reason, tuple(dict.fromkeys(keys)), outside, PYTHON_TOOL_HINT if asks_to_run else "")


def _kernel_answer(answer: Permission) -> tuple[Permission, str]:
    """The preset's answer for running code in the kernel's own process, with the user's setting applied
    (:mod:`.python_access`, never the model's to change), and what the question adds to its reason."""
    if answer != "ask":
        return answer, ""
    if python_tool_setting() == "allow":
        return "allow", ""
    return "ask", " (its code is not sandboxed: it can do what you can)"


def _stat(real: Path) -> os.stat_result | None:
    try:
        return os.stat(real)
    except OSError:
        return None  # not there (yet): nothing to alias


def _aliased(info: os.stat_result | None) -> bool:
    """A regular file with more than one name: a hard link, whose other name may be anywhere."""
    return info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1
