"""The ``python`` tool: run code in a namespace the host provides (in the kernel, the user's namespace).

The code runs in a worker thread so the event loop keeps streaming. What it prints to stdout and stderr is
captured for that thread only (other threads, the kernel's own output included, are untouched); the value
of a last expression is shown through its rich representations (an image for ``_repr_png_``/
``_repr_jpeg_``, the text of ``_repr_markdown_``/``_repr_html_``, else ``repr``); new matplotlib figures are
returned as PNG images; an exception comes back as a traceback of the model's own code.

Timeouts and interrupts raise :class:`PythonInterrupted` inside the running code, which stops it at the
next bytecode; code blocked in a C call (a long ``time.sleep``) stops when the call returns, and if it has
not stopped within a grace period the tool answers anyway and says the code still runs.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import contextlib
import contextvars
import ctypes
import inspect
import io
import itertools
import linecache
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, TracebackType
from typing import Any, TextIO

from ...events import ContentBlock, ImageBlock, ImageSource, TextBlock, ToolDisplay
from ..base import ToolResult
from ..confine import confined, exempt
from ..definition import ToolContext, ToolDefinition
from ..functions import function_tool
from ..permissions import PermissionPolicy

__all__ = ["PythonInterrupted", "capture_display", "python_tool"]

GRACE_SECONDS = 2.0
"""How long an interrupted run may take to stop before the tool answers without it."""
_MAX_TEXT_REPR = 20_000
_cells = itertools.count(1)


class PythonInterrupted(BaseException):
    """Raised inside the model's code to stop it; a BaseException so ``except Exception`` cannot eat it."""


@dataclass
class _Capture:
    stdout: io.StringIO = field(default_factory=io.StringIO)
    stderr: io.StringIO = field(default_factory=io.StringIO)
    value: Any = None
    has_value: bool = False
    error: str | None = None
    images: list[ImageBlock] = field(default_factory=list)
    displays: list[dict[str, Any]] = field(default_factory=list)
    """MIME bundles the code displayed (``display(df)``, ``plt.show()``), in order."""


_display_lock = threading.Lock()
_display_targets: dict[int, _Capture] = {}


def capture_display(data: dict[str, Any]) -> bool:
    """Keep a MIME bundle displayed by the model's code for its tool result; False when the calling thread
    is not running a python tool call (then the host shows the bundle as usual). The notebook host routes
    its display publisher through here, so what the code displays lands in its tool card, not below the
    turn."""
    with _display_lock:
        capture = _display_targets.get(threading.get_ident())
    if capture is None:
        return False
    capture.displays.append(dict(data))
    return True


# ---------------------------------------------------------------------------------------------- streams


class _ThreadRouter(io.TextIOBase):
    """Stands in for sys.stdout/sys.stderr: a thread registered with a buffer writes there, every other
    thread writes to the stream that was in place before."""

    def __init__(self, fallback: TextIO) -> None:
        super().__init__()
        self.fallback = fallback
        self.targets: dict[int, io.StringIO] = {}

    def write(self, text: str) -> int:
        target = self.targets.get(threading.get_ident())
        return (target or self.fallback).write(text)

    def flush(self) -> None:
        if threading.get_ident() not in self.targets:
            self.fallback.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fallback, name)


_router_lock = threading.Lock()
_routers: dict[str, _ThreadRouter] = {}
_router_users = 0


def _route(capture: _Capture) -> Callable[[], None]:
    """Send this thread's stdout and stderr to ``capture`` until the returned function is called."""
    global _router_users  # noqa: PLW0603 - the redirection is process-wide state, counted by its users
    ident = threading.get_ident()
    with _router_lock:
        for name, buffer in (("stdout", capture.stdout), ("stderr", capture.stderr)):
            current = getattr(sys, name)
            if not isinstance(current, _ThreadRouter):
                current = _ThreadRouter(current)
                setattr(sys, name, current)
            _routers[name] = current
            current.targets[ident] = buffer
        _router_users += 1

    def release() -> None:
        global _router_users  # noqa: PLW0603
        with _router_lock:
            _router_users -= 1
            for name, router in list(_routers.items()):
                router.targets.pop(ident, None)
                # Put the original back only if nobody replaced our router meanwhile.
                if _router_users == 0 and getattr(sys, name) is router:
                    setattr(sys, name, router.fallback)
                    del _routers[name]

    return release


