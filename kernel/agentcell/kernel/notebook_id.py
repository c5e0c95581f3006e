"""A notebook's identity: which session is its conversation.

A notebook's conversation is its own. Its identity is the id in its metadata
(``metadata.agentcell.notebook_id``), which agentcell's JupyterLab / Notebook 7 extension writes at the
notebook's first run (never at open: an untouched notebook stays unmodified) and tells the kernel before
that run's first cell. The store's notebook index (``store/notebooks.py``) maps each id to its session, the
path it was last seen at, and whose notebook it is. So:

- a fresh notebook has a fresh id, hence a fresh session, whatever its name (a reused ``Untitled.ipynb``
  included): the path alone never finds a session of a notebook that has an id;
- a renamed or moved notebook keeps its id, hence its session (the index then learns the new path);
- a copy (Duplicate, ``cp``, Save As) carries the same id as its original while the original still exists
  with it: the copy **forks**. It gets a new id and a session whose log is the original's up to the last
  turn the copy shows (``session_fork.py``), and from then on the two diverge. The store remembers the
  copy's new id by its path, so a front end that cannot rewrite the file (``agentcell run``, the ``%%agent``
  extension in another kernel) finds the copy's own session again;
- another user's notebook on a shared store forks the same way: a kernel never continues a session of
  someone else's notebook unless asked (``%session resume ID``).

When the notebook and the store disagree (the store has no session of it, or lacks turns the saved notebook
shows of it: a database deleted, moved, or restored from an older copy), the notebook is the truth: a new
session is rebuilt from the turns the notebook shows (``notebook_turns.py``), so the model sees what the
reader sees, and the user is told once (``NotebookIdentity.notices`` for the front end, the first turn's
output). A session the user ended is not brought back. A notebook without an id (a front end without the
extension, a console) falls back on its path, and only to a session whose turns the saved file shows (or
when there is no file): a new notebook at a reused path never joins the old one's session.

The kernel reads the saved file too (``JPY_SESSION_NAME`` is the notebook's path, not its contents), for
front ends without the extension. The recording follows the notebook the same way: the store remembers
where each notebook id's recording lives, and a kernel that starts for a renamed or moved notebook finds its
recording there (``follow_recording``).
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .notebook_turns import read_turns, rebuild, saved_turns

if TYPE_CHECKING:
    from ..core import Engine
    from ..records.notebook import NotebookRecord
    from ..sessions import Session
    from ..store.base import Store

__all__ = [
    "METADATA_KEY",
    "NotebookIdentity",
    "NotebookIdentityAnswer",
    "SavedNotebook",
    "follow_recording",
    "notebook_file",
    "notebook_user",
    "read_saved",
    "saved_notebook_id",
    "session_of_notebook",
]

log = logging.getLogger(__name__)

METADATA_KEY = "agentcell"


def notebook_file(notebook_path: str) -> Path:
    """The notebook's file: a server's path is relative to its root, and the kernel runs in the notebook's
    folder (the same rule as the recording's, ``replay_mode.notebook_replayer``)."""
    path = Path(notebook_path)
    return path if path.is_absolute() else Path.cwd() / path.name


def notebook_user() -> str:
    """Whose notebooks this kernel runs: the JupyterHub user, else the login name."""
    if hub_user := os.environ.get("JUPYTERHUB_USER"):
        return hub_user
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (a bare container)
        return f"uid-{os.getuid()}"


@dataclass(frozen=True)
class SavedNotebook:
    """What agentcell reads of a saved notebook: its id, and the turns its outputs show."""

    notebook_id: str | None
    shown: Mapping[str, frozenset[str]] = field(default_factory=dict, compare=False)
    """Per session, the ids of its events the saved outputs show (only the ids are kept: the turns
    themselves are read again when a conversation is rebuilt from them, ``notebook_turns.read_turns``)."""

    @property
    def turn_event_ids(self) -> frozenset[str]:
        """The ids of the events of every turn the saved outputs show."""
        return frozenset().union(*self.shown.values())

    @property
    def sessions(self) -> frozenset[str]:
        """The sessions those turns ran in."""
        return frozenset(self.shown)

    def shown_of(self, session_id: str) -> frozenset[str]:
        """The ids of the events of ``session_id`` the saved outputs show."""
        return self.shown.get(session_id, frozenset())


def _saved(content: Any) -> SavedNotebook:
    metadata = content.get("metadata", {}) if isinstance(content, dict) else {}
    section = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    value = section.get("notebook_id") if isinstance(section, dict) else None
    shown: dict[str, set[str]] = {}
    for turn in saved_turns(content.get("cells", []) if isinstance(content, dict) else []):
        for event in turn.events:
            shown.setdefault(str(event.get("session_id")), set()).add(event["id"])
    frozen = {session: frozenset(ids) for session, ids in shown.items()}
    return SavedNotebook(value if isinstance(value, str) and value else None, frozen)


_read: dict[Path, tuple[int, SavedNotebook | None]] = {}
"""What each notebook file said at its last modification time: the host asks often, a notebook can be big."""


def read_saved(path: Path) -> SavedNotebook | None:
    """The saved notebook at ``path``; None when there is none (not saved yet) or it is not a notebook."""
    try:
        modified = path.stat().st_mtime_ns
        if (cached := _read.get(path)) is not None and cached[0] == modified:
            return cached[1]
        with path.open(encoding="utf-8") as file:
            found: SavedNotebook | None = _saved(json.load(file))
    except (OSError, ValueError, AttributeError):
        found, modified = None, -1
    if modified >= 0:
        _read[path] = (modified, found)
    return found


def saved_notebook_id(notebook_path: str | None) -> str | None:
    """The id in the saved notebook's metadata, or None (no notebook, not saved yet, not JSON, no id)."""
    saved = read_saved(notebook_file(notebook_path)) if notebook_path else None
    return saved.notebook_id if saved is not None else None


class NotebookIdentityAnswer:
    """The kernel's answer to a front end's ``identify_notebook`` (a user expression): shown as JSON."""

    def __init__(self, notebook_id: str | None, notices: list[str]) -> None:
        self.notebook_id = notebook_id
        self.notices = notices

    def _repr_json_(self) -> dict[str, Any]:
        return {"notebook_id": self.notebook_id, "notices": self.notices}

    def __repr__(self) -> str:
        return json.dumps(self._repr_json_())


class _Ended:
    """The notebook's session, which the user ended (``%session end``): a new one starts, empty."""


@dataclass
class _Found:
    """The index's word on the notebook: its id (a copy's own when it forked before) and its row."""

    notebook_id: str | None
    record: NotebookRecord | None = None
    copy_of: str | None = None
    """Why the notebook is a copy that must fork (said to the user); None when it is the notebook itself."""


class NotebookIdentity:
    """The notebook a kernel runs, as the front end and the saved file say, and its session in the index."""

    def __init__(self, notebook_path: str | None) -> None:
        self.notebook_path = notebook_path
        """The path the server gave the kernel (``JPY_SESSION_NAME``, or VS Code's ``__vsc_ipynb_file__``)."""
        self._said: str | None = None
        self._said_path: str | None = None
        self._root: Path | None = None
        """The server's root, once the front end's path and the server's tell it."""
        self.notebook_id: str | None = None
        """The id the notebook should carry, once looked up (a forked copy's new one); None before, and for a
        notebook without an id."""
        self.notices: list[str] = []
        """What the user should be told about the lookup (a copy forked, a session missing), until taken."""
        self.note: str | None = None
        """What the first turn's output says (a rebuilt conversation), until taken: the front end's notices
        go away, the cell's output stays in the notebook."""
        self._disagreement: str | None = None
        """Why the store's conversation is not the one the saved notebook shows, when the last lookup found
        so: the new session is then rebuilt from the notebook (:meth:`restore`)."""

    @property
    def file(self) -> Path | None:
        if self._root is not None and self._said_path is not None:
            return self._root / self._said_path
        return notebook_file(self.notebook_path) if self.notebook_path else None

    def adopt(self, notebook_id: str | None, path: str | None = None) -> None:
        """The front end's word for the notebook's id (unsaved, it is newer than the file's) and its path
        relative to the server's root (a notebook renamed since its kernel started has a new one)."""
        if path:
            self._adopt_path(path)
        if not notebook_id or notebook_id == self._said:
            return
        self._said = notebook_id
        if notebook_id != self.notebook_id:
            self.notebook_id = None  # looked up again at the next session lookup

    def _adopt_path(self, path: str) -> None:
        if self._root is None and self.notebook_path:
            # The server's path is the root joined with the front end's path when the kernel started.
            started, said = Path(self.notebook_path), Path(path)
            if started.is_absolute() and started.parts[-len(said.parts) :] == said.parts:
                self._root = Path(*started.parts[: -len(said.parts)])
        self._said_path = path

    def follow(self, store: Store, session: Session) -> None:
        """The notebook was renamed or moved while its kernel runs (the front end said a new path): the
        index learns where it is now, so a copy made later is told from it."""
        from ..store import notebooks as index

        if self.notebook_id is None or self.file is None:
            return
        record = index.get_notebook(store, self.notebook_id)
        if record is not None and record.session_id == session.id and record.path != str(self.file):
            index.put_notebook(store, self.notebook_id, index.record(session.id, str(self.file), notebook_user()))

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices

    def take_note(self) -> str | None:
        note, self.note = self.note, None
        return note

    # ------------------------------------------------------------------------------------------ lookup

    def _find(self, store: Store) -> _Found:
        from ..store import notebooks as index

        path = self.file
        saved = read_saved(path) if path is not None else None
        notebook_id = self._said or (saved.notebook_id if saved is not None else None)
        if notebook_id is None:
            return _Found(None)
        where = str(path) if path is not None else None
        if where is not None and (own := index.copy_id(store, notebook_id, notebook_user(), where)):
            notebook_id = own  # a copy that forked before, its file still carrying the original's id
        record = index.get_notebook(store, notebook_id)
        if record is None:
            return _Found(notebook_id)
        return _Found(notebook_id, record, self._copy_of(store, notebook_id, record, where))

    def _copy_of(self, store: Store, notebook_id: str, record: NotebookRecord, where: str | None) -> str | None:
        me = notebook_user()
        owner = record.user
        if owner is None:  # an old row: the session's principal says whose it is, if anyone's
            session = store.get_session(record.session_id)
            owner = session.principal.name if session is not None else None
        if owner is not None and owner != me:
            return f"a notebook of {owner}'s"
        if where is None or record.path is None or record.path == where:
            return None
        original = Path(record.path)
        saved = read_saved(original) if original != self.file else None
        if saved is not None and saved.notebook_id == notebook_id:
            return f"a copy of {_shown(original)} (or that one of this: both carry the same id)"
        return None  # renamed or moved: the old file is gone (or is another notebook now)

    def resolve(self, engine: Engine, *, fresh: bool = False) -> Session | None:
        """The notebook's session: its own, or its fork when the notebook is a copy; None when a new one must
        start (then :meth:`remember` it). ``fresh``: the caller starts a new conversation anyway."""
        from ..store import notebooks as index

        store = engine.store
        self._disagreement = None
        found = self._find(store)
        if found.notebook_id is None:
            self.notebook_id = None
            return None if fresh else self._checked(engine, self._by_path(engine))
        self.notebook_id = found.notebook_id
        record = found.record
        if record is None:
            return None if fresh else self._checked(engine, None)
        if store.get_session(record.session_id) is None:
            if not fresh:
                self._checked(engine, None, f"This notebook's session {record.session_id} is not in the store")
            return None
        if found.copy_of is not None:
            return self._fork(engine, found.notebook_id, record, found.copy_of, fresh=fresh)
        if fresh:
            return None
        here = str(self.file) if self.file is not None else record.path
        if record.path != here or record.user != notebook_user():
            index.put_notebook(store, found.notebook_id, index.record(record.session_id, here, notebook_user()))
        session = engine.sessions.get(record.session_id)
        return self._checked(engine, session) if session.status != "terminated" else None

    def _checked(self, engine: Engine, session: Session | _Ended | None, missing: str | None = None) -> Session | None:
        """``session`` (the notebook's, None when a new one must start) unless the saved notebook shows
        turns the store does not have in it: then None, and the new session is rebuilt (:meth:`restore`)."""
        if isinstance(session, _Ended):
            return None  # the user ended the conversation the notebook shows: a new one starts empty
        saved = read_saved(self.file) if self.file is not None else None
        if saved is None or not saved.shown:
            return session
        where = engine.store.location
        if session is None:
            self._disagreement = f"{missing or 'The store has no conversation of this notebook'} ({where})"
            return None
        shown = saved.shown_of(session.id)
        last = engine.store.last_event(session.id, None) if shown else None
        if not shown or (last is not None and last.id >= max(shown)):
            return session  # the log is append-only and ids sort by time: it has them all (one query)
        if shown <= {row.id for row in engine.store.event_rows(session.id)}:
            return session  # ids from two kernels in one millisecond need not sort: the log says
        self._disagreement = f"The store ({where}) lacks turns of session {session.id} that this notebook shows"
        return None

    def restore(self, store: Store, session: Session) -> None:
        """Rebuild ``session`` (new, its log empty) from the turns the saved notebook shows, when the last
        lookup found the store disagrees with them; the user is told."""
        reason, self._disagreement = self._disagreement, None
        if reason is None or self.file is None:
            return
        turns = rebuild(store, session.id, read_turns(self.file))
        if turns == 0:  # outputs no agentcell wrote
            self.note = f"{reason}: a new session {session.id} starts (the notebook shows no turn it can rebuild)."
        else:
            counted = "its turn is" if turns == 1 else f"its {turns} turns are"
            self.note = (
                f"{reason}: the notebook is the truth, so {counted} rebuilt from what it shows into a new session "
                f"{session.id}, and the model sees the conversation the notebook shows."
            )
        self.notices.append(self.note)

    def remember(self, store: Store, session: Session) -> None:
        """Map the notebook to ``session`` (a new one, or one resumed on purpose)."""
        from ..store import notebooks as index

        found = self._find(store) if self.notebook_id is None else _Found(self.notebook_id)
        notebook_id = found.notebook_id
        if notebook_id is None:  # no id: the path is all there is
            if self.notebook_path:
                store.set_value(_path_key(self.notebook_path), session.id)
            return
        if found.copy_of is not None:  # a copy starting afresh: it must not take its original's session
            notebook_id = self._new_copy_id(store, found.notebook_id or notebook_id)
        self.notebook_id = notebook_id
        where = str(self.file) if self.file is not None else None
        index.put_notebook(store, notebook_id, index.record(session.id, where, notebook_user()))

    def claim(self, store: Store, session: Session) -> None:
        """An id said or saved since ``session`` started without one (the file was saved since, by a front end
        without the extension's word): map it to the session unless the index knows it already."""
        from ..store import notebooks as index

        if self.notebook_id is not None:
            return
        notebook_id = self._said or saved_notebook_id(self.notebook_path)
        if notebook_id is not None and index.get_notebook(store, notebook_id) is None:
            self.remember(store, session)

    # ------------------------------------------------------------------------------------------ parts

    def _by_path(self, engine: Engine) -> Session | _Ended | None:
        """A notebook without an id: the session last mapped to its path, if the saved file shows that
        session's turns, or none yet (or there is no file: a console, a kernel started by a script)."""
        if not self.notebook_path:
            return None
        store = engine.store
        session_id = store.get_value(_path_key(self.notebook_path)) or store.get_value(
            _legacy_path_key(self.notebook_path)
        )
        if session_id is None or (record := engine.store.get_session(session_id)) is None:
            return None
        saved = read_saved(self.file) if self.file is not None else None
        if saved is not None and not self._may_be_its_notebook(engine, session_id, saved):
            return None  # a new notebook at a reused name
        if record.principal.name not in (None, notebook_user()):
            return None
        session = engine.sessions.get(session_id)
        return session if session.status != "terminated" else _Ended()

    def _may_be_its_notebook(self, engine: Engine, session_id: str, saved: SavedNotebook) -> bool:
        """Whether the saved file is the session's notebook: it shows the session's turns, or none yet (of
        any session) and was last written before the session's last event (a new notebook at a reused name
        was written after it)."""
        if session_id in saved.sessions:
            return True
        last = engine.store.last_event(session_id, None)
        if saved.sessions or last is None or self.file is None:
            return False
        try:
            return self.file.stat().st_mtime <= last.created_at.timestamp()
        except OSError:
            return False

    def _new_copy_id(self, store: Store, original_id: str) -> str:
        from ..store import notebooks as index

        new_id = str(uuid.uuid4())
        if self.file is not None:
            index.put_copy_id(store, original_id, notebook_user(), str(self.file), new_id)
        return new_id

    def _fork(
        self, engine: Engine, original_id: str, record: NotebookRecord, copy_of: str, *, fresh: bool
    ) -> Session | None:
        from ..records.session import Principal
        from ..store import notebooks as index

        new_id = self._new_copy_id(engine.store, original_id)
        self.notebook_id = new_id
        if fresh:
            return None
        up_to = _fork_point(engine.store, record.session_id, read_saved(self.file) if self.file else None)
        title = self.file.name if self.file is not None else None
        whom = Principal(type="user", name=notebook_user())
        forked = engine.sessions.fork(record.session_id, up_to=up_to, title=title, principal=whom)
        where = str(self.file) if self.file is not None else None
        index.put_notebook(engine.store, new_id, index.record(forked.id, where, notebook_user()))
        self.notices.append(
            f"This notebook is {copy_of}: it goes on as a conversation of its own (session {forked.id}, "
            f"forked from {record.session_id} at the last turn it shows)."
        )
        return forked


def session_of_notebook(store: Store, path: Path) -> str | None:
    """The session the saved notebook at ``path`` is mapped to, as far as the store and the file say without
    a kernel looking it up (a copy not run since it was made still names its original's): for listings."""
    from ..store import notebooks as index

    saved = read_saved(path)
    if saved is not None and saved.notebook_id is not None:
        own = index.copy_id(store, saved.notebook_id, notebook_user(), str(path)) or saved.notebook_id
        record = index.get_notebook(store, own)
        return record.session_id if record is not None else None
    return store.get_value(_path_key(str(path))) or store.get_value(_legacy_path_key(str(path)))


def _path_key(notebook_path: str) -> str:
    # The user too: on a shared store every hub server may have the same path (/home/jovyan/…).
    return f"notebook-path:{notebook_user()}\n{notebook_path}"


def _legacy_path_key(notebook_path: str) -> str:
    """Where versions before the notebook index kept a path's session, read still (its session's principal
    checked) so an upgrade loses no notebook's conversation."""
    return f"notebook:{notebook_path}"


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _fork_point(store: Store, session_id: str, saved: SavedNotebook | None) -> str | None:
    """The event a copy's fork ends with: the end of the last turn of the original the copy shows (the
    copy's history is the original's up to the copy, whatever the original did since). None, the whole
    log, when the copy shows none of its turns (outputs cleared, or saved by another front end)."""
    if saved is None or not saved.turn_event_ids:
        return None
    rows = store.event_rows(session_id)
    shown = [i for i, row in enumerate(rows) if row.id in saved.turn_event_ids]
    if not shown:
        return None
    ends = [i for i in range(shown[-1], len(rows)) if rows[i].type == "session.status_idle"]
    return rows[ends[0] if ends else shown[-1]].id


_RECORDING_SUFFIX = ".agentcell.jsonl"


def follow_recording(notebook_path: str | None, recording: Path, store: Store) -> Path | None:
    """Bring the notebook's recording to ``recording`` (its place beside the notebook) from where the store saw
    it last, when the notebook was renamed or moved since; returns the path it came from, or None.

    A rename moves the recording. When the notebook it sat beside is still there, the notebook was copied
    (JupyterLab's Duplicate keeps the metadata, so both carry one id), and each copy keeps a recording."""
    notebook_id = saved_notebook_id(notebook_path)
    if notebook_id is None:
        return None
    key = f"notebook-recording:{notebook_id}"
    known = store.get_value(key)
    moved_from: Path | None = None
    if known and Path(known) != recording and not recording.exists() and Path(known).is_file():
        before = Path(known)
        beside = before.with_name(before.name.removesuffix(_RECORDING_SUFFIX) + ".ipynb")
        try:
            if beside.exists():
                shutil.copy2(before, recording)
            else:
                shutil.move(before, recording)
        except OSError as exc:  # a read-only folder: replaying still works from the old place next time
            log.warning("could not bring the recording %s to %s: %s", before, recording, exc)
        else:
            moved_from = before
    store.set_value(key, str(recording))
    return moved_from
