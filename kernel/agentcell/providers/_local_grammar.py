"""The local model's JSON replies, held inside their token budget by the decoding constraint itself.

A 135M model decoding greedily flips on the rounding of the CPU it runs on (SIMD paths, thread count), and
on some machines it never closes a tool call's string argument: the call then runs into ``max_tokens`` as
invalid JSON. Three things keep a call finishing on any machine:

- **Bounded strings.** Every free-text string in a tool's arguments gets a ``maxLength`` derived from the
  budget (``bounded``), so the grammar itself closes it in time; a string's characters exclude raw control
  characters and ``\\u`` escapes, which are invalid JSON or cost six tokens a character.
- **A closing path.** ``ClosingGuard`` watches the budget as tokens are decoded; in the last few tokens it
  pushes the tokens that close what is open (``"``, ``}``, ``]``), which the grammar allows as soon as the
  required parts are there.
- **A repetition guard.** The same guard closes early when the reply repeats itself (a loop the model would
  only leave at ``max_tokens``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from llama_cpp.llama import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

__all__ = ["CLOSING_RESERVE", "ClosingGuard", "bounded", "closer_tokens", "reply_grammar", "string_share"]

CLOSING_RESERVE = 8
"""Tokens kept at the end of the budget for closing what is open."""
_MIN_STRING = 16
"""A string is never bounded below this many characters: a call needs some room to say anything."""
_ARRAY_ITEMS = 8
"""An array without its own ``maxItems`` holds at most this many items in a local model's call."""
_CLOSERS = frozenset('"}] ')
_BIAS = 50.0
"""Added to the closing tokens' logits: more than any gap between logits of this model."""
_LOOP_REPEATS = 4
_LOOP_MIN_CHARS = 32
_LOOP_MAX_PERIOD = 48

# JSON string characters as the grammar takes them: no raw control characters (invalid JSON), and no
# \\u escapes (anything beyond ASCII can be written as itself, at a fraction of the tokens).
_CHAR_RULE = 'char ::= [^"\\\\\\x00-\\x1F\\x7F] | "\\\\" (["\\\\/bfnrt])'


def _is_free_string(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and not ({"enum", "const", "pattern", "format"} & schema.keys())


def _count_strings(schema: Any) -> int:
    """How many free-text strings a value of ``schema`` can hold at most (an array's items counted by its
    bound), to share the budget among them."""
    if not isinstance(schema, dict):
        return 0
    if _is_free_string(schema):
        return 1
    count = sum(_count_strings(s) for s in schema.get("properties", {}).values())
    for key in ("anyOf", "oneOf"):
        count += max((_count_strings(s) for s in schema.get(key, [])), default=0)
    if isinstance(items := schema.get("items"), dict):
        count += _count_strings(items) * int(schema.get("maxItems", _ARRAY_ITEMS))
    return count


def string_share(name: str, arguments: dict[str, Any], max_tokens: int) -> int:
    """The characters each free-text string of a call of ``name`` may take so that the whole call fits
    ``max_tokens``: what is left after the call's fixed text (its name and argument names, about a token
    per two characters of JSON) and the closing reserve, shared among its strings, at a token a character
    (the worst case for ASCII text)."""
    names = dict.fromkeys(arguments.get("properties", {}), "")
    fixed = len(json.dumps({"name": name, "arguments": names})) // 2 + CLOSING_RESERVE
    return max(_MIN_STRING, (max_tokens - fixed) // max(1, _count_strings(arguments)))


def bounded(schema: Any, chars: int) -> Any:
    """``schema`` with every free-text string held to ``chars`` characters (or its own smaller bound) and
    every array to a bounded number of items."""
    if isinstance(schema, list):
        return [bounded(s, chars) for s in schema]
    if not isinstance(schema, dict):
        return schema
    nested = ("items", "anyOf", "oneOf", "allOf")
    out = {key: bounded(value, chars) if key in nested else value for key, value in schema.items()}
    if "properties" in schema:
        out["properties"] = {name: bounded(s, chars) for name, s in schema["properties"].items()}
    if _is_free_string(schema):
        out["maxLength"] = min(int(schema.get("maxLength", chars)), chars)
    if schema.get("type") == "array" or "items" in schema:
        out["maxItems"] = min(int(schema.get("maxItems", _ARRAY_ITEMS)), _ARRAY_ITEMS)
    return out


@functools.lru_cache(maxsize=64)
def reply_grammar(schema: str) -> LlamaGrammar:
    """The grammar of replies following the JSON schema ``schema`` (a JSON text, so it can be cached)."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    rules = [_CHAR_RULE if line.startswith("char ::=") else line for line in json_schema_to_gbnf(schema).splitlines()]
    return LlamaGrammar.from_string("\n".join(rules), verbose=False)


def closer_tokens(llama: Llama) -> list[int]:
    """The model's tokens made only of closing characters (``"``, ``}``, ``]``, spaces)."""
    found = []
    for token in range(llama.n_vocab()):
        text = llama.detokenize([token]).decode(errors="replace")
        if text.strip() and set(text) <= _CLOSERS:
            found.append(token)
    return found


def _loops(text: str) -> bool:
    """Whether ``text`` ends with the same stretch repeated (a decoding loop)."""
    for period in range(1, _LOOP_MAX_PERIOD + 1):
        span = max(period * _LOOP_REPEATS, _LOOP_MIN_CHARS)
        if len(text) < span:
            break
        tail = text[-span:]
        if tail == (tail[-period:] * (span // period + 1))[-span:]:
            return True
    return False


@dataclass
class ClosingGuard:
    """A llama.cpp logits processor: near the end of the budget, or once the reply loops, the tokens that
    close strings, arrays and objects are pushed to the top; the grammar lets them through only where
    they are valid, so the reply closes by the shortest path it has."""

    llama: Llama
    prompt_tokens: int
    max_tokens: int
    closers: list[int]
    closing: bool = False
    """Set once the guard started closing: the reply loops or the budget is nearly spent."""
    cut_by_budget: bool = False
    """Set when the budget, not the model or a loop, started the closing."""
    _text: str = field(default="", repr=False)
    _seen: int = field(default=0, repr=False)

    def __call__(self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        generated = len(input_ids) - self.prompt_tokens
        if not self.closing and generated > self._seen:
            self._text += self.llama.detokenize(list(input_ids[self.prompt_tokens + self._seen :])).decode(
                errors="replace"
            )
            self._seen = generated
            self.closing = _loops(self._text)
        if not self.closing and self.max_tokens - generated <= CLOSING_RESERVE:
            self.closing = self.cut_by_budget = True
        if self.closing:
            scores[self.closers] += _BIAS
        return scores
