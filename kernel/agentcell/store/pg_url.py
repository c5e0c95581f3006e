"""PostgreSQL URLs and connections: telling a URL from a path, keeping its password out of everything shown,
the connection settings agentcell adds, and which failures are worth retrying.

The URL may carry a password (``postgresql://user:secret@host/db``, or ``?password=secret``). It is used to
connect and for nothing else: what the store shows (its ``location``, error messages) is the URL without
the password, and every message that comes back from the driver is scrubbed of it before it is raised.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "conninfo",
    "is_postgres_url",
    "public_url",
    "scrub",
    "scrubber",
    "transient",
    "url_fingerprint",
]

DEFAULT_CONNECT_TIMEOUT = 10
"""Seconds a connection attempt may take when the URL does not say (libpq's default is to wait forever)."""

_SCHEMES = ("postgresql://", "postgres://")
_SECRET_PARAMS = frozenset({"password", "sslpassword", "passfile"})


def is_postgres_url(target: str) -> bool:
    return target.strip().lower().startswith(_SCHEMES)


def _split(url: str) -> tuple[str, str, str, str]:
    """(scheme, userinfo, hosts, rest): by hand, since a libpq URL may name several ``host:port`` pairs."""
    scheme, _, tail = url.strip().partition("://")
    cut = min((i for i in (tail.find("/"), tail.find("?")) if i >= 0), default=len(tail))
    netloc, rest = tail[:cut], tail[cut:]
    userinfo, _, hosts = netloc.rpartition("@")
    return scheme, userinfo, hosts, rest


def _secrets(url: str) -> list[str]:
    """The password as it may appear: raw and percent-decoded, in the user part or the query string."""
    _, userinfo, _, rest = _split(url)
    found = [userinfo.partition(":")[2]]
    for key, value in parse_qsl(rest.partition("?")[2], keep_blank_values=True):
        if key.lower() in _SECRET_PARAMS:
            found.append(value)
    found += [unquote(s) for s in found]
    return sorted({s for s in found if s}, key=len, reverse=True)


def public_url(url: str) -> str:
    """The URL without a password anywhere in it, for showing."""
    scheme, userinfo, hosts, rest = _split(url)
    user = userinfo.partition(":")[0]
    path, _, query = rest.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k.lower() not in _SECRET_PARAMS]
    return f"{scheme}://{user + '@' if user else ''}{hosts}{path}{'?' + urlencode(kept, safe='/') if kept else ''}"


def scrubber(url: str) -> tuple[str, ...]:
    """The strings :func:`scrub` removes from messages about ``url``."""
    return tuple(_secrets(url))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def url_fingerprint(url: str) -> str:
    """A short name for the database, the same for every kernel that uses it (for local cache folders)."""
    return hashlib.sha256(public_url(url).encode()).hexdigest()[:16]


def transient(exc: psycopg.Error) -> bool:
    """The connection failed or the server is shutting down or starting: worth trying again."""
    import psycopg

    state = exc.sqlstate
    return isinstance(exc, psycopg.OperationalError) and (
        state is None or state.startswith("08") or (state.startswith("57P") and state != "57P04")
    )


def conninfo(url: str) -> str:
    """The URL with agentcell's defaults for what it leaves unsaid (raises psycopg.ProgrammingError)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    extra: dict[str, Any] = {}
    if "connect_timeout" not in params:
        extra["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
    if "application_name" not in params:
        extra["application_name"] = "agentcell"
    return make_conninfo(url, **extra)
