"""What every record shares: the UNSET marker of partial updates, UTC time, and the permission presets."""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Literal, get_args

__all__ = ["CACHE_CHOICES", "CACHE_OFF_ALIASES", "PERMISSION_PRESETS", "UNSET", "PermissionPreset", "Unset", "utc_now"]


class Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset.UNSET
"""Marks an update argument as omitted (keep the current value), as opposed to ``None`` (clear it)."""

PermissionPreset = Literal["read-only", "workspace-write", "danger-full-access"]
"""What the session's tools may do without asking (see ``tools/permissions.py`` for the table)."""
PERMISSION_PRESETS: tuple[PermissionPreset, ...] = get_args(PermissionPreset)

CACHE_CHOICES = ("5m", "1h", "off")
"""The ``cache`` option of a model's ``extra``: prompt-cache entries of 5 minutes (the default, also when
the option is absent) or an hour, or no prompt caching."""
CACHE_OFF_ALIASES: tuple[object, ...] = ("off", False, None, "")
"""Values of the ``cache`` option that turn caching off."""


def utc_now() -> datetime:
    return datetime.now(UTC)
