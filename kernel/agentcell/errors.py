"""The one exception tree of agentcell.

Every error agentcell raises derives from :class:`AgentCellError`::

    AgentCellError
    ├── UserError                     the caller asked for something invalid; the message says what to do
    │   ├── InvalidInputError         a value failed validation (too long, wrong shape, out of range)
    │   │   └── SkillFormatError      a skill folder cannot be loaded (its diagnostics say where and why)
    │   │   └── WorkflowPlanError     a workflow plan cannot run as given (names the step at fault)
    │   ├── NotFoundError
    │   │   ├── AgentNotFoundError
    │   │   ├── AgentVersionNotFoundError
    │   │   └── SessionNotFoundError
    │   ├── SessionBusyError          a turn is already running in that session
    │   │   └── SessionDrivenElsewhereError  another kernel holds the session's lease (a shared database)
    │   ├── SessionTerminatedError    the session was terminated and takes no more input
    │   ├── ResourceMountError        a session resource could not be mounted (clone, upload, path)
    │   ├── ToolRegistrationError     a tool, restriction or guard cannot be registered as asked
    │   └── ConfigurationError        no usable model/provider for the requested name
    │       └── MissingKeyError       the model's provider needs an API key that is not set
    ├── TurnInterrupted               the running turn was interrupted (the notebook's stop button)
    ├── TurnError                     a notebook cell's turn ended in an error (the cell fails; its view says why)
    ├── ApprovalUnavailable           an approval request reached no one who could answer it (the call is refused)
    ├── OutsideWorkspaceError         a tool was asked for a path the permission preset does not let it touch
    ├── PermissionChangeRefused       a tool's code tried to change the preset, the always rules or the budget
    ├── ExternalAgentError            an external ACP agent did not start, or broke off (exited, garbled its wire)
    ├── TurnSignal                    internal: how the parts of a turn tell the loop to stop (never escapes it)
    │   ├── BudgetExhaustedError      the next request's worst case does not fit what remains of the budget
    │   └── TurnFailedError           the turn cannot go on (its session.error is already in the log)
    ├── StoreError                    the event store cannot be used
    │   └── StoreVersionError         the database was written by a newer agentcell
    └── ProviderError                 a model request failed (HTTP, protocol, local model)
        ├── ProviderAuthError         401/403: the credential named in the message is missing or wrong
        ├── ProviderStatusError       any other HTTP error status, with the API's own message
        ├── ProviderConnectionError   the connection failed or was cut
        ├── ProviderProtocolError     the stream could not be understood (malformed data, bad order)
        ├── IncompleteToolCallError   a model's tool call did not complete within max_tokens (what it wrote)
        ├── ContextWindowExceededError  the request cannot fit the model's context window (checked before sending)
        └── ReplayMissError           a request is not in the notebook's recording

User mistakes never lose recorded data: errors are raised before anything is appended. Every class
pickles and unpickles with its attributes (errors cross process and thread pools). The one deliberate
exception outside the tree is ``tools.builtin.python.PythonInterrupted``, a ``BaseException`` raised
inside the model's own code so that its ``except Exception`` cannot swallow an interrupt.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentCellError",
    "AgentNotFoundError",
    "AgentVersionNotFoundError",
    "ApprovalUnavailable",
    "BudgetExhaustedError",
    "ConfigurationError",
    "ContextWindowExceededError",
    "ExternalAgentError",
    "IncompleteToolCallError",
    "InvalidInputError",
    "MissingKeyError",
    "NotFoundError",
    "OutsideWorkspaceError",
    "PermissionChangeRefused",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderStatusError",
    "ReplayMissError",
    "ResourceMountError",
    "SessionBusyError",
    "SessionDrivenElsewhereError",
    "SessionNotFoundError",
    "SessionTerminatedError",
    "SkillFormatError",
    "StoreError",
    "StoreVersionError",
    "ToolRegistrationError",
    "TurnError",
    "TurnFailedError",
    "TurnInterrupted",
    "TurnSignal",
    "UserError",
    "WorkflowPlanError",
]


class AgentCellError(Exception):
    """Root of every error raised by agentcell."""


class UserError(AgentCellError):
    """The caller asked for something that cannot be done; the message says how to fix it."""


class InvalidInputError(UserError, ValueError):
    """A value failed validation."""


class SkillFormatError(InvalidInputError):
    """A skill folder that cannot be loaded: no SKILL.md, no description, YAML that does not parse..."""

    def __init__(self, message: str, diagnostics: list[str]) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics
        """Each problem as ``file:line: level: message``."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.diagnostics))


class WorkflowPlanError(InvalidInputError):
    """A workflow plan cannot run as given: its shape, its graph, a template, an agent it names, or the
    session's agent not being allowed to start runs. ``step_id`` names the step at fault (None: the plan)."""

    def __init__(self, message: str, step_id: str | None = None) -> None:
        super().__init__(f"step {step_id!r}: {message}" if step_id is not None else message)
        self.step_id = step_id
        self.problem = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problem, self.step_id))


class NotFoundError(UserError, LookupError):
    """A referenced object does not exist."""


class AgentNotFoundError(NotFoundError):
    def __init__(self, agent_id: str) -> None:
        super().__init__(f"no agent with id {agent_id!r}; list agents with engine.agents.list()")
        self.agent_id = agent_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.agent_id,))


class AgentVersionNotFoundError(NotFoundError):
    def __init__(self, agent_id: str, version: int, latest: int) -> None:
        super().__init__(f"agent {agent_id!r} has no version {version}; versions run from 1 to {latest}")
        self.agent_id = agent_id
        self.version = version
        self.latest = latest

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.agent_id, self.version, self.latest))


