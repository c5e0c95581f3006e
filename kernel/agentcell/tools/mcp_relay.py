"""The stdout of a stdio MCP server, relayed with every message longer than a cap shortened on the way.

The MCP SDK's stdio reader joins each chunk to the unfinished line and splits again, so a message of n
bytes costs O(n²) (a 50 MB tool result took 69 s) and is held whole, several times over, in the kernel. A
stdio server is therefore started through this relay: ``python mcp_relay.py CAP KEEP_DIR NAME -- COMMAND…``.
The server reads the kernel's pipe (its stdin is the relay's) and writes into the relay, which passes lines
of up to ``CAP`` bytes through unchanged. A longer line is copied whole into a file under ``KEEP_DIR`` as it
arrives and forwarded shortened: its JSON strings keep ``CAP`` bytes of content in all, and each string
that was cut ends with a note saying how large the message was and which file holds the whole (the folder
keeps the newest few, see :data:`KEEP_FILES`). Memory and time stay linear in the message and bounded by
the cap.

Stdlib only, and run by path (never ``-m agentcell…``), so that it starts in milliseconds without the
package.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import IO

PLACEHOLDER = b"\\u0000agentcell-cut\\u0000"
"""Where a cut string ends, until the message's size is known and the note replaces it (JSON-escaped NULs
cannot occur in the text of a cut string's kept part, which ends at a character boundary before it)."""
SHORT = 256
"""Strings up to this long are always kept whole: keys, ids, types and MIME types keep the message's shape."""
MAX_KEPT_BYTES = 128 << 20
"""The file that keeps a message whole stops growing here: a server's answer cannot fill the temporary
folder (an HTTP server's is not read past it either, see ``mcp_http.py``)."""
KEEP_FILES = 20
KEEP_BYTES = 512 << 20
KEEP_SECONDS = 7 * 24 * 3600
"""``KEEP_DIR`` is in the temporary folder: before keeping a new message, the kept ones older than a week
go, then the oldest until fewer than :data:`KEEP_FILES` remain and they take at most :data:`KEEP_BYTES`."""
OVERFLOW_FACTOR = 4
"""A shortened message still above this many caps (a huge array of numbers) is replaced by an error."""
_SPECIAL = re.compile(rb'["\\]')
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')
_READ = 1 << 20
_BACKSLASH = 0x5C


class Shortener:
    """Copies a JSON text while keeping at most ``budget`` bytes of string content in total (strings of up
    to :data:`SHORT` bytes are always whole); a cut string ends with :data:`PLACEHOLDER`. Fed in chunks of
    any size; never cuts inside an escape, a surrogate pair or a UTF-8 character."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.out = bytearray()
        self.cut = False
        self._in_string = False
        self._kept = 0  # of the current string
        self._discarding = False
        self._odd_backslashes = False  # a discarded chunk ended inside a run of backslashes of odd length
        self._carry = b""

    def feed(self, data: bytes) -> None:
        if self._carry:
            data, self._carry = self._carry + data, b""
        pos, end = 0, len(data)
        while pos < end:
            if not self._in_string:
                quote = data.find(b'"', pos)
                if quote < 0:
                    self.out += data[pos:]
                    return
                self.out += data[pos : quote + 1]
                pos, self._in_string, self._kept, self._discarding = quote + 1, True, 0, False
            elif self._discarding:
                pos = self._discard(data, pos)
            else:
                pos = self._copy(data, pos)

    def _allowance(self) -> int:
        return max(SHORT - self._kept, self.budget)

    def _take(self, data: bytes, start: int, stop: int) -> None:
        self.out += data[start:stop]
        self._kept += stop - start
        self.budget = max(0, self.budget - (stop - start))

    def _start_discarding(self) -> None:
        self.out += PLACEHOLDER
        self.cut = self._discarding = True
        self._odd_backslashes = False

    def _copy(self, data: bytes, pos: int) -> int:
        special = _SPECIAL.search(data, pos)
        stop = special.start() if special is not None else len(data)
        allowed = self._allowance()
        if stop - pos > allowed:
            cut = pos + allowed
            while cut > pos and data[cut] & 0xC0 == 0x80:  # back to the start of a UTF-8 character
                cut -= 1
            self._take(data, pos, cut)
            self._start_discarding()
            return cut
        self._take(data, pos, stop)
        if special is None:
            return stop
        if data[stop] == ord('"'):
            self.out += b'"'
            self._in_string = False
            return stop + 1
        width = _escape_width(data, stop)
        if width == 0:  # the escape goes on in the next chunk
            self._carry = data[stop:]
            return len(data)
        if width > self._allowance():
            self._start_discarding()
            return stop
        self._take(data, stop, stop + width)
        return stop + width

    def _discard(self, data: bytes, pos: int) -> int:
        """Skip to the string's closing quote: the first one after an even run of backslashes."""
        while True:
            quote = data.find(b'"', pos)
            if quote < 0:
                run = _backslashes_before(data, len(data), pos)
                whole = run == len(data) - pos
                self._odd_backslashes = (self._odd_backslashes if whole else False) ^ bool(run % 2)
                return len(data)
            run = _backslashes_before(data, quote, pos)
            odd = bool(run % 2) ^ (self._odd_backslashes and run == quote - pos)
            self._odd_backslashes = False
            if not odd:
                self.out += b'"'
                self._in_string = False
                return quote + 1
            pos = quote + 1