# ---------------------------------------------------------------------------------------------- running


def _compile(source: str, filename: str) -> tuple[CodeType | None, CodeType | None]:
    """The code of ``source`` without its last expression, and that expression (if it ends with one)."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(source, filename, "exec")
    last = None
    if tree.body and isinstance(final := tree.body[-1], ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    body = compile(tree, filename, "exec", flags=flags) if tree.body else None
    value = compile(last, filename, "eval", flags=flags) if last is not None else None
    return body, value


def _evaluate(code: CodeType, namespace: dict[str, Any]) -> Any:
    result = eval(code, namespace)  # running the model's code is this tool's purpose
    if inspect.CO_COROUTINE & code.co_flags:
        # Top-level await: the code gets an event loop of its own in this worker thread.
        return asyncio.run(result)
    return result


class _Worker:
    """Lets another thread stop the code running here, and only while it runs: an asynchronous exception
    that landed in the tool's own bookkeeping could leave the stream routing half undone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ident: int | None = None
        self._running = False
        self._sent = False

    def enter(self) -> None:
        with self._lock:
            self._ident = threading.get_ident()
            self._running = True

    def leave(self) -> None:
        # The interrupt may land while leaving; then leave again (it is sent at most once).
        for _ in range(2):
            try:
                with self._lock:
                    if self._running and self._ident is not None:
                        self._running = False
                        # Cancel an interrupt sent just before the code finished but not yet raised.
                        _set_async_exc(self._ident, None)
                return
            except PythonInterrupted:
                continue

    def interrupt(self) -> None:
        with self._lock:
            if self._running and not self._sent and self._ident is not None:
                self._sent = True
                _set_async_exc(self._ident, PythonInterrupted)


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> None:
    with exempt():  # the tool's own bookkeeping, not the model's code
        _set_async_exc_unconfined(ident, exc)


def _set_async_exc_unconfined(ident: int, exc: type[BaseException] | None) -> None:
    payload = ctypes.py_object(exc) if exc is not None else ctypes.c_void_p(None)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), payload)


def _run(source: str, namespace: dict[str, Any], capture: _Capture, worker: _Worker) -> None:
    filename = f"<python-tool-{next(_cells)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    release = _route(capture)
    with _display_lock:
        _display_targets[threading.get_ident()] = capture
    figures_before = _figure_numbers()
    try:
        try:
            body, last = _compile(source, filename)
        except SyntaxError as exc:
            capture.error = "".join(traceback.format_exception_only(exc)).rstrip()
            return
        try:
            worker.enter()
            if body is not None:
                _evaluate(body, namespace)
            if last is not None:
                capture.value = _evaluate(last, namespace)
                capture.has_value = capture.value is not None
        except PythonInterrupted:
            capture.error = "the code was interrupted"
        except BaseException as exc:  # the model's code may raise anything, SystemExit included
            capture.error = _format_traceback(exc, filename)
        finally:
            worker.leave()
    finally:
        release()
        with _display_lock:
            _display_targets.pop(threading.get_ident(), None)
        capture.images.extend(_new_figures(figures_before))


def _format_traceback(exc: BaseException, filename: str) -> str:
    """The traceback from the first frame of the model's code on: the tool's own frames are noise."""
    tb: TracebackType | None = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()


