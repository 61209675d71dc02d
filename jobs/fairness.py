"""Fair share of an executor's free slots among the tenants with due jobs (pure rules, no database).

The claim (docs/explanation/fairness.md, docs/how-to/fair-share.md) walks the tenants that have due jobs in
tenant order, starting after a per-process round-robin cursor and wrapping
around; `share_slots` splits the free slots among them equally, never giving a
tenant more than its headroom under its running-jobs cap; a tenant that takes
less than its share (it had fewer due jobs, or another executor holds them)
leaves the rest to the tenants that filled theirs (`next_round`). Priority then
orders the jobs inside each tenant's share only, so one tenant's priority 0 never
runs ahead of another tenant's jobs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass
class TenantCursor:
    """Where the next claim's walk over tenants starts: after `after` (empty = the first tenant)."""

    after: str = ""


def share_slots(free: int, tenants: Sequence[str], headroom: Mapping[str, int]) -> dict[str, int]:
    """Split `free` slots over `tenants` (walk order) equally, each within its headroom.

    `headroom` holds the capped tenants only (cap minus running, at least 0); the
    others have none. When slots do not divide evenly the first tenants in walk
    order get one more; a capped tenant's unusable part goes to the others.
    Tenants that get nothing are in the result with 0.
    """
    shares = dict.fromkeys(tenants, 0)
    open_tenants = [tenant for tenant in tenants if headroom.get(tenant, 1) > 0]
    left = max(0, free)
    while left > 0 and open_tenants:
        base, extra = divmod(left, len(open_tenants))
        still_open = []
        for index, tenant in enumerate(open_tenants):
            want = base + (1 if index < extra else 0)
            room = headroom.get(tenant)
            if room is not None:
                want = min(want, room - shares[tenant])
            shares[tenant] += want
            left -= want
            if room is None or shares[tenant] < room:
                still_open.append(tenant)
        if len(still_open) == len(open_tenants):
            break  # nobody hit a cap: every slot was handed out (or there were fewer slots than tenants)
        open_tenants = still_open
    return shares


def next_round(
    left: int,
    shares: Mapping[str, int],
    taken: Mapping[str, int],
    headroom: Mapping[str, int],
    *,
    unfinished: Collection[str] = (),
) -> dict[str, int]:
    """Shares of the `left` slots for another take, among the tenants that filled their last share.

    A tenant that took fewer than its share has no more due jobs this claim can
    lock, so it gets nothing more, unless it is `unfinished`: its one job was taken by
    the key the walk read, and that row was locked or not yet committed, which says
    nothing of the jobs behind it. `headroom` is reduced by what each one took.
    """
    full = [
        tenant
        for tenant, share in shares.items()
        if share > 0 and (taken.get(tenant, 0) >= share or tenant in unfinished)
    ]
    room = {tenant: room - taken.get(tenant, 0) for tenant, room in headroom.items()}
    return {tenant: share for tenant, share in share_slots(left, full, room).items() if share > 0}


def cursor_after(start: str, walked: Sequence[str], shares: Mapping[str, int], headroom: Mapping[str, int]) -> str:
    """Where the next walk starts: just before the first tenant left out for lack of slots, else after the walk.

    `start` is where this walk started; `walked` every tenant it passed, in order, and
    `shares` the shares of those that had due jobs. A tenant with nothing due or no
    headroom is not left out (it is not waiting for a slot).
    """
    previous = start
    for tenant in walked:
        if shares.get(tenant, 1) == 0 and headroom.get(tenant, 1) > 0:
            return previous
        previous = tenant
    return previous


def interleave(groups: Sequence[Sequence[T]]) -> list[T]:
    """Round-robin over the groups: the first of each, then the second of each, ...

    The claim returns each tenant's jobs in its own order, interleaved, so jobs due at
    the same instant fire one tenant after another rather than a whole tenant first.
    """
    out: list[T] = []
    depth = max((len(group) for group in groups), default=0)
    for index in range(depth):
        out.extend(group[index] for group in groups if index < len(group))
    return out
