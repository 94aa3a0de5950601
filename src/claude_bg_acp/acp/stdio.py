"""The stdio edge: JSON-RPC 2.0, one JSON object per line, on stdin and stdout.

It knows nothing of Claude or of ACP methods. Each incoming request runs in its own task, so a
long ``session/prompt`` never blocks a ``session/cancel``; notifications are dispatched in
arrival order. Writes never wait (asyncio buffers what the pipe cannot take yet), so lines never
interleave; each ``send`` returns once the pipe has room for more. A handler may ask for something
to run right after its result is written (``after_reply``): what must reach the client after the
answer, not before.
Requests we send (``session/request_permission``) wait for the response with the same id; the
first response decides, and any later one with that id is ignored (and logged). A
line that is not JSON, not UTF-8, nested too deeply, or larger than ``max_line`` gets an error
answer (with the request's id whenever it can be read: ``jsonrpc.decode``) and is otherwise
dropped; the endpoint keeps reading, and no exception raised by one message (decoding it,
handling it, encoding its answer) ends it. A long line is decoded in a worker thread, so that
reading one the decoder refuses token by token (``acp.scan``) leaves the event loop free.

Serving ends when the client closes our input, when our output breaks (the client can no longer
hear us, which is as final), or on ``hang_up`` (a signal): all three end the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import selectors
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from claude_bg_acp.acp import errors, jsonrpc
from claude_bg_acp.acp.jsonrpc import MalformedMessage, RpcError
from claude_bg_acp.platform import host

log = logging.getLogger(__name__)

MAX_LINE = 64 * 1024 * 1024
THREAD_LINE = 64 * 1024
"""Bytes from which a line is decoded in a worker thread."""
READ_SIZE = 256 * 1024
PIPE_SIZE = 1024 * 1024


class ByteSource(Protocol):
    async def read(self, n: int) -> bytes: ...


class ByteSink(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


RequestHandler = Callable[[str, Any, jsonrpc.RequestId], Awaitable[Any]]
"""Called with the method, the params and the request's id (which ``$/cancel_request`` names)."""
NotificationHandler = Callable[[str, Any], Awaitable[None]]


@dataclass
class _Pending:
    done: anyio.Event = field(default_factory=anyio.Event)
    response: jsonrpc.Response | None = None


