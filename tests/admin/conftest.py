"""Fixtures for the support console: a support agent, a read-only staff user, a non-staff user."""

import pytest
from django.test import Client

from tests.admin.support import make_staff, support_group


@pytest.fixture
def support_user(db):
    return make_staff("agent", groups=(support_group(),))


@pytest.fixture
def readonly_staff(db):
    return make_staff("viewer", perms=("jobs.view_deadjob", "jobs.view_job", "tasks.view_task"))


@pytest.fixture
def non_staff(db):
    return make_staff("outsider", perms=("jobs.view_deadjob", "jobs.retry_dead_jobs"), staff=False)


@pytest.fixture
def client_as():
    """`client_as(user)` → a test client logged in as that user."""

    def _client(user):
        client = Client()
        client.force_login(user)
        return client

    return _client
