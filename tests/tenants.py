"""The three parties of every API test: the owner tenant, another tenant, and a stranger.

In the shape of healthchecks' `hc/test.py` base (alice owns the project, bob is
another account, charlie has no access): `owner` makes the data under test,
`other_tenant` is a real tenant with data of its own that must never see the
owner's (another tenant's task or job is a 404, never a 403), and `stranger`
carries no token at all (401). The fixtures are in tests/conftest.py.
"""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from jobs.models import Job
from tasks.models import Task
from tests.factories import make_job, make_task

OWNER = "tenant-a"  # make_task()'s default tenant: a task made without a tenant is the owner's
OTHER_TENANT = "tenant-b"


class TenantClient(APIClient):
    """A DRF test client signed in as one tenant, with factories that make that tenant's rows."""

    def __init__(self, tenant_id: str, token: str) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")

    def make_task(self, **overrides: Any) -> Task:
        """A saved task of this tenant (tests.factories.make_task's defaults otherwise)."""
        return make_task(tenant_id=self.tenant_id, **overrides)

    def make_job(self, task: Task | None = None, **overrides: Any) -> Job:
        """A saved job of this tenant, of `task` (a new task of this tenant by default)."""
        task = task or self.make_task()
        assert task.tenant_id == self.tenant_id, "a tenant's job belongs to one of its own tasks"
        return make_job(task, **overrides)