class Endpoint:
    """Serves one connection until the client closes its end."""

    def __init__(self, source: ByteSource, sink: ByteSink, max_line: int = MAX_LINE) -> None:
        self._source = source
        self._sink = sink
        self._max_line = max_line
        self._ids = count(0)
        self._pending: dict[jsonrpc.RequestId, _Pending] = {}
        self._after_reply: dict[jsonrpc.RequestId, Callable[[], None]] = {}
        self._closed = False
        self._broken = False
        self._batch: list[bytes] | None = None
        self._reading = anyio.CancelScope()

    async def serve(
        self, tg: TaskGroup, on_request: RequestHandler, on_notification: NotificationHandler
    ) -> None:
        """Read and dispatch until end of input (or ``hang_up``); handlers run in ``tg``."""
        with self._reading:
            async for line in self._lines():
                await self._dispatch(tg, line, on_request, on_notification)
        self._closed = True
        for pending in self._pending.values():
            pending.done.set()

    def hang_up(self) -> None:
        """Stop reading as if the client had closed our input: ``serve`` returns."""
        self._reading.cancel()

    async def notify(self, method: str, params: Any) -> None:
        await self._send(jsonrpc.notification_frame(method, params))

    def after_reply(self, request_id: jsonrpc.RequestId, then: Callable[[], None]) -> None:
        """Call ``then`` once the result of the request being handled is written (not after an
        error answer)."""
        self._after_reply[request_id] = then

    def new_request_id(self) -> int:
        return next(self._ids)

    async def request(self, method: str, params: Any, request_id: int | None = None) -> Any:
        """Send a request and wait for its result; an error answer raises ``RpcError``."""
        if self._closed:
            raise errors.disconnected()
        if request_id is None:
            request_id = self.new_request_id()
        pending = self._pending[request_id] = _Pending()
        try:
            await self._send(jsonrpc.request_frame(request_id, method, params))
            await pending.done.wait()
        finally:
            del self._pending[request_id]
        response = pending.response
        if response is None:
            raise errors.disconnected()
        if response.error is not None:
            raise errors.client_error(response.error)
        return response.result

    async def _send(self, frame: dict[str, Any]) -> None:
        await self.send_line(jsonrpc.encode(frame))

    async def send_line(self, data: bytes) -> None:
        """Write messages that are already encoded (JSON objects, each with its newline).

        What is sent during one turn of the event loop goes out in one write (sessions relaying
        output at the same tick, say): a write per message would cost more than the rest of
        relaying it. The write itself never waits, so lines keep their order without a lock;
        returns once the pipe has room for more (or the client is gone).
        """
        batch = self._batch
        owner = batch is None
        if batch is None:
            batch = self._batch = [data]
        else:
            batch.append(data)
        try:
            # Everyone yields once: the others sending in this turn join the batch, and a sender
            # that always has more cannot keep the loop (and so the batch's owner) from running.
            await asyncio.sleep(0)
        finally:
            if owner:
                self._batch = None
                self._write(b"".join(batch))  # even if cancelled: joined lines are not lost
        await self._drained()

    def _write(self, data: bytes) -> None:
        if self._broken:
            return
        try:
            self._sink.write(data)
        except (ConnectionError, OSError) as exc:
            self._gone(exc)

    async def _drained(self) -> None:
        if self._broken:
            return
        try:
            await self._sink.drain()
        except (ConnectionError, OSError) as exc:
            self._gone(exc)

    def _gone(self, exc: Exception) -> None:
        # The client stopped reading; what it misses it can no longer use.
        if not self._broken:
            self._broken = True
            log.warning("stdout is gone (%s); closing as if stdin had ended", exc)
            self.hang_up()

    async def _lines(self) -> Any:
        buffer = bytearray()
        oversized = False
        while chunk := await self._source.read(READ_SIZE):
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                if oversized:
                    oversized = False
                else:
                    buffer += chunk[start:end]
                    yield bytes(buffer)
                buffer.clear()
                start = end + 1
            if not oversized:
                buffer += chunk[start:]
            if len(buffer) > self._max_line:
                buffer.clear()
                oversized = True
                await self._reply_error(None, errors.oversized(self._max_line))
        if buffer.strip() and not oversized:
            yield bytes(buffer)

    async def _dispatch(
        self,
        tg: TaskGroup,
        line: bytes,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
    ) -> None:
        if not line.strip():
            return
        try:
            if len(line) < THREAD_LINE:
                payload = jsonrpc.decode(line)
            else:
                payload = await anyio.to_thread.run_sync(jsonrpc.decode, line)
            message = jsonrpc.classify(payload)
        except MalformedMessage as exc:
            log.warning("rejected input: %s", exc.message)
            await self._reply_error(exc.request_id, exc)
            return
        if isinstance(message, jsonrpc.Response):
            self._resolve(message)
        elif isinstance(message, jsonrpc.Request):
            tg.start_soon(self._answer, message, on_request)
            # Let the handler run up to its first wait before the next message is read, so that
            # what it registers (a prompt, say) is there for a notification right behind it.
            await anyio.lowlevel.checkpoint()
        else:
            await self._run_notification(message, on_notification)

    def _resolve(self, response: jsonrpc.Response) -> None:
        pending = self._pending.get(response.id) if response.id is not None else None
        if pending is None:
            log.warning("response to unknown request id %r ignored", response.id)
            return
        if pending.response is not None:
            # The first answer decides: a second one ("reject" then "allow" back to back) would
            # otherwise replace it before the request's task wakes up to read it.
            log.warning("second response to request id %r ignored", response.id)
            return
        pending.response = response
        pending.done.set()

    async def _answer(self, request: jsonrpc.Request, on_request: RequestHandler) -> None:
        try:
            result = await on_request(request.method, request.params, request.id)
            answer = jsonrpc.encode(jsonrpc.result_frame(request.id, result))
        except RpcError as exc:
            await self._reply_error(request.id, exc)
        except Exception:
            log.exception("internal error handling %s", request.method)
            await self._reply_error(request.id, errors.internal_error())
        else:
            await self.send_line(answer)
            then = self._after_reply.pop(request.id, None)
            if then is not None:
                then()
        finally:
            self._after_reply.pop(request.id, None)

    async def _run_notification(
        self, notification: jsonrpc.Notification, on_notification: NotificationHandler
    ) -> None:
        try:
            await on_notification(notification.method, notification.params)
        except RpcError as exc:
            log.warning("notification %s ignored: %s", notification.method, exc.message)
        except Exception:
            # A notification has no answer; its failure must not end the connection.
            log.exception("error handling notification %s", notification.method)

    async def _reply_error(self, request_id: jsonrpc.RequestId | None, error: RpcError) -> None:
        await self._send(jsonrpc.error_frame(request_id, error))


