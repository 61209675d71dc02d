"""The task API's use of the egress policy: EGRESS_ALLOWLIST parsed once, resolver swappable.

tasks.egress is pure (no Django); this module binds it to settings.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from tasks import egress

logger = logging.getLogger(__name__)

# The create-time resolver; tests replace it so they never depend on real DNS.
resolver: egress.Resolver = egress.resolve_host


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


def check_task_url(url: str) -> str:
    """Return `url` if the policy admits it at create/edit time, or raise egress.TargetError."""
    egress_policy().check_url(url, resolve=resolver)
    return url
