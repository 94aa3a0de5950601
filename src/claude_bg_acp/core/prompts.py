"""ACP prompt content → the content of a Claude user message, and back for a stored one.

Text stays text. Images go as base64 image blocks. Embedded resources are given to the model
as text wrapped in a tag naming their URI; resource links as a mention of the URI, the way a
user would type ``@file``. Unknown block types are kept as text rather than dropped silently.

A stored user message comes back as near to what the client sent as the stored form tells:
text, images, and embedded text resources (a mention stays the text it became).
"""

from __future__ import annotations

import json
import re
from typing import Any

_CONTEXT = re.compile(r'<context ref="([^"]*)">\n(.*)\n</context>', re.DOTALL)


def to_claude_content(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_convert(block) for block in blocks]


def _convert(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image" and block.get("data"):
        source = {"type": "base64", "media_type": block.get("mimeType", "image/png"), "data": block["data"]}
        return {"type": "image", "source": source}
    if kind == "resource_link":
        return {"type": "text", "text": f"@{block.get('uri', '')}"}
    if kind == "resource":
        return _resource(block.get("resource") or {})
    return {"type": "text", "text": json.dumps(block)}


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
            context = _CONTEXT.fullmatch(block["text"])
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
