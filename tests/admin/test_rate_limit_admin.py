"""Rate limits in the console: staff with the view permission read limits and buckets; nobody edits them there."""

from __future__ import annotations

import pytest
from django.urls import reverse

from jobs.queue import OriginBlock, block_origins
from ratelimits.models import RateLimit
from ratelimits.services import rate_limit_set
from tests.admin.support import make_staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(db):
    return make_staff("rates", perms=("ratelimits.view_ratelimit", "ratelimits.view_originbucket"))


def test_staff_read_each_tenants_limits_and_buckets_and_search_by_tenant(viewer, client_as):
    rate_limit_set(tenant_id="tenant-a", origin="https://a.example:443", per_second=50, burst=20)
    rate_limit_set(tenant_id="tenant-b", origin="https://b.example:443", per_second=1, burst=1)
    block_origins(blocks=[OriginBlock("tenant-a", "https://slow.example:443", 60)])
    client = client_as(viewer)
    limits = client.get(reverse("admin:ratelimits_ratelimit_changelist"), {"q": "tenant-a"}).content.decode()
    assert "https://a.example:443" in limits and "https://b.example:443" not in limits
    buckets = client.get(reverse("admin:ratelimits_originbucket_changelist")).content.decode()
    assert "https://slow.example:443" in buckets and "https://a.example:443" in buckets


def test_nobody_adds_changes_or_deletes_a_limit_in_the_console(client_as):
    superuser = make_staff("root")
    superuser.is_superuser = True
    superuser.save()
    limit, _ = rate_limit_set(tenant_id="tenant-a", origin="https://a.example:443", per_second=50, burst=20)
    client = client_as(superuser)
    assert client.get(reverse("admin:ratelimits_ratelimit_add")).status_code == 403
    change = reverse("admin:ratelimits_ratelimit_change", args=[limit.pk])
    client.post(change, {"tenant_id": "tenant-a", "origin": "https://a.example:443", "per_second": "1", "burst": "1"})
    assert RateLimit.objects.get(pk=limit.pk).per_second == 50
    assert (
        client.post(reverse("admin:ratelimits_ratelimit_delete", args=[limit.pk]), {"post": "yes"}).status_code == 403
    )
    assert RateLimit.objects.filter(pk=limit.pk).exists()
