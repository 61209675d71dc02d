"""The task API's use of the egress policy: EGRESS_ALLOWLIST parsed once, resolver swappable.

outbound.egress is pure (no Django); this module binds it to settings (EGRESS_ALLOWLIST, DNS_*).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from outbound import egress
from outbound.egress.url_rules import PORT_MESSAGE, literal_address, parse_task_url
from tasks import lookup_slots

logger = logging.getLogger(__name__)

# The create-time resolver; tests replace it so they never depend on real DNS. None: c-ares as
# settings.DNS_* say (`name_resolver`).
resolver: egress.Resolver | None = None


@lru_cache(maxsize=4)
def _name_resolver(nameservers: str, timeout_seconds: float, max_in_flight: int) -> egress.NameResolver:
    try:
        servers = egress.parse_nameservers(nameservers)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DNS_NAMESERVERS: {exc}") from exc
    return egress.NameResolver(nameservers=servers, timeout_seconds=timeout_seconds, max_in_flight=max_in_flight)


def name_resolver() -> egress.Resolver:
    """The create-time resolver: the tests' replacement, or c-ares per settings (built once per value)."""
    if resolver is not None:
        return resolver
    return _name_resolver(settings.DNS_NAMESERVERS, settings.DNS_TIMEOUT_SECONDS, settings.DNS_API_LOOKUPS_MAX)


@lru_cache(maxsize=4)
def _policy(allowlist_text: str) -> egress.EgressPolicy:
    try:
        allowlist = egress.Allowlist.parse(allowlist_text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"EGRESS_ALLOWLIST: {exc}") from exc
    if allowlist:
        # Loud on purpose: an allowlist opens holes in the SSRF policy.
        logger.warning(
            "EGRESS_ALLOWLIST is set: %s",
            allowlist.describe(),
            extra={"event": "egress_allowlist", "entries": len(allowlist.entries)},
        )
    return egress.EgressPolicy(allowlist)


def egress_policy() -> egress.EgressPolicy:
    """The policy for settings.EGRESS_ALLOWLIST (parsed once per value): create time here, dial time in run_executor."""
    return _policy(settings.EGRESS_ALLOWLIST)


@contextmanager
def _tenant_lookup(tenant_id: str | None) -> Iterator[None]:
    """One of the tenant's DNS_API_LOOKUPS_PER_TENANT slots, shared by the pod's workers, for one name lookup.

    The process-wide cap (DNS_API_LOOKUPS_MAX) alone let one tenant's hanging names take every
    lookup (and request thread) of the process: its other tenants' creates were 503s.
    """
    if tenant_id is None:
        yield
        return
    try:
        slot = lookup_slots.tenant_slot(tenant_id, slots=settings.DNS_API_LOOKUPS_PER_TENANT)
        with slot:
            yield
    except lookup_slots.NoSlotFree:
        raise egress.LookupUnfinished("too many lookups in flight for this tenant") from None


# When the name lookups of the current request must be over (None: no bound beyond each lookup's own).
_lookups_end: ContextVar[float | None] = ContextVar("lookups_end", default=None)


@contextmanager
def lookups_within(seconds: float) -> Iterator[None]:
    """Bound the name lookups of the block together: past `seconds`, a URL check is unfinished at once.

    An import checks up to its every line's URL, one after another, on a worker that gunicorn
    restarts past GUNICORN_TIMEOUT: bounded, it answers a 503 before that instead of a cut
    connection. The last lookup begun may still take its own DNS_TIMEOUT_SECONDS.
    """
    token = _lookups_end.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _lookups_end.reset(token)


def check_task_url(url: str, *, tenant_id: str | None = None) -> str:
    """Return `url` if the policy admits it at create/edit time; raise egress.TargetError (refused) or
    egress.LookupUnfinished (its name could not be looked up now: nothing is known, nothing accepted).

    In DEBUG a refusal also says how to allow a local receiver: a developer's first task aims at
    127.0.0.1, and the generic text alone sent them hunting. Never with DEBUG off: the hint
    names the allowlist, which is ours to know, not a tenant's.
    """
    resolve = name_resolver()

    def resolve_in_a_tenant_slot(host: str, port: int) -> list[str]:
        end = _lookups_end.get()
        if end is not None and time.monotonic() >= end:
            raise egress.LookupUnfinished("the request's name lookups took too long")
        # Only a name's lookup takes one of the tenant's slots: an address is checked without DNS.
        with _tenant_lookup(tenant_id):
            return resolve(host, port)

    try:
        egress_policy().check_url(url, resolve=resolve_in_a_tenant_slot)
    except egress.TargetError as exc:
        if settings.DEBUG and exc.message in (egress.GENERIC_MESSAGE, PORT_MESSAGE):
            raise egress.TargetError(f"{exc.message}; {development_hint()}", reason=exc.reason) from None
        raise
    return url


def development_hint() -> str:
    """What a refused URL says in DEBUG: the receivers allowed now, and how to allow another."""
    entries = egress_policy().allowlist.entries
    allowed = ", ".join(str(entry) for entry in entries) if entries else "nothing"
    return (
        f"development (DEBUG): EGRESS_ALLOWLIST admits {allowed}; `make run` allows its receiver "
        "(RECEIVER_PORT), or add address:port to EGRESS_ALLOWLIST (e.g. 127.0.0.1:9911) and restart"
    )


def dial_verdict(url: str) -> tuple[str, str]:
    """What the executor's dial-time check would say about `url` now: (verdict, tenant-safe detail).

    "allowed", "refused" (the generic text: the reason may name internal addresses),
    "unresolved" (the name does not exist now; the call would be refused), or "unknown" (its
    lookup did not finish now: timed out, or too many in flight; the call looks again).
    """
    policy = egress_policy()
    try:
        target = parse_task_url(url)
    except egress.TargetError as exc:
        return "refused", exc.message
    host, port = target.host, target.port
    if literal_address(host) is not None:
        addresses = [host]
    else:
        try:
            addresses = list(name_resolver()(host, port))
        except (OSError, UnicodeError, ValueError) as exc:
            if isinstance(egress.lookup_failure(exc), egress.LookupUnfinished):
                return "unknown", f"the lookup of {host} did not finish now; the executor looks again at the call"
            return "unresolved", f"{host} does not resolve now"
    try:
        policy.vet_resolved(host, port, addresses)
    except egress.EgressDenied:
        return "refused", egress.GENERIC_MESSAGE
    return "allowed", "the executor would connect"
