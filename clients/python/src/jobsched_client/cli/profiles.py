"""Profiles: where the API is and how to get a token, stored in a YAML file (never the token itself).

    default: prod
    profiles:
      prod: {url: "https://jobsched.example.com", token_env: JOBSCHED_PROD_TOKEN}
      dev:  {url: "http://127.0.0.1:8000", token_command: "pass show jobsched/dev"}

The file is `$JOBSCHED_CONFIG`, else `$XDG_CONFIG_HOME/jobsched/config.yaml`
(`~/.config/...`). JOBSCHED_URL and JOBSCHED_TOKEN override any profile (the
names the Terraform provider reads); JOBSCHED_PROFILE picks one.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

URL_VARIABLE = "JOBSCHED_URL"
TOKEN_VARIABLE = "JOBSCHED_TOKEN"
PROFILE_VARIABLE = "JOBSCHED_PROFILE"
CONFIG_VARIABLE = "JOBSCHED_CONFIG"
TOKEN_COMMAND_TIMEOUT = 60


class ConfigError(Exception):
    """The configuration cannot give a URL or a token; the message says what to set."""


def config_path() -> Path:
    if explicit := os.environ.get(CONFIG_VARIABLE):
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "jobsched" / "config.yaml"


def load() -> dict[str, Any]:
    path = config_path()
    if not path.exists():
        return {"profiles": {}}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a YAML mapping")
    data.setdefault("profiles", {})
    return data


def save(data: dict[str, Any]) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=True))
    return path


@dataclass(frozen=True)
class Settings:
    url: str
    token: str


def resolve(*, profile: str | None, url: str | None) -> Settings:
    """The URL and token to use: options, then JOBSCHED_URL/JOBSCHED_TOKEN, then the profile."""
    data = load()
    name = profile or os.environ.get(PROFILE_VARIABLE) or data.get("default")
    chosen: dict[str, Any] = {}
    if name:
        if name not in data["profiles"]:
            raise ConfigError(f"no profile {name!r} in {config_path()} (jobsched config set {name} --url ...)")
        chosen = data["profiles"][name] or {}
    api_url = url or os.environ.get(URL_VARIABLE) or chosen.get("url")
    if not api_url:
        raise ConfigError(f"no API URL: set {URL_VARIABLE} or a profile (jobsched config set NAME --url URL ...)")
    return Settings(url=api_url, token=_token(chosen))


def _token(profile: dict[str, Any]) -> str:
    if token := os.environ.get(TOKEN_VARIABLE):
        return token.strip()
    if env_name := profile.get("token_env"):
        if token := os.environ.get(env_name):
            return token.strip()
        raise ConfigError(f"the profile reads the token from ${env_name}, which is not set")
    if command := profile.get("token_command"):
        # Split like a shell, run without one: the command is the user's own, from their own file.
        try:
            done = subprocess.run(
                shlex.split(command), capture_output=True, text=True, timeout=TOKEN_COMMAND_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"token_command failed: {exc}") from None
        if done.returncode != 0 or not done.stdout.strip():
            last = (done.stderr.strip().splitlines() or [""])[-1][:200]
            raise ConfigError(f"token_command exited {done.returncode} with no token: {last}")
        return done.stdout.strip()
    raise ConfigError(f"no token: set {TOKEN_VARIABLE}, or a profile's token_env or token_command")
