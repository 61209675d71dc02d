"""Re-encrypt every signing secret under the first key of SECRETS_ENCRYPTION_KEYS (beside rotate_secret_keys)."""

from django.core.management.base import BaseCommand, CommandError

from signing.services import signing_secret_keys_rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt every signing secret under the first SECRETS_ENCRYPTION_KEYS key; run it with "
        "rotate_secret_keys after putting a new key first and deploying it everywhere."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=500, help="rows read per query (default 500)")

    def handle(self, *args, **options):
        if options["batch_size"] <= 0:
            raise CommandError("--batch-size: must be a positive integer")
        rotated, unreadable = signing_secret_keys_rotate(batch_size=options["batch_size"])
        self.stdout.write(f"rotated={rotated} unreadable={unreadable}")
        if unreadable:
            raise CommandError(f"{unreadable} signing secrets decrypt under none of SECRETS_ENCRYPTION_KEYS")
