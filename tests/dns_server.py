"""A real DNS server of the tests' own, on 127.0.0.1 (UDP, a free port), for the c-ares resolvers.

`names` maps a name to its addresses (A and AAAA answered from them); a name under `.hang.test`
is never answered (a lookup of it can only time out); any other name is NXDOMAIN. Every
question is recorded in `questions` as (name, type). Point a resolver at `nameserver`.
"""

from __future__ import annotations

import ipaddress
import socket
import threading

from dnslib import AAAA, QTYPE, RCODE, RR, A, DNSRecord

HANGING_SUFFIX = ".hang.test"


class DnsServer:
    def __init__(self, names: dict[str, list[str]] | None = None) -> None:
        self.names = dict(names or {})
        self.questions: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.nameserver = f"127.0.0.1:{self.port}"
        self._sock.settimeout(0.05)  # the serving loop sees `_stopped` this often
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="test-dns", daemon=True)

    def __enter__(self) -> DnsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def asked(self, name: str) -> int:
        """How many questions (A and AAAA each count) named `name`."""
        with self._lock:
            return sum(1 for asked, _ in self.questions if asked == name)

    def asked_under(self, suffix: str) -> set[str]:
        """The distinct names asked that end with `suffix`."""
        with self._lock:
            return {asked for asked, _ in self.questions if asked.endswith(suffix)}

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                query = DNSRecord.parse(data)
            except Exception:  # a malformed datagram is dropped, as a server would
                continue
            name = str(query.q.qname).rstrip(".").lower()
            with self._lock:
                self.questions.append((name, QTYPE[query.q.qtype]))
            if name.endswith(HANGING_SUFFIX):
                continue  # never answered
            reply = query.reply()
            if name in self.names:
                for address in self.names[name]:
                    version = ipaddress.ip_address(address).version
                    if version == 4 and query.q.qtype == QTYPE.A:
                        reply.add_answer(RR(query.q.qname, QTYPE.A, rdata=A(address), ttl=0))
                    elif version == 6 and query.q.qtype == QTYPE.AAAA:
                        reply.add_answer(RR(query.q.qname, QTYPE.AAAA, rdata=AAAA(address), ttl=0))
            else:
                reply.header.rcode = RCODE.NXDOMAIN
            try:
                self._sock.sendto(reply.pack(), peer)
            except OSError:
                return
