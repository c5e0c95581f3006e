"""Turns pydantic validation failures into the InvalidInputError users see."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InvalidInputError

__all__ = ["METADATA_LIMITS", "check_metadata", "validated"]

M = TypeVar("M", bound=BaseModel)

METADATA_LIMITS = (16, 64, 512)
"""At most 16 keys, keys up to 64 characters, values up to 512 characters."""


def validated(model: type[M], data: dict[str, Any], what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in exc.errors())
        raise InvalidInputError(f"invalid {what}: {problems}") from None


def check_metadata(metadata: object, what: str) -> dict[str, str]:
    max_keys, max_key, max_value = METADATA_LIMITS
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"{what} metadata must be a dict of strings to strings")
    if len(metadata) > max_keys:
        raise InvalidInputError(f"{what} metadata has {len(metadata)} keys; at most {max_keys} are allowed")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInputError(f"{what} metadata must map strings to strings; {key!r} does not")
        if not 0 < len(key) <= max_key:
            raise InvalidInputError(f"{what} metadata key {key[:80]!r} must be 1 to {max_key} characters")
        if len(value) > max_value:
            raise InvalidInputError(f"{what} metadata value for {key!r} exceeds {max_value} characters")
    return dict(metadata)
