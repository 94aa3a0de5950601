"""ACP prompt content → the content of a Claude user message.

Text stays text. Images go as base64 image blocks. Embedded resources are given to the model
as text wrapped in a tag naming their URI; resource links as a mention of the URI, the way a
user would type ``@file``. Unknown block types are kept as text rather than dropped silently.
"""

from __future__ import annotations

import json
from typing import Any


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
