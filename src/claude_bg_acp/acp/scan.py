"""A line the JSON decoder refused for its own limits: whether it is JSON, and its request id.

Python's decoder recurses once per nesting level and gives up near a thousand levels (and at
integers of more than 4,300 digits), so a request whose content nests deeper could not be
answered with its id, and the client's request would wait forever. ``scan`` reads such a line
again without recursion, token by token with a stack of the open arrays and objects, and checks
all of it against JSON's grammar (the language ``json.loads`` takes: ``NaN`` and ``Infinity``
included). Only a line that is JSON from its first byte to its last has an id: the value of the
``id`` member of the top-level object (of the last one, as ``json.loads`` decides), if that
value is a string or an integer. Anything else, a line cut short or one stray byte anywhere,
has none: what the client meant would be a guess, and JSON-RPC answers ``null`` then.

A run of opening or closing brackets is one step, so depth costs little; otherwise the work
grows with the number of tokens, a microsecond or two each (the endpoint decodes long lines in
a worker thread, so that this never holds up the event loop for long).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

RequestId = int | str
INT64 = 2**63
"""A numeric id is an int64 (the schema's); a float beyond it has lost its digits anyway."""

_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|NaN|-?Infinity")
_WORD = re.compile(r"true|false|null")
_OPENS = re.compile(r"\[(?:[ \t\n\r]*\[)*")
_CLOSES = re.compile(r"\](?:[ \t\n\r]*\])*")


class _Expect(Enum):
    VALUE = auto()
    VALUE_OR_CLOSE = auto()  # right after "["
    KEY = auto()
    KEY_OR_CLOSE = auto()  # right after "{"
    COLON = auto()
    NEXT = auto()  # a comma, a closing bracket, or the end of the line


@dataclass(frozen=True)
class Scanned:
    json: bool
    """The whole line is one JSON value."""
    request_id: RequestId | None = None
    """The top-level object's ``id``, when it is a string or an integer."""


NOT_JSON = Scanned(False)


def scan(text: str) -> Scanned:
    stack: list[str] = []  # "[" or "{" for each array or object open around the position
    expect = _Expect.VALUE
    key: str | None = None  # the top-level object's member being read
    request_id: RequestId | None = None
    position = _skip(text, 0)
    while position < len(text):
        char = text[position]
        top_member = len(stack) == 1 and stack[0] == "{"
        if expect is _Expect.NEXT:
            if not stack:
                return NOT_JSON  # something after the value
            if char == ",":
                position += 1
                expect = _Expect.KEY if stack[-1] == "{" else _Expect.VALUE
            elif char == "}" and stack[-1] == "{":
                stack.pop()
                position += 1
            elif char == "]" and stack[-1] == "[":
                position = _close_arrays(text, position, stack)
                if position < 0:
                    return NOT_JSON
            else:
                return NOT_JSON
        elif expect is _Expect.COLON:
            if char != ":":
                return NOT_JSON
            position += 1
            expect = _Expect.VALUE
        elif expect in (_Expect.KEY, _Expect.KEY_OR_CLOSE):
            if char == "}" and expect is _Expect.KEY_OR_CLOSE:
                stack.pop()
                position += 1
                expect = _Expect.NEXT
            else:
                name = _STRING.match(text, position)
                if name is None:
                    return NOT_JSON
                position = name.end()
                expect = _Expect.COLON
                if top_member:
                    key = json.loads(name.group())
                    if key == "id":
                        request_id = None  # a later id replaces an earlier one
        elif char == "]" and expect is _Expect.VALUE_OR_CLOSE:
            position = _close_arrays(text, position, stack)
            if position < 0:
                return NOT_JSON
            expect = _Expect.NEXT
        elif char == "[":
            opens = _OPENS.match(text, position)
            assert opens is not None
            stack.extend("[" * opens.group().count("["))
            position = opens.end()
            expect = _Expect.VALUE_OR_CLOSE
        elif char == "{":
            stack.append("{")
            position += 1
            expect = _Expect.KEY_OR_CLOSE
        else:
            token = (
                _STRING.match(text, position) or _NUMBER.match(text, position) or _WORD.match(text, position)
            )
            if token is None:
                return NOT_JSON
            if top_member and key == "id":
                request_id = _request_id(token.group())
            position = token.end()
            expect = _Expect.NEXT
        position = _skip(text, position)
    if stack or expect is not _Expect.NEXT:
        return NOT_JSON  # cut short
    return Scanned(True, request_id)


def _skip(text: str, position: int) -> int:
    return _SPACE.match(text, position).end()  # type: ignore[union-attr]


def _close_arrays(text: str, position: int, stack: list[str]) -> int:
    """Close the run of ``]`` at ``position``; where it ends, or -1 if it closes no array."""
    closes = _CLOSES.match(text, position)
    assert closes is not None
    count = closes.group().count("]")
    if count > len(stack) or any(opened != "[" for opened in stack[-count:]):
        return -1
    del stack[-count:]
    return closes.end()


def request_id_of(value: Any) -> RequestId | None:
    """The id a message carries, as its answer names it: a string, or an integer. A number
    without a fraction (``1.0``, ``1e3``) is the integer it equals, as JSON has it; anything
    else (a fraction, a boolean, null) is no id."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < INT64:
        return int(value)
    return None


def _request_id(token: str) -> RequestId | None:
    if token.startswith('"'):
        value: str = json.loads(token)
        return value
    if _INTEGER.fullmatch(token) is None:
        try:
            return request_id_of(float(token))  # an exponent, a fraction
        except ValueError:
            return None  # true, false or null: no id
    try:
        return int(token)
    except ValueError:
        return None  # more digits than Python converts
