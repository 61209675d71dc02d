"""Egress (SSRF) policy: which destinations a tenant's HTTP task may reach.

One pure package (no Django: callers read ``EGRESS_ALLOWLIST`` and pass an
``Allowlist`` in), used twice: by the task API when a task is created or
edited (``EgressPolicy.check_url``) and by the executor inside its connector,
after DNS and right before ``connect()`` (``EgressPolicy.vet_resolved`` /
``check_destination``). One module per part of the rule:

- ``networks``: the blocked special-purpose networks and address classification;
- ``allowlist``: ``EGRESS_ALLOWLIST`` parsing and matching;
- ``url_rules``: what a URL may say (scheme, port, credentials, host), read by both
  parsers the code uses;
- ``lookups``: what a failed name lookup means (``NameNotFound`` vs
  ``LookupUnfinished``) and the API's bounded c-ares resolver;
- ``policy``: ``EgressPolicy``, which joins them for create and dial time.

Import the public names from here.
"""

from outbound.egress.allowlist import Allowlist, AllowlistEntry
from outbound.egress.lookups import LookupUnfinished, NameNotFound, NameResolver, lookup_failure, parse_nameservers
from outbound.egress.networks import BLOCKED_NETWORKS, is_public_address
from outbound.egress.policy import ALLOWED_PORTS, GENERIC_MESSAGE, EgressDenied, EgressPolicy, Resolver, resolve_host
from outbound.egress.url_rules import MAX_URL_LENGTH, ParsedTarget, TargetError, port_spelling_problem

__all__ = [
    "ALLOWED_PORTS",
    "BLOCKED_NETWORKS",
    "GENERIC_MESSAGE",
    "MAX_URL_LENGTH",
    "Allowlist",
    "AllowlistEntry",
    "EgressDenied",
    "EgressPolicy",
    "LookupUnfinished",
    "NameNotFound",
    "NameResolver",
    "ParsedTarget",
    "Resolver",
    "TargetError",
    "is_public_address",
    "lookup_failure",
    "parse_nameservers",
    "port_spelling_problem",
    "resolve_host",
]
