"""The relay's shortener over any JSON, fed in any chunks: what comes out is JSON of the same shape, each
string a prefix of the original (a cut one ending in the note's placeholder), short strings whole, and the
kept content within the budget; lines at or under the cap pass through byte for byte."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcell.tools.mcp_relay import KEEP_FILES, KEEP_SECONDS, PLACEHOLDER, SHORT, Shortener, relay

CUT = json.loads(f'"{PLACEHOLDER.decode()}"')

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=1200)
documents = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=12,
)


def _shorten(encoded: bytes, budget: int, cuts: list[int]) -> Any:
    shortener = Shortener(budget)
    start = 0
    for cut in [*sorted(set(cuts)), len(encoded)]:
        shortener.feed(encoded[start:cut])
        start = cut
    return json.loads(bytes(shortener.out))


def _same_shape(original: Any, shortened: Any) -> int:
    """Assert the shape matches; return how many bytes of string content were kept."""
    if isinstance(original, str):
        assert isinstance(shortened, str)
        if shortened.endswith(CUT):
            kept = shortened[: -len(CUT)]
            assert original.startswith(kept) and len(original.encode()) > SHORT
            return len(kept.encode())
        assert shortened == original
        return 0 if len(original.encode()) <= SHORT else len(original.encode())
    if isinstance(original, list):
        assert isinstance(shortened, list) and len(shortened) == len(original)
        return sum(_same_shape(a, b) for a, b in zip(original, shortened, strict=True))
    if isinstance(original, dict):
        assert isinstance(shortened, dict) and list(shortened) == list(original)
        return sum(_same_shape(original[k], shortened[k]) for k in original)
    assert shortened == original
    return 0


@settings(max_examples=150, deadline=None)
@given(document=documents, budget=st.integers(0, 3000), ascii_only=st.booleans(), data=st.data())
def test_the_shortener_keeps_the_shape_and_a_prefix_of_every_string(
    document: Any, budget: int, ascii_only: bool, data: st.DataObject
) -> None:
    encoded = json.dumps(document, ensure_ascii=ascii_only).encode()
    cuts = data.draw(st.lists(st.integers(0, len(encoded)), max_size=8))
    shortened = _shorten(encoded, budget, cuts)
    long_kept = _same_shape(document, shortened)
    # Beyond the strings kept whole, content stays within the budget (plus one string's SHORT allowance
    # and one escape, which is never split).
    assert long_kept <= budget + SHORT + 12 or long_kept == sum(
        len(s.encode()) for s in _strings(document) if len(s.encode()) > SHORT
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


def test_escapes_and_surrogate_pairs_split_across_chunks_are_never_cut_in_half() -> None:
    text = "a" * 300 + '\n"\\😀é' * 200
    encoded = json.dumps({"text": text}).encode()
    for budget in range(290, 340):
        for cut in range(300, 330):
            shortened = _shorten(encoded, budget, [cut, cut + 1, cut + 7])
            kept = shortened["text"].removesuffix(CUT)
            assert text.startswith(kept) and shortened["text"].endswith(CUT)


def _relayed(lines: list[bytes], cap: int, keep_dir: Path) -> list[bytes]:
    stdout = keep_dir.parent / "stdout"
    stdout.write_bytes(b"".join(line + b"\n" for line in lines))
    sink = io.BytesIO()
    source = os.open(stdout, os.O_RDONLY)
    try:
        relay(source, sink, cap, str(keep_dir), "demo")
    finally:
        os.close(source)
    return sink.getvalue().split(b"\n")[:-1]


def test_lines_up_to_the_cap_pass_unchanged_and_a_longer_one_is_cut_with_a_note_and_kept_whole(
    tmp_path: Path,
) -> None:
    small = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x" * 500}]}})
    text = "0123456789" * 20_000
    big = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": text}]}})
    first, second, third = _relayed([small.encode(), big.encode(), small.encode()], 5000, tmp_path / "kept")
    assert first == third == small.encode()
    message = json.loads(second)
    assert message["id"] == 2
    shown = message["result"]["content"][0]["text"]
    assert shown.startswith("0123456789" * 400) and len(shown) < 6000
    (kept,) = (tmp_path / "kept").iterdir()
    assert kept.read_bytes() == big.encode()  # the whole message, as the server sent it
    assert f"answered with {len(big):,} bytes, over the cap of 5,000 bytes" in shown
    assert f"kept in {kept}" in shown


def test_a_message_that_cannot_be_shortened_becomes_an_error_answer_to_its_request(tmp_path: Path) -> None:
    numbers = json.dumps({"jsonrpc": "2.0", "id": "req-7", "result": {"numbers": list(range(100_000))}})
    (line,) = _relayed([numbers.encode()], 5000, tmp_path / "kept")
    message = json.loads(line)
    assert message["id"] == "req-7" and message["result"]["isError"] is True
    assert "could not be shortened" in message["result"]["content"][0]["text"]


def test_keeping_a_message_prunes_the_old_kept_ones_first(tmp_path: Path) -> None:
    """The kept folder is in the temporary folder: a week-old kept message goes, and beyond KEEP_FILES the
    oldest go, when the relay keeps a new one; files that are not kept messages are left alone."""
    kept = tmp_path / "kept"
    kept.mkdir()
    now = time.time()
    stale = kept / "mcp-message-stale.json"
    stale.write_bytes(b"{}")
    os.utime(stale, (now - KEEP_SECONDS - 60,) * 2)
    recent = []
    for index in range(KEEP_FILES + 3):
        path = kept / f"mcp-message-{index:03d}.json"
        path.write_bytes(b"{}")
        os.utime(path, (now - 3600 + index,) * 2)  # older first
        recent.append(path)
    other = kept / "notes.txt"
    other.write_text("mine")
    os.utime(other, (now - KEEP_SECONDS - 60,) * 2)

    big = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "y" * 20_000}]}})
    (line,) = _relayed([big.encode()], 5000, kept)
    left = sorted(p.name for p in kept.iterdir())
    new = [name for name in left if name.startswith("mcp-message-") and name not in {p.name for p in recent}]
    assert len(new) == 1 and (kept / new[0]).read_bytes() == big.encode()
    assert not stale.exists() and other.exists()
    survivors = [p for p in recent if p.exists()]
    assert survivors == recent[-(KEEP_FILES - 1) :]  # with the new one, KEEP_FILES in all
    assert new[0] in json.loads(line)["result"]["content"][0]["text"]
