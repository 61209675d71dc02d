"""Content negotiation: DRF's, with its most common answer found without parsing an Accept header."""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class ContentNegotiation(DefaultContentNegotiation):
    """A request that accepts anything (no Accept header, or `*/*` alone: curl, httpx, wrk) gets the
    first renderer and its media type, which is what DRF's walk over the parsed header returns for
    it; any other Accept, a format suffix or `?format=` takes that walk."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        candidates = renderers if isinstance(renderers, list) else list(renderers)
        if candidates and format_suffix is None and request.META.get("HTTP_ACCEPT", "*/*") == "*/*":
            media_type = candidates[0].media_type
            override = self.settings.URL_FORMAT_OVERRIDE
            # A media type with parameters (or none) is DRF's to judge.
            if media_type and ";" not in media_type and (not override or not request.query_params.get(override)):
                return candidates[0], media_type
        return super().select_renderer(request, candidates, format_suffix)
