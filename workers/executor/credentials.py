"""A call's credential and signing keys: loaded per claimed batch, handed to the client per call.

The client (`outbound.client`) loads nothing: the executor resolves, on the claim thread
right after each claim commits, the batch's secrets (`secrets.SecretsProvider.prefetch`)
and signing keys (`signing.SigningKeys.refresh`), and reads them per call on the event
loop. A credential or key set that could not be had fails that attempt (it retries),
never sends the call without it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from jobs.queue import ClaimedJob
from outbound.client import ERROR_SECRET, ERROR_SIGNING, Delivery, DeliveryClient

from .secrets import SecretsProvider, SecretUnavailable
from .signing import SigningKeys, SigningUnavailable

logger = logging.getLogger(__name__)


class Credentials:
    """The executor's secrets and signing keys, as of the claim that holds each job."""

    def __init__(self, *, secrets: SecretsProvider | None = None, signing: SigningKeys | None = None) -> None:
        self.secrets = secrets
        self.signing = signing

    def load_secrets(self, jobs: Iterable[ClaimedJob]) -> None:
        """The secrets a claimed batch names, in one go; blocking (the claim thread); a database error propagates."""
        if self.secrets is not None:
            self.secrets.prefetch((job.tenant_id, job.secret_ref) for job in jobs if job.secret_ref)

    def load_signing_keys(self, jobs: list[ClaimedJob]) -> None:
        """The batch's tenants' signing keys; never raises (a failed load fails those attempts instead)."""
        if self.signing is not None and jobs:
            self.signing.refresh(job.tenant_id for job in jobs)

    def for_call(self, job: ClaimedJob) -> tuple[str | None, Sequence[bytes]]:
        """(the credential sent as Authorization, the signing keys); SecretUnavailable or SigningUnavailable."""
        secret = None
        if job.secret_ref:
            if self.secrets is None:
                raise SecretUnavailable("no secrets provider")
            # The job's own tenant's secret of that name, never another tenant's: tokens never sit in the jobs table.
            secret = self.secrets.get(job.tenant_id, job.secret_ref)
        keys = self.signing.keys_for(job.tenant_id) if self.signing is not None else ()
        return secret, keys


async def send_with_credentials(job: ClaimedJob, *, client: DeliveryClient, credentials: Credentials) -> Delivery:
    """The job's call with its credential and keys; an attempt that cannot have them fails without a call."""
    try:
        secret, keys = credentials.for_call(job)
    except SigningUnavailable:
        logger.warning("signing keys unavailable", extra={"event": "signing_unavailable", "job_id": str(job.id)})
        return Delivery(error=ERROR_SIGNING)
    except SecretUnavailable as exc:
        # The reason names the ref, never the value: secrets are never logged.
        logger.warning(
            "secret unavailable",
            extra={
                "event": "secret_unavailable",
                "job_id": str(job.id),
                "secret_ref": job.secret_ref,
                "reason": str(exc),
            },
        )
        return Delivery(error=ERROR_SECRET)
    return await client.send(job, secret=secret, signing_keys=keys)
