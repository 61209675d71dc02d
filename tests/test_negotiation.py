"""api.negotiation.ContentNegotiation answers as DRF's negotiation does, parsing no header for `*/*`."""

from __future__ import annotations

import itertools

import pytest
from django.http import Http404
from rest_framework import exceptions, renderers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.test import APIRequestFactory

from api.negotiation import ContentNegotiation
from api.renderers import JSONRenderer

ACCEPTS = [
    None,
    "*/*",
    " */* ",
    "*/*;q=0.5",
    "*/*, text/html",
    "application/json",
    "application/json; indent=4",
    "application/*",
    "text/html",
    "text/html, application/json;q=0.1",
    "application/problem+json",
    "",
    ",,,",
    "x" * 300,
]
SUFFIXES = [None, "", "json", "api"]
RENDERER_LISTS = {
    "json": [JSONRenderer()],
    "browsable first": [renderers.BrowsableAPIRenderer(), JSONRenderer()],
    "json then html": [JSONRenderer(), renderers.TemplateHTMLRenderer()],
    "anything": [type("Any", (renderers.BaseRenderer,), {"media_type": "*/*", "format": "any"})()],
    "parameters first": [
        type("V2", (renderers.JSONRenderer,), {"media_type": "application/json; version=2"})(),
        JSONRenderer(),
    ],
    "none": [],
}


def _request(accept: str | None, query: str = "") -> Request:
    extra = {} if accept is None else {"HTTP_ACCEPT": accept}
    return Request(APIRequestFactory().get(f"/v1/tasks{query}", **extra))


def _outcome(negotiation, request: Request, renderer_list, suffix):
    try:
        renderer, media_type = negotiation.select_renderer(request, renderer_list, suffix)
    except (exceptions.NotAcceptable, Http404) as exc:
        return type(exc).__name__
    return renderer_list.index(renderer), media_type


@pytest.mark.parametrize("renderer_list", RENDERER_LISTS.values(), ids=RENDERER_LISTS.keys())
def test_the_same_answer_as_drf(renderer_list):
    differ = []
    for accept, query, suffix in itertools.product(ACCEPTS, ["", "?format=json", "?format=api", "?format="], SUFFIXES):
        ours = _outcome(ContentNegotiation(), _request(accept, query), renderer_list, suffix)
        drfs = _outcome(DefaultContentNegotiation(), _request(accept, query), renderer_list, suffix)
        if ours != drfs:
            differ.append((accept, query, suffix, ours, drfs))
    assert differ == []


@pytest.mark.parametrize("accept", [None, "*/*"])
def test_accepting_anything_parses_no_header(accept, monkeypatch):
    def parse(*args, **kwargs):
        raise AssertionError("parsed the Accept header")

    monkeypatch.setattr(DefaultContentNegotiation, "_get_parsed_accept_list", parse)
    renderer = JSONRenderer()
    assert ContentNegotiation().select_renderer(_request(accept), [renderer]) == (renderer, "application/json")
    with pytest.raises(AssertionError, match="parsed"):
        ContentNegotiation().select_renderer(_request("application/json"), [renderer])


@pytest.mark.django_db
def test_the_api_uses_it(owner):
    assert api_settings.DEFAULT_CONTENT_NEGOTIATION_CLASS is ContentNegotiation
    assert owner.get("/v1/tasks", HTTP_ACCEPT="*/*").status_code == 200
    refused = owner.get("/v1/tasks", HTTP_ACCEPT="text/html")
    assert refused.status_code == 406
    assert refused["Content-Type"] == "application/problem+json"
    assert owner.get("/v1/tasks", HTTP_ACCEPT="text/html, */*;q=0.1").status_code == 200
