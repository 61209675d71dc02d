"""A fast local HTTP receiver for `manage.py bench_executor` (not Django: its own process).

Answers every request 200 "ok" and remembers each `Idempotency-Key` with its
arrival time and `X-Scheduled-At`. `GET /__report` returns them as JSON.
Run: `python -m bench.receiver --port 0`; the first line on
stdout is the port it listens on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from aiohttp import web

REPORT_PATH = "/__report"


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, float, str]] = []

    async def handle(self, request: web.BaseRequest) -> web.Response:
        if request.path == REPORT_PATH:
            return web.Response(text=json.dumps(self.seen), content_type="application/json")
        self.seen.append(
            (request.headers.get("Idempotency-Key", ""), time.time(), request.headers.get("X-Scheduled-At", ""))
        )
        if request.can_read_body:
            await request.read()
        return web.Response(text="ok")


async def serve(port: int) -> None:
    recorder = Recorder()
    server = web.Server(recorder.handle, access_log=None)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(server, "127.0.0.1", port, backlog=4096)
    print(listener.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()  # until the bench kills us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
