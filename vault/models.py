"""A tenant's secret: a name the tenant chose and its value, encrypted (vault.crypto).

The value is never readable through the API (write-only) nor the admin (not
registered). `name` compares byte for byte like tenant_id: `Token` and `token`
are two secrets.
"""

from __future__ import annotations

from django.db import models

from domain.tenants import ExactCharField, TenantIdField
from vault.rules import MAX_NAME_LENGTH


class TenantSecret(models.Model):
    tenant_id = TenantIdField()
    name = ExactCharField(max_length=MAX_NAME_LENGTH)
    ciphertext = models.TextField()  # a Fernet token (URL-safe base64); holds tenant, name and value
    version = models.PositiveIntegerField(default=1)  # bumped by every PUT
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tenant_secrets"
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="tenant_secrets_name_uniq")]

    def __str__(self) -> str:
        return f"secret {self.name} of {self.tenant_id}"
