"""The tenant a call is made for, where a resolver's interface cannot be told it.

`DeliveryClient.send` (and the transport's `hold`, per origin) sets it around the call.
The resolver's per-tenant cap on lookups in flight reads it
(`tenant_lookups.TenantLookups.resolve`: the resolver interface carries no tenant).
The pool itself is told the tenant outright (its `Origin` holds it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

NO_TENANT = ""  # outside any call (a test's bare resolver): one shared key and cap

CALLING_TENANT: ContextVar[str] = ContextVar("calling_tenant", default=NO_TENANT)


@contextlib.contextmanager
def calling_for(tenant_id: str) -> Iterator[None]:
    """Within this block, pools and lookups work for `tenant_id` (a task's context is its own)."""
    token = CALLING_TENANT.set(tenant_id)
    try:
        yield
    finally:
        CALLING_TENANT.reset(token)
