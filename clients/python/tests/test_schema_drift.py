"""The SDK against the live `/v1/schema`: every operation both ways, every model's fields both ways.

A server change (a new endpoint, a field added, renamed or removed) fails here
until the SDK follows it. Fields the SDK already knows the server will gain are
in the models' PENDING_FIELDS; once the server has them, they must be removed
from there (the last test says so).
"""

from __future__ import annotations

import dataclasses

import pytest

from jobsched_client import Client
from jobsched_client.models import MODELS
from jobsched_client.operations import ENDPOINTS, SCHEMA_PATH


@pytest.fixture(scope="module")
def schema(base_url: str) -> dict:
    with Client(base_url) as client:
        return client.schema()


def schema_operations(schema: dict) -> dict[str, tuple[str, str]]:
    return {
        op["operationId"]: (method.upper(), path)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if path != SCHEMA_PATH
    }


def test_every_sdk_operation_is_in_the_schema_and_every_schema_operation_in_the_sdk(schema: dict) -> None:
    assert schema_operations(schema) == ENDPOINTS


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_model_fields_match_the_schema_components(model: type, schema: dict) -> None:
    components = schema["components"]["schemas"]
    fields = {f.name for f in dataclasses.fields(model)}
    pending = getattr(model, "PENDING_FIELDS", frozenset())
    for name in model.SCHEMA:
        properties = set(components[name]["properties"])
        assert properties <= fields, f"{name} has fields the SDK lacks: {properties - fields}"
        assert fields - pending <= properties, (
            f"the SDK's {model.__name__} has fields {name} lacks: {fields - pending - properties}"
        )


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_pending_fields_are_not_yet_on_the_server(model: type, schema: dict) -> None:
    components = schema["components"]["schemas"]
    for name in model.SCHEMA:
        arrived = set(getattr(model, "PENDING_FIELDS", ())) & set(components[name]["properties"])
        assert not arrived, f"{name} now has {arrived}: drop them from {model.__name__}.PENDING_FIELDS"
