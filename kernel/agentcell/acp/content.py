"""An ACP prompt as the content of an agentcell user message, and the errors in between.

Text and images pass as they are; an embedded text resource (a file the editor attached) becomes text
that names its URI; a resource link becomes a line naming it (the file tools can read it); an embedded
image blob becomes an image. Audio is not supported (``promptCapabilities.audio`` is false).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from acp import RequestError

from ..errors import AgentCellError, NotFoundError
from ..events import ContentBlock, ImageBlock, ImageSource, TextBlock

__all__ = ["PromptBlock", "invalid_params", "leading_text", "rpc_error", "to_blocks"]

PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def invalid_params(message: str) -> RequestError:
    """-32602 with a message that says what is wrong and what to send instead."""
    return RequestError(-32602, message)


def rpc_error(exc: AgentCellError) -> RequestError:
    """An engine error as the JSON-RPC error a client shows: not found (-32002), else invalid params."""
    if isinstance(exc, NotFoundError):
        return RequestError(-32002, str(exc))
    return invalid_params(str(exc))


def _unsupported(message: str) -> NoReturn:
    raise invalid_params(message)


def _image(mime_type: str, data: str) -> ImageBlock:
    if mime_type not in _IMAGE_TYPES:
        _unsupported(f"images of type {mime_type} are not supported; send PNG, JPEG, GIF or WebP")
    return ImageBlock(source=ImageSource(media_type=mime_type, data=data))


def to_blocks(prompt: Sequence[PromptBlock]) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    for block in prompt:
        match block:
            case TextContentBlock():
                if block.text:
                    blocks.append(TextBlock(text=block.text))
            case ImageContentBlock():
                blocks.append(_image(block.mime_type, block.data))
            case ResourceContentBlock():
                label = block.title or block.name
                blocks.append(TextBlock(text=f"[Attached: {label}]({block.uri})"))
            case EmbeddedResourceContentBlock():
                resource = block.resource
                if isinstance(resource, TextResourceContents):
                    text = f'<resource uri="{resource.uri}">\n{resource.text}\n</resource>'
                    blocks.append(TextBlock(text=text))
                elif isinstance(resource, BlobResourceContents) and (resource.mime_type or "") in _IMAGE_TYPES:
                    blocks.append(_image(resource.mime_type or "", resource.blob))
                else:
                    kind = getattr(resource, "mime_type", None) or "unknown type"
                    _unsupported(f"the embedded resource {resource.uri} ({kind}) is binary; attach text or an image")
            case AudioContentBlock():
                _unsupported("audio prompts are not supported (promptCapabilities.audio is false); send text")
    if not any(isinstance(b, ImageBlock) or b.text.strip() for b in blocks):
        _unsupported("the prompt is empty; write what you want the agent to do")
    return blocks


def leading_text(prompt: Sequence[PromptBlock]) -> str:
    """The prompt's text when it is text only (how a slash command arrives), else ''."""
    if prompt and all(isinstance(b, TextContentBlock) for b in prompt):
        return "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
    return ""