async def _execute(
    source: str, namespace: dict[str, Any], limit: float, policy: PermissionPolicy | None = None
) -> tuple[_Capture, str | None]:
    """Run ``source`` in a worker thread; returns what it captured and, when it was stopped, why."""
    capture = _Capture()
    worker = _Worker()
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not finished.done():
            finished.set_result(None)

    def work() -> None:
        try:
            with confined(policy) if policy is not None else contextlib.nullcontext():
                _run(source, namespace, capture, worker)
        except PythonInterrupted:
            # It landed while the run was winding down, after the code itself had finished.
            capture.error = capture.error or "the code was interrupted"
        finally:
            worker.leave()
            # The loop may be gone when code that outlived its timeout finally ends.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle)

    # In the turn's context, so what the code calls knows which session acts (the memory API does).
    thread = threading.Thread(target=contextvars.copy_context().run, args=(work,), name="agentcell-python-tool")
    thread.daemon = True
    thread.start()
    try:
        await asyncio.wait_for(asyncio.shield(finished), limit)
        return capture, None
    except TimeoutError:
        worker.interrupt()
        stopped = await _settle(finished)
        return capture, (f"timed out after {limit:g} s" if stopped else f"timed out after {limit:g} s and still runs")
    except asyncio.CancelledError:
        worker.interrupt()
        await asyncio.shield(_settle(finished))
        raise


async def _settle(finished: asyncio.Future[None]) -> bool:
    try:
        await asyncio.wait_for(asyncio.shield(finished), GRACE_SECONDS)
    except TimeoutError:
        return False
    return True


# ---------------------------------------------------------------------------------------------- display