def _escape_width(data: bytes, at: int) -> int:
    """How many bytes the escape at ``at`` spans (a surrogate pair as one); 0 when ``data`` ends first."""
    if at + 1 >= len(data):
        return 0
    if data[at + 1] != ord("u"):
        return 2
    if at + 6 > len(data):
        return 0
    if data[at + 2 : at + 4].lower() in (b"d8", b"d9", b"da", b"db"):  # a high surrogate: keep its pair
        if at + 12 > len(data):
            return 0
        return 12 if data[at + 6 : at + 8] == b"\\u" else 6
    return 6


def _backslashes_before(data: bytes, index: int, floor: int) -> int:
    count = 0
    while index - count - 1 >= floor and data[index - count - 1] == _BACKSLASH:
        count += 1
    return count


CUT_NOTE = "\n\n[... cut here: the MCP server "
"""How the note a cut string ends with begins."""


def prune(keep_dir: str, *, now: float | None = None) -> None:
    """Make room in ``keep_dir`` for one more kept message (see :data:`KEEP_SECONDS`)."""
    kept: list[tuple[float, int, str]] = []
    try:
        with os.scandir(keep_dir) as entries:
            for entry in entries:
                if entry.name.startswith("mcp-message-") and entry.name.endswith(".json") and entry.is_file():
                    info = entry.stat()
                    kept.append((info.st_mtime, info.st_size, entry.path))
    except OSError:
        return
    kept.sort()  # oldest first
    cutoff = (time.time() if now is None else now) - KEEP_SECONDS
    total = sum(size for _, size, _ in kept)
    for index, (modified, size, path) in enumerate(kept):
        if modified >= cutoff and len(kept) - index < KEEP_FILES and total <= KEEP_BYTES:
            break  # this one and every newer one stay
        with contextlib.suppress(OSError):
            os.remove(path)
        total -= size


def note(name: str, size: int, cap: int, kept: str | None, *, stopped: bool = False) -> str:
    where = f"The whole answer, as JSON-RPC, is kept in {kept}." if kept else "The whole answer was not kept."
    if stopped:
        return (
            f"{CUT_NOTE}{name!r} sent more than {size:,} bytes in one message, over the cap of {cap:,} bytes "
            f"per message (AGENTCELL_MCP_MAX_RESULT_BYTES); agentcell stopped reading it there. "
            + (f"Its first {size:,} bytes are kept in {kept}.]" if kept else "It was not kept.]")
        )
    return (
        f"{CUT_NOTE}{name!r} answered with {size:,} bytes, over the cap of {cap:,} bytes "
        f"per message (AGENTCELL_MCP_MAX_RESULT_BYTES). {where}]"
    )


class LongLine:
    """One line above the cap, as it arrives: kept whole in a file, shortened into memory."""

    def __init__(self, cap: int, keep_dir: str | None) -> None:
        self.cap = cap
        self.size = 0
        self.stopped = False
        """The reader stopped at :data:`MAX_KEPT_BYTES` (an HTTP body): the note says the message was cut."""
        self.head = bytearray()  # enough to find the request's id in
        self.shortener = Shortener(cap)
        self.file: IO[bytes] | None = None
        if keep_dir is not None:
            try:
                os.makedirs(keep_dir, exist_ok=True)
                prune(keep_dir)
                self.file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in finish)
                    "wb", prefix="mcp-message-", suffix=".json", dir=keep_dir, delete=False
                )
            except OSError as exc:
                print(f"agentcell: cannot keep a long MCP message whole: {exc}", file=sys.stderr, flush=True)

    @property
    def full(self) -> bool:
        """As much of the message arrived as is ever kept."""
        return self.size >= MAX_KEPT_BYTES

    def feed(self, data: bytes) -> None:
        if self.stopped:
            return
        self.size += len(data)
        if len(self.head) < 65536:
            self.head += data[: 65536 - len(self.head)]
        if self.file is not None and (room := MAX_KEPT_BYTES - self.file.tell()) > 0:
            self.file.write(data[:room])
        if len(self.shortener.out) <= OVERFLOW_FACTOR * self.cap:
            self.shortener.feed(data)

    def finish(self, name: str) -> bytes:
        kept = None
        if self.file is not None:
            self.file.close()
            kept = self.file.name
            if self.size > MAX_KEPT_BYTES and not self.stopped:
                kept += f" (its first {MAX_KEPT_BYTES:,} bytes)"
        text = note(name, self.size, self.cap, kept, stopped=self.stopped)
        out = bytes(self.shortener.out)
        if len(out) <= OVERFLOW_FACTOR * self.cap and self.shortener.cut and not self.stopped:
            return out.replace(PLACEHOLDER, json.dumps(text)[1:-1].encode())
        found = _ID.search(self.head)
        if found is None:
            print(f"agentcell: dropped an MCP message of {self.size:,} bytes with no id{text}", file=sys.stderr)
            return b""
        # A message read to its end but too dense to shorten, or one never read to its end: an error result.
        failed = "The answer was not read to its end." if self.stopped else "The answer could not be shortened."
        result = {"content": [{"type": "text", "text": failed + text}], "isError": True}
        return b'{"jsonrpc":"2.0","id":' + found.group(1) + b',"result":' + json.dumps(result).encode() + b"}"


