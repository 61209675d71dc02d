"""Print a development token for one tenant (production tokens come from the tenant's IdP)."""

from django.core.management.base import BaseCommand, CommandError

from api.auth import issue_token
from domain.tenants import TENANT_ID_CHARACTERS, is_valid_tenant_id

MAX_TTL_SECONDS = 30 * 24 * 3600


class Command(BaseCommand):
    help = "Print a signed JWT for --tenant, valid for --ttl seconds (uses JWT_SIGNING_KEY or the HS256 secret)."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="tenant id put in the JWT_TENANT_CLAIM claim")
        parser.add_argument("--ttl", type=int, default=24 * 3600, help="lifetime in seconds (default one day)")

    def handle(self, *args, **options):
        tenant, ttl = options["tenant"], options["ttl"]
        # The same rule the API applies to the claim: never print a token it would refuse.
        if not is_valid_tenant_id(tenant):
            raise CommandError(f"--tenant: 1 to 64 of {TENANT_ID_CHARACTERS}")
        if not 0 < ttl <= MAX_TTL_SECONDS:
            raise CommandError(f"--ttl: 1 to {MAX_TTL_SECONDS} seconds")
        try:
            token = issue_token(tenant, ttl_seconds=ttl)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(token)