class SessionNotFoundError(NotFoundError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session with id {session_id!r}; list sessions with engine.sessions.list()")
        self.session_id = session_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.session_id,))


class SessionBusyError(UserError):
    """A turn is running; interrupt it or wait for it before sending another message."""


class SessionDrivenElsewhereError(SessionBusyError):
    """Another kernel is driving the session on a shared database (it holds the session's lease, or wrote
    the event this one meant to write): read it or follow it from here, drive it there."""

    def __init__(self, message: str, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.session_id))


class SessionTerminatedError(UserError):
    """The session was terminated; create a new one."""


class ToolRegistrationError(UserError):
    """A tool, restriction or guard cannot be registered: a bad, reserved or taken name, an empty filter."""


class ResourceMountError(UserError):
    """A resource could not be mounted (a clone failed, an upload is missing, a path is taken)."""


class ConfigurationError(UserError):
    """No provider can serve the requested model."""


class MissingKeyError(ConfigurationError):
    """The provider needs an API key and none is set; ``key_env`` names the variable that would hold it."""

    def __init__(self, message: str, key_env: str) -> None:
        super().__init__(message)
        self.key_env = key_env

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.key_env))


class TurnInterrupted(AgentCellError):  # noqa: N818 - it is what the user sees: "TurnInterrupted"
    """The running turn was interrupted (the kernel's stop button, or SIGINT)."""

    def __str__(self) -> str:
        return "the turn was interrupted; what it streamed so far is kept in the session"

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"TurnInterrupted: {self}"]


class TurnError(AgentCellError):
    """A cell's turn ended in an error: the cell fails, so Run All and ``agentcell run`` stop there and say so.

    The turn's own view shows what happened, so in a notebook the kernel prints nothing more (the reply still
    names it: ``kernel/extension.py``); a shell without that handler shows this one line."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"TurnError: {self}"]


class ApprovalUnavailable(AgentCellError):  # noqa: N818 - the model reads the name in the refusal
    """An approver could not reach anyone during the turn (no notebook view answered), so the call that
    needed approval is refused unasked, as the permission preset says."""


class OutsideWorkspaceError(AgentCellError, PermissionError):
    """A file tool was asked for a path the call was not permitted to touch."""


class PermissionChangeRefused(AgentCellError, PermissionError):  # noqa: N818 - the model reads the name
    """A tool's code (the agent's, during its turn) tried to change the permission preset, the "always"
    rules or the budget; only the user changes those."""


class ExternalAgentError(AgentCellError):
    """An external agent (``%agent acp``) did not start, or broke off mid-turn: the message says which
    agent, what happened and what to do."""


class TurnSignal(AgentCellError):  # noqa: N818 - a signal between the parts of a turn, not a failure
    """Internal: raised by a part of the turn (a request, the grader, the advisor) for the loop to stop."""


class BudgetExhaustedError(TurnSignal):
    """The next request's worst case does not fit what remains of the budget."""


class TurnFailedError(TurnSignal):
    """The turn cannot go on; the session.error event was already emitted."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StoreError(AgentCellError):
    """The event store cannot be opened or written."""

    def _render_traceback_(self) -> list[str]:  # IPython: the message says what to do; agentcell's frames do not
        return [f"{type(self).__name__}: {self}"]


class StoreVersionError(StoreError):
    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"the database {path} has schema version {found}, newer than this agentcell supports "
            f"({supported}); upgrade agentcell, or point AGENTCELL_DB at another database. "
            "The database was not modified."
        )
        self.path = path
        self.found = found
        self.supported = supported

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.found, self.supported))


class ProviderError(AgentCellError):
    """A model request failed.

    ``retryable`` says whether sending the same request again may succeed; ``status_code`` is the HTTP
    status when there was one; ``error_type`` is the API's own error type when it named one.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = None,
        error_type: str | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        """Seconds the server asked us to wait before retrying, when it said."""
        self.provider = provider
        self.status_code = status_code
        self.error_type = error_type
        self.retryable = retryable

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {
            "provider": self.provider,
            "status_code": self.status_code,
            "error_type": self.error_type,
            "retryable": self.retryable,
            "retry_after": self.retry_after,
        }
        return (_rebuild_provider_error, (type(self), self.message, fields))


def _rebuild_provider_error(cls: type[ProviderError], message: str, fields: dict[str, Any]) -> ProviderError:
    error = cls.__new__(cls)
    ProviderError.__init__(error, message, **fields)
    return error


class ProviderAuthError(ProviderError):
    """The credential was missing or refused. The message names the variable, never its value."""


class ProviderStatusError(ProviderError):
    """The API answered with an error status."""


class ProviderConnectionError(ProviderError):
    """The connection failed, timed out, or was cut mid-stream."""


class ProviderProtocolError(ProviderError):
    """The provider sent data that does not follow its protocol."""


class IncompleteToolCallError(ProviderError):
    """A model's tool call did not complete within its token budget. ``produced`` is what the model wrote,
    so the message can show it; the decoding constraint of the local model makes this rare."""

    def __init__(self, message: str, *, produced: str = "", **fields: Any) -> None:
        super().__init__(message, **fields)
        self.produced = produced

    def __reduce__(self) -> tuple[Any, ...]:
        fields = super().__reduce__()[1][2]
        return (_rebuild_incomplete_call, (self.message, self.produced, fields))


def _rebuild_incomplete_call(message: str, produced: str, fields: dict[str, Any]) -> IncompleteToolCallError:
    return IncompleteToolCallError(message, produced=produced, **fields)


class ContextWindowExceededError(ProviderError):
    """The request is larger than the model's context window: found before it was sent, never by cutting
    the conversation short."""


class ReplayMissError(ProviderError):
    """The request is not in the notebook's recording (and, in ``auto``, could not run live either)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider="replay", retryable=False)