def _figure_numbers() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _new_figures(before: set[int]) -> list[ImageBlock]:
    """PNGs of the matplotlib figures the code opened (then closed, as a notebook's inline backend does)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    images = []
    for number in sorted(set(pyplot.get_fignums()) - before):
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        pyplot.close(figure)
        images.append(_image("image/png", buffer.getvalue()))
    return images


def _image(media_type: str, data: bytes | str) -> ImageBlock:
    encoded = data if isinstance(data, str) else base64.b64encode(data).decode("ascii")
    return ImageBlock(source=ImageSource(media_type=media_type, data=encoded))


def _display(value: Any) -> tuple[list[ContentBlock], ToolDisplay | None]:
    """The richest forms of ``value`` the model can take (an image and/or text, the text first), and its
    HTML or Markdown for people when it has one (standing for that text)."""
    bundle: dict[str, Any] = {}
    mimebundle = _call_repr(value, "_repr_mimebundle_")
    if isinstance(mimebundle, tuple) and mimebundle:
        mimebundle = mimebundle[0]
    if isinstance(mimebundle, dict):
        bundle.update(mimebundle)
    for mime, method in (
        ("image/png", "_repr_png_"),
        ("image/jpeg", "_repr_jpeg_"),
        ("text/markdown", "_repr_markdown_"),
        ("text/html", "_repr_html_"),
    ):
        if mime not in bundle and (found := _call_repr(value, method)) is not None:
            bundle[mime] = found
    blocks: list[ContentBlock] = []
    for mime in ("image/png", "image/jpeg"):
        data = bundle.get(mime)
        if isinstance(data, bytes | str) and data:
            blocks.append(_image(mime, data))
            break
    text = bundle.get("text/plain")
    if not isinstance(text, str):
        for mime in ("text/markdown", "text/html"):
            if isinstance(bundle.get(mime), str):
                text = f"[{mime}]\n{bundle[mime]}"
                break
        else:
            text = _safe_repr(value)
    if len(text) > _MAX_TEXT_REPR:
        text = text[:_MAX_TEXT_REPR] + f"... ({len(text) - _MAX_TEXT_REPR:,} more characters)"
    blocks.insert(0, TextBlock(text=f"Out: {text}"))
    rich = next(((m, bundle[m]) for m in _RICH_TYPES if isinstance(bundle.get(m), str) and bundle[m]), None)
    return blocks, (ToolDisplay(block=0, media_type=rich[0], data=rich[1]) if rich is not None else None)


_RICH_TYPES = ("text/html", "text/markdown")


def _displayed(bundle: dict[str, Any]) -> tuple[ContentBlock, ToolDisplay | None] | None:
    """One displayed bundle as the model gets it (an image, else its text) and, when it has one, the richer
    form people see in the card (HTML, Markdown). None for a bundle with nothing to show."""
    for mime in ("image/png", "image/jpeg"):
        data = bundle.get(mime)
        if isinstance(data, bytes | str) and data:
            return _image(mime, data), None
    rich = next(((m, bundle[m]) for m in _RICH_TYPES if isinstance(bundle.get(m), str) and bundle[m]), None)
    text = bundle.get("text/plain")
    if not isinstance(text, str) or not text:
        if rich is None:
            return None
        text = f"[{rich[0]}]\n{rich[1]}"
    if len(text) > _MAX_TEXT_REPR:
        text = text[:_MAX_TEXT_REPR] + f"... ({len(text) - _MAX_TEXT_REPR:,} more characters)"
    display = ToolDisplay(block=0, media_type=rich[0], data=rich[1]) if rich is not None else None
    return TextBlock(text=text), display


def _call_repr(value: Any, method: str) -> Any:
    function = getattr(value, method, None)
    if not callable(function) or isinstance(value, type):
        return None
    try:
        return function()
    except Exception:
        # A broken representation must not hide the value: repr() still shows it.
        return None


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:
        return f"<{type(value).__name__} object; repr() failed: {exc}>"


def _render(capture: _Capture, stopped: str | None) -> ToolResult:
    blocks: list[ContentBlock] = []
    sections = []
    if out := capture.stdout.getvalue():
        sections.append(out.rstrip("\n"))
    if err := capture.stderr.getvalue():
        sections.append("[stderr]\n" + err.rstrip("\n"))
    if capture.error is not None:
        sections.append(capture.error)
    if stopped is not None:
        sections.append(f"[{stopped}]")
    if sections:
        blocks.append(TextBlock(text="\n".join(sections)))
    displays: list[ToolDisplay] = []
    for bundle in capture.displays:
        if (shown := _displayed(bundle)) is None:
            continue
        block, display = shown
        if display is not None:
            displays.append(display.model_copy(update={"block": len(blocks)}))
        blocks.append(block)
    if capture.has_value and capture.error is None:
        shown_value, rich = _display(capture.value)
        if rich is not None:
            displays.append(rich.model_copy(update={"block": len(blocks)}))
        blocks.extend(shown_value)
    blocks.extend(capture.images)
    if not blocks:
        blocks.append(TextBlock(text="(no output)"))
    failed = capture.error is not None or stopped is not None
    code = ("TIMEOUT" if stopped else "PYTHON_ERROR") if failed else None
    return ToolResult(content=tuple(blocks), is_error=failed, error_code=code, displays=tuple(displays))


def python_tool(
    namespace: dict[str, Any], *, name: str = "python", timeout: float = 60.0, max_timeout: float = 600.0
) -> ToolDefinition:
    """The ``python`` tool over ``namespace``; code times out after ``timeout`` seconds unless the call
    asks for another limit (at most ``max_timeout``)."""

    async def python(code: str, context: ToolContext, timeout_seconds: float | None = None) -> ToolResult:
        """Run Python code in the notebook's namespace and show its output, the value of its last
        expression, new figures, or its traceback. Variables persist between calls; top-level await
        works.

        Args:
            code: The Python source to run.
            timeout_seconds: Stop the code after this many seconds (the default suits most code).
        """
        limit = min(timeout_seconds or timeout, max_timeout)
        # The preset's guard rails (tools/confine.py), asked or not: what a confused model's code does by
        # mistake stays inside. They are no sandbox; the approval (tools/python_access.py) is the gate.
        capture, stopped = await _execute(code, namespace, limit, context.policy)
        return _render(capture, stopped)

    return function_tool(python, name=name, access={"kernel"}, origin="builtin")
