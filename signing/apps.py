from django.apps import AppConfig


class SigningConfig(AppConfig):
    name = "signing"
    verbose_name = "Signing secrets"
