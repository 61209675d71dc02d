"""The egress rule as one object, for create time and dial time alike.

``EgressPolicy`` joins the three parts of the package: what a URL may say
(``urls``), which addresses may be dialled (``networks``) and what the
``EGRESS_ALLOWLIST`` admits besides (``allowlist``). The task API calls
``check_url`` when a task is created or edited; the executor calls
``vet_resolved`` and ``check_destination`` inside its connector, after DNS and
right before ``connect()``. The create-time check alone loses to DNS
rebinding; the dial-time check is the one that holds.

Tenants only ever see ``GENERIC_MESSAGE``: the detail would map our network
for them. The internal ``reason`` is for logs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from outbound.egress.allowlist import Allowlist
from outbound.egress.lookups import LookupUnfinished, NameResolver, lookup_failure
from outbound.egress.networks import IPAddress, embedded_ipv4_of, is_public_address, parse_address
from outbound.egress.url_rules import (
    PORT_MESSAGE,
    ParsedTarget,
    TargetError,
    literal_address,
    name_policy_problem,
    name_syntax_problem,
    parse_task_url,
)

__all__ = [
    "ALLOWED_PORTS",
    "GENERIC_MESSAGE",
    "EgressDenied",
    "EgressPolicy",
    "Resolver",
    "resolve_host",
]

Resolver = Callable[[str, int], list[str]]

GENERIC_MESSAGE = "destination not allowed"
ALLOWED_PORTS = frozenset({80, 443})


class EgressDenied(Exception):
    """A destination is refused.

    ``str()`` is always ``GENERIC_MESSAGE`` so it can reach a tenant as is;
    ``reason`` says why, for logs only (it may contain addresses).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(GENERIC_MESSAGE)
        self.reason = reason


@functools.cache
def _system_resolver() -> NameResolver:
    return NameResolver()  # the system's name servers; built on first use (it starts c-ares' thread)


def resolve_host(host: str, port: int) -> list[str]:
    """Resolve with c-ares and the system's name servers (``NameResolver``: bounded in time and number)."""
    return _system_resolver()(host, port)


_NO_ALLOWLIST = Allowlist.empty()


class EgressPolicy:
    """The egress rule, with an optional allowlist, for create and dial time."""

    def __init__(self, allowlist: Allowlist = _NO_ALLOWLIST) -> None:
        self.allowlist = allowlist

    def _admitted_by_allowlist(self, addr: IPAddress, port: int) -> bool:
        if not self.allowlist.admits(addr, port):
            return False
        # An allowlisted translation prefix (say NAT64 on an IPv6-only
        # cluster) must still not lead to a blocked IPv4.
        return all(is_public_address(v4) or self.allowlist.admits(v4, port) for v4 in embedded_ipv4_of(addr))

    def check_destination(self, ip: object, port: object) -> None:
        """Raise ``EgressDenied`` unless the executor may connect to (ip, port)."""
        addr = parse_address(ip)
        if addr is None:
            raise EgressDenied(f"unparseable address {ip!r}")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise EgressDenied(f"bad port {port!r}")
        if self._admitted_by_allowlist(addr, port):
            return
        if port not in ALLOWED_PORTS:
            raise EgressDenied(f"port {port} not allowed for {addr}")
        if not is_public_address(addr):
            raise EgressDenied(f"address {addr} is not public")

    def vet_resolved(self, host: str, port: int, addresses: list[str]) -> list[str]:
        """Return ``addresses`` (in order) if every one may be dialled.

        All or nothing: one refused answer refuses the whole destination,
        because a public+private mix is what a rebinding attack serves, and a
        client falls through to the next address when a connect fails.
        """
        if not addresses:
            raise EgressDenied(f"no addresses for {host!r}")
        for address in addresses:
            try:
                self.check_destination(address, port)
            except EgressDenied as exc:
                raise EgressDenied(f"{host!r} resolved to a refused destination: {exc.reason}") from None
        if literal_address(host) is None:
            problem = name_syntax_problem(host)
            if problem is None and not self._all_allowlisted(addresses, port):
                problem = name_policy_problem(host)
            if problem is not None:
                raise EgressDenied(f"{host!r}: {problem}")
        return list(addresses)

    def _all_allowlisted(self, addresses: list[str], port: int) -> bool:
        vetted = [parse_address(address) for address in addresses]
        return bool(vetted) and all(addr is not None and self._admitted_by_allowlist(addr, port) for addr in vetted)

    def check_url(self, url: str, *, resolve: Resolver = resolve_host) -> ParsedTarget:
        """Validate a task URL at create/edit time; raise ``TargetError``.

        The URL itself is read by ``parse_task_url`` (both parsers must
        agree); then the destination is judged. A name that does not exist
        (``NameNotFound``) is accepted (the dial-time check decides); one that
        resolves to any refused address is not. A lookup that did not finish
        raises ``LookupUnfinished``: nothing is known, so nothing is accepted.
        """
        target = parse_task_url(url)
        host, port = target.host, target.port
        if literal_address(host) is not None:
            self._check_addresses(host, port, [host])
            return target
        try:
            addresses = list(resolve(host, port))
        except (OSError, UnicodeError, ValueError) as exc:
            failure = lookup_failure(exc)
            if isinstance(failure, LookupUnfinished):
                # Busy or down is not "resolved to nothing": that name may resolve to 127.0.0.1.
                raise failure from None
            addresses = []  # the name does not exist now: the dial-time check decides
        problem = name_policy_problem(host)
        if problem is not None and not self._all_allowlisted(addresses, port):
            raise TargetError(GENERIC_MESSAGE, reason=f"{host!r}: {problem}")
        if addresses:
            self._check_addresses(host, port, addresses)
        elif port not in ALLOWED_PORTS:
            raise TargetError(PORT_MESSAGE, reason=f"{host!r} unresolved, port {port}")
        return target

    def _check_addresses(self, host: str, port: int, addresses: list[str]) -> None:
        if port not in ALLOWED_PORTS and not self._all_allowlisted(addresses, port):
            raise TargetError(PORT_MESSAGE, reason=f"{host!r} port {port}")
        try:
            for address in addresses:
                self.check_destination(address, port)
        except EgressDenied as exc:
            raise TargetError(GENERIC_MESSAGE, reason=f"{host!r}: {exc.reason}") from None