class LineCapper:
    """Lines of a byte stream fed in chunks of any size, each one above ``cap`` bytes shortened on the way
    (:class:`LongLine`); shorter lines come out unchanged. With ``prefix`` (an event stream's ``data:``),
    only a long line that starts with it carries a message: the prefix stays and the rest is shortened,
    and any other line that long is dropped."""

    def __init__(self, cap: int, keep_dir: str | None, name: str, prefix: bytes = b"", *, stop: bool = False) -> None:
        self.cap, self.keep_dir, self.name, self.prefix = cap, keep_dir, name, prefix
        self._pending = bytearray()  # the start of a line of at most ``cap`` bytes
        self._long: LongLine | None = None
        self._dropping = False
        self._stop = stop
        self.stopped = False
        """With ``stop``: a line reached :data:`MAX_KEPT_BYTES`; it was ended there, and the reader stops."""

    def feed(self, chunk: bytes) -> bytes:
        """The lines ``chunk`` completes, each with its newline (a message with no id is left out)."""
        out = bytearray()
        pos = 0
        while pos < len(chunk) and not self.stopped:
            newline = chunk.find(b"\n", pos)
            stop = len(chunk) if newline < 0 else newline
            if self._long is not None:
                self._long.feed(chunk[pos:stop])
                if self._stop and self._long.full:
                    # A line that never ends (a hostile server) is not read on: it ends here, cut.
                    self._long.stopped = self.stopped = True
                    line = self._end_line()
                    # Blank line after it: an event stream's event is dispatched on one, and none follows.
                    return bytes(out + line + b"\n\n") if line is not None else bytes(out)
            elif not self._dropping:
                self._pending += chunk[pos:stop]
                if len(self._pending) > self.cap:
                    self._begin_long()
            if newline < 0:
                break
            line = self._end_line()
            if line is not None:
                out += line + b"\n"
            pos = newline + 1
        return bytes(out)

    def finish(self) -> bytes:
        """The last line, when the stream did not end with a newline."""
        return self._end_line() or b""

    def _begin_long(self) -> None:
        head, prefix = bytes(self._pending), self.prefix
        self._pending.clear()
        if not head.startswith(prefix):
            self._dropping = True
            return
        self._long = LongLine(self.cap, self.keep_dir)
        self._long.feed(head[len(prefix) :])

    def _end_line(self) -> bytes | None:
        long, dropping = self._long, self._dropping
        line = bytes(self._pending)
        self._pending.clear()
        self._long, self._dropping = None, False
        if long is not None:
            message = long.finish(self.name)
            return self.prefix + message if message else None
        return None if dropping else line


def relay(source: int, sink: IO[bytes], cap: int, keep_dir: str | None, name: str) -> None:
    """Copy lines from ``source`` to ``sink`` until end of file, shortening those above ``cap`` bytes."""
    lines = LineCapper(cap, keep_dir, name)
    while chunk := os.read(source, _READ):
        if out := lines.feed(chunk):
            sink.write(out)
            sink.flush()
    if rest := lines.finish():
        sink.write(rest)
        sink.flush()


def main(argv: list[str]) -> int:
    cap_text, keep_dir, name, separator, *command = argv
    if separator != "--" or not command:
        print("usage: mcp_relay.py CAP KEEP_DIR NAME -- COMMAND…", file=sys.stderr)
        return 2
    try:
        server = subprocess.Popen(command, stdout=subprocess.PIPE)  # stdin and stderr: the relay's own
    except OSError as exc:
        print(f"cannot start {command[0]!r}: {exc}", file=sys.stderr, flush=True)
        return 127
    assert server.stdout is not None
    try:
        relay(server.stdout.fileno(), sys.stdout.buffer, int(cap_text), keep_dir or None, name)
    except BrokenPipeError:  # the kernel closed the connection
        server.kill()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
