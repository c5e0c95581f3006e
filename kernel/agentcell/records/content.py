"""Content blocks: what messages and tool results hold (text and images), and a tool result's displays.

Apart from ``events.py`` to keep that module within its size; re-exported from there.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ContentBlock", "ImageBlock", "ImageSource", "TextBlock", "ToolDisplay"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Model):
    type: Literal["text"] = "text"
    text: str


class ImageSource(_Model):
    type: Literal["base64"] = "base64"
    media_type: str
    data: str


class ImageBlock(_Model):
    type: Literal["image"] = "image"
    source: ImageSource


ContentBlock: TypeAlias = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


class ToolDisplay(_Model):
    """A richer form of one content block of a tool result, for people: what the python tool's code
    displayed (a DataFrame's HTML table) where the model gets the block itself (its text). Front ends
    sanitise ``data`` like all model-driven content."""

    block: int = Field(ge=0)
    """The index in the result's ``content`` of the block this display stands for."""
    media_type: Literal["text/html", "text/markdown"]
    data: str
