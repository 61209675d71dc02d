"""A tenant's signing secret: the key its calls are signed with (Standard Webhooks).

The value is sealed (signing.sealing) and shown once, when created. During a
rotation a tenant has two live secrets and every call carries both signatures;
the older one stops being used at `expires_at` (or when deleted).
"""

from __future__ import annotations

from django.db import models

from domain.ids import BinaryUUIDField, new_id
from domain.tenants import TenantIdField


class SigningSecret(models.Model):
    id = BinaryUUIDField(primary_key=True, default=new_id, editable=False)
    tenant_id = TenantIdField()
    ciphertext = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)  # NULL: until deleted

    class Meta:
        db_table = "signing_secrets"
        indexes = [models.Index(fields=["tenant_id", "created_at"], name="signing_secrets_tenant_idx")]

    def __str__(self) -> str:
        return f"signing secret {self.id} of {self.tenant_id}"
