from django.apps import AppConfig


class VaultConfig(AppConfig):
    name = "vault"
    verbose_name = "Tenant secrets"

    def ready(self) -> None:
        # Build the cipher at start: a bad SECRETS_ENCRYPTION_KEYS stops the process naming it.
        from vault.crypto import secret_box

        secret_box()
