"""What every command shares: the chosen profile and output, and one lazily built Client."""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from jobsched_client.cli import profiles
from jobsched_client.client import Client


@dataclass
class CliContext:
    profile: str | None = None
    url: str | None = None
    output: str = "table"
    _client: Client | None = field(default=None, repr=False)

    def client(self) -> Client:
        if self._client is None:
            settings = profiles.resolve(profile=self.profile, url=self.url)
            self._client = Client(settings.url, settings.token)
            click.get_current_context().call_on_close(self._client.close)
        return self._client


pass_cli = click.make_pass_decorator(CliContext)
