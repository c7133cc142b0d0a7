"""An OpenAI-compatible chat server that answers every request at once with the same reply, on
asyncio streams: what a client's own cost is measured against (it spends a few microseconds a
request, so the client, not the server, sets the pace). Loopback only.

Run it as a process (it prints its URL, then serves until killed)::

    python -m tmas.testing.instant_server [--port 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json

REPLY = json.dumps(
    {
        "id": "instant",
        "object": "chat.completion",
        "model": "instant",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "So \\boxed{18}"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
    }
).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(REPLY)}\r\n\r\n".encode()
    + REPLY
)


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Serve one kept-alive connection: read each request's head and body, send the reply."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            writer.write(RESPONSE)
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(port: int, ready: asyncio.Future[int] | None = None) -> None:
    """Listen on loopback ``port`` (0: any free one) until cancelled; ``ready`` gets the port.

    Example:
        >>> async def once():
        ...     ready = asyncio.get_running_loop().create_future()
        ...     task = asyncio.create_task(serve(0, ready))
        ...     port = await ready
        ...     reader, writer = await asyncio.open_connection("127.0.0.1", port)
        ...     writer.write(b"POST /v1 HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}")
        ...     status = await reader.readline()
        ...     writer.close()
        ...     await writer.wait_closed()
        ...     await asyncio.sleep(0.01)  # the server sees the end of the connection
        ...     task.cancel()
        ...     return status
        >>> asyncio.run(once())
        b'HTTP/1.1 200 OK\\r\\n'
    """
    server = await asyncio.start_server(answer, "127.0.0.1", port, backlog=4096)
    if ready is not None:
        ready.set_result(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    """Serve until killed, printing the base URL first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)

    async def run() -> None:
        ready = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(args.port, ready))
        print(f"http://127.0.0.1:{await ready}/v1", flush=True)
        await task

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
