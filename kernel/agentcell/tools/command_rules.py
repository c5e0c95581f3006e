"""What "always" covers for a shell command: that command, each part of it on its own.

``ls`` allowed always must not let ``touch x; cat ~/.ssh/id_rsa`` through. So a command line is cut into
its simple commands at the shell's list and pipe operators (``;``, ``&&``, ``||``, ``|``, ``&``) and at
subshells and command substitutions (``( … )``, ``$( … )``), and each part is one rule: ``bash:$ `` and the
part's words (program, arguments and redirections, quoted back as the shell reads them). A later call runs
unasked only when every one of its parts has a rule; one part answered "always deny" refuses it. A rule is
the exact command, not a prefix: ``rm -rf build`` allowed always does not allow ``rm -rf build ~``.

Text the shell reads in ways this does not follow (several lines, a backquote, a here-document, quotes
that do not close) is one part, the whole text: it is remembered only for that exact text.
"""

from __future__ import annotations

__all__ = ["COMMAND_RULE", "command_parts", "command_rule_keys"]

COMMAND_RULE = "bash:$ "
"""How a command rule's key begins; the rest is the command's own text."""
_SEPARATORS = ";|&"


def command_parts(command: str) -> list[str]:
    """The simple commands of ``command``, each as its own text (a part holding a substitution keeps it
    verbatim, and the substitution's commands are parts too)."""
    text = command.strip()
    if "\n" in text or "`" in text or "<<" in text:
        return [text]
    try:
        parts = _split(text)
    except ValueError:  # quotes or parentheses that do not close
        return [text]
    return list(dict.fromkeys(parts)) or [text]


def command_rule_keys(command: str) -> tuple[str, ...]:
    """The rules an "always" answer about ``command`` makes, one per part."""
    return tuple(COMMAND_RULE + part for part in command_parts(command))


def _split(text: str) -> list[str]:
    parts: list[str] = []
    start = i = 0
    quote = ""

    def flush(end: int) -> None:
        if part := text[start:end].strip():
            parts.append(part)

    while i < len(text):
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1  # the next character is taken as it is
        elif text.startswith("$(", i) or (not quote and c in "<>" and text.startswith("(", i + 1)):
            end = _closing(text, i + 2)  # a command (or process) substitution: its commands are parts too
            parts += _split(text[i + 2 : end])
            i = end
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == "(":  # a subshell: only its commands
            end = _closing(text, i + 1)
            flush(i)
            parts += _split(text[i + 1 : end])
            start = i = end + 1
            continue
        elif c in _SEPARATORS and not _redirection(text, i):
            flush(i)
            while i < len(text) and text[i] in _SEPARATORS:
                i += 1
            start = i
            continue
        i += 1
    if quote:
        raise ValueError("a quote does not close")
    flush(len(text))
    return parts


def _redirection(text: str, i: int) -> bool:
    """Whether the ``&`` at ``i`` belongs to a redirection (``2>&1``, ``&>file``), not a list."""
    return text[i] == "&" and ((i > 0 and text[i - 1] in "<>") or text.startswith(">", i + 1))


def _closing(text: str, i: int) -> int:
    """The index of the ``)`` that closes the parenthesis opened just before ``i``."""
    depth, quote = 1, ""
    while i < len(text):
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("a parenthesis does not close")