class _FdSink:
    """A blocking writer for a stdout that is a regular file (no pipe transport possible)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None


class _FdSource:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int) -> bytes:
        return await anyio.to_thread.run_sync(os.read, self._fd, n)


class _ThreadSink:
    """Writes in a worker thread, in order; ``write`` only queues (Windows: see ``stdio_streams``)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queued = bytearray()
        self._writing = anyio.Lock()

    def write(self, data: bytes) -> None:
        self._queued += data

    async def drain(self) -> None:
        async with self._writing:
            while self._queued:
                data = bytes(self._queued)
                self._queued.clear()
                await anyio.to_thread.run_sync(_FdSink(self._fd).write, data)


async def stdio_streams(in_fd: int, out_fd: int) -> tuple[ByteSource, ByteSink]:
    """Non-blocking streams over the given descriptors (pipes, sockets or ttys; files, and an
    input the event loop cannot wait on such as ``/dev/null``, fall back).

    On Windows the event loop cannot wait on the anonymous pipes an editor gives (the proactor
    loop takes no stdin or stdout, bpo-26832): a worker thread reads, and another writes."""
    if not host().posix:
        return _FdSource(in_fd), _ThreadSink(out_fd)
    loop = asyncio.get_running_loop()
    source: ByteSource = _FdSource(in_fd)
    sink: ByteSink
    if _pollable(in_fd):
        with contextlib.suppress(ValueError):  # a file that kqueue watches but is no pipe
            reader = asyncio.StreamReader(limit=READ_SIZE)
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader),
                os.fdopen(in_fd, "rb", buffering=0, closefd=False),
            )
            source = reader
    _widen_pipe(out_fd)
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0, closefd=False)
        )
        sink = asyncio.StreamWriter(transport, protocol, None, loop)
    except ValueError:
        sink = _FdSink(out_fd)
    return source, sink


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait for ``fd`` to be readable. epoll refuses ``/dev/null``
    (which asyncio's pipe transport takes, and then never reads: an editor or launcher that gives
    the agent no input would have it wait for ever instead of seeing the end of its input)."""
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


def _widen_pipe(fd: int) -> None:
    """Ask Linux for a 1 MiB pipe buffer: a message of terminal output then goes out in one
    write instead of many partial ones (each of which moves the rest of asyncio's buffer)."""
    if not host().linux:
        return
    import fcntl  # POSIX only

    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


def protect_stdout() -> int:
    """Keep fd 1 for the protocol alone: return a private copy and point fd 1 at stderr.

    Anything else that writes to stdout (a library's print, an inherited descriptor in a child
    process) then lands on stderr instead of corrupting the JSON-RPC stream.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd
