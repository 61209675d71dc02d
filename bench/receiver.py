"""The benchmarks' HTTP receiver: a bare asyncio protocol, so it is never the bottleneck.

It answers every request `200 ok` (HTTP/1.1, keep-alive) and records, per
request, its arrival time (`time.time()`), `Idempotency-Key`, `X-Scheduled-At`
and `X-Bench-Task`. `GET /__count` answers the number recorded, `GET /__report`
all of them as JSON lists. No framework: parsing only the request line, the
headers it records and `Content-Length` costs a few microseconds per call,
against ~60 µs for aiohttp's server on the same machine. Chunked bodies are
refused (400, connection closed): no client of the benches sends them.

Run: `python -m bench.receiver --port 0`; the first line on stdout is the port.
`Receiver` does that from a bench, and reads the record back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
MAX_HEAD = 64 * 1024
RECORDED = {b"idempotency-key": 0, b"x-scheduled-at": 1, b"x-bench-task": 2}


class Recorder:
    def __init__(self) -> None:
        # (arrival, idempotency key, scheduled at, bench task)
        self.seen: list[tuple[float, str, str, str]] = []

    def json_answer(self, value: object) -> bytes:
        body = json.dumps(value).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n"
        return head.encode() + body


class ReceiverProtocol(asyncio.Protocol):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.buffer = b""
        self.skip = 0  # body bytes of the current request still to discard
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport (uvloop's is no subclass)

    def data_received(self, data: bytes) -> None:
        arrived = time.time()
        buffer = self.buffer + data if self.buffer else data
        answers: list[bytes] = []
        while True:
            if self.skip:
                taken = min(self.skip, len(buffer))
                self.skip -= taken
                buffer = buffer[taken:]
                if self.skip:
                    break
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    self._refuse(answers)
                    return
                break
            head, buffer = buffer[:end], buffer[end + 4 :]
            answer = self._answer(head, arrived)
            if answer is None:
                self._refuse(answers)
                return
            answers.append(answer)
        self.buffer = buffer
        if answers and self.transport is not None:
            self.transport.write(b"".join(answers))

    def _answer(self, head: bytes, arrived: float) -> bytes | None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3:
            return None
        path = parts[1]
        values = ["", "", ""]
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                return None
            else:
                slot = RECORDED.get(name)
                if slot is not None:
                    values[slot] = value.strip().decode("latin-1")
        self.skip = length
        if path == b"/__count":
            return self.recorder.json_answer(len(self.recorder.seen))
        if path == b"/__report":
            return self.recorder.json_answer(self.recorder.seen)
        self.recorder.seen.append((arrived, values[0], values[1], values[2]))
        return OK

    def _refuse(self, answers: list[bytes]) -> None:
        if self.transport is not None:
            self.transport.write(b"".join(answers) + BAD)
            self.transport.close()


class Receiver:
    """This receiver as a child process of a bench (its log `<log_dir>/receiver-<name>.log`), and its record."""

    def __init__(self, log_dir: Path, name: str) -> None:
        from bench.procs import ROOT, Child  # the bench's side only: the server itself imports nothing of the apps

        self.child = Child(
            f"receiver-{name}",
            [sys.executable, "-u", "-m", "bench.receiver", "--port", "0"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            log_dir=log_dir,
        )
        deadline = time.monotonic() + 30
        while not self.child.log().strip():
            if time.monotonic() > deadline or self.child.exited():
                raise RuntimeError(f"the receiver did not start: {self.child.log()}")
            time.sleep(0.02)
        self.port = int(self.child.log().split()[0])
        self.url = f"http://127.0.0.1:{self.port}/hook"

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=60) as answer:
            return json.loads(answer.read())

    def count(self) -> int:
        return int(self._get("/__count"))

    def report(self) -> list[tuple[float, str, str, str]]:
        """(arrival, Idempotency-Key, X-Scheduled-At, X-Bench-Task) of every call so far."""
        return [tuple(row) for row in self._get("/__report")]

    def wait_for(self, calls: int, *, timeout: float, alive: Sequence[Any] = ()) -> bool:
        """Until `calls` calls arrived (True) or `timeout` passed (False); raise when a child in `alive` exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count() >= calls:
                return True
            for child in alive:
                if child.exited():
                    raise RuntimeError(f"{child.name} exited early; see {child.log_path}")
            time.sleep(0.2)
        return False

    def stop(self) -> None:
        self.child.stop(5)


async def serve(host: str, port: int) -> None:
    recorder = Recorder()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: ReceiverProtocol(recorder), host, port, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()  # until the bench stops us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    try:
        import uvloop  # optional (requirements-bench.txt): a cheaper loop keeps the receiver off the critical path

        factory = uvloop.new_event_loop
    except ImportError:
        pass
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(serve(args.host, args.port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
