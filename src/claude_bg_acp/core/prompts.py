"""ACP prompt content → the content of a Claude user message, and back for a stored one.

Text stays text. Images go as base64 image blocks. Embedded resources are given to the model
as text wrapped in a tag naming their URI; resource links as a mention of the URI, the way a
user would type ``@file``. Anything else (audio, which we do not advertise, or a block type we
do not know) is refused, naming the block, rather than reaching the model as text.

A stored user message comes back as near to what the client sent as the stored form tells:
text, images, and embedded text resources (a mention stays the text it became).
"""

from __future__ import annotations

from typing import Any

from claude_bg_acp.claude.prompt_text import CONTEXT
from claude_bg_acp.core.errors import Refusal, Refused


def to_claude_content(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Refuses the first block we do not take."""
    return [_convert(index, block) for index, block in enumerate(blocks)]


def _convert(index: int, block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image" and isinstance(block.get("data"), str) and block["data"]:
        source = {"type": "base64", "media_type": block.get("mimeType", "image/png"), "data": block["data"]}
        return {"type": "image", "source": source}
    if kind == "resource_link":
        return {"type": "text", "text": f"@{block.get('uri', '')}"}
    if kind == "resource":
        return _resource(block.get("resource") or {})
    raise Refused(Refusal.INVALID, _refusal(kind), f"prompt[{index}]")


def _refusal(kind: Any) -> str:
    if kind == "image":
        return "an image block needs its base64 data"
    if kind == "audio":
        return "audio content is not supported (promptCapabilities.audio is not advertised)"
    return f"content blocks of type {kind!r} are not supported"


def _resource(resource: dict[str, Any]) -> dict[str, Any]:
    uri = resource.get("uri", "")
    if "text" in resource:
        return {"type": "text", "text": f'<context ref="{uri}">\n{resource["text"]}\n</context>'}
    return {"type": "text", "text": f"@{uri}"}


def from_claude_content(content: str | list[Any]) -> list[dict[str, Any]]:
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content
    converted: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            context = CONTEXT.fullmatch(block["text"])
            if context:
                converted.append({"type": "resource", "resource": {"uri": context[1], "text": context[2]}})
            else:
                converted.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image" and (block.get("source") or {}).get("type") == "base64":
            source = block["source"]
            converted.append(
                {"type": "image", "data": source.get("data", ""), "mimeType": source.get("media_type")}
            )
    return converted
