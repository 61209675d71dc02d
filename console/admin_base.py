"""What every admin here shares: read-only pages that stay fast on a large table, a text-box
filter, and credential-masked blocks.

Neutral (no app imports) so the task admin and the job admin both build on it
and neither app imports the other for it.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import cast

from django.contrib import admin
from django.contrib.admin.options import ShowFacets
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.utils import formats, timezone
from django.utils.html import format_html

from domain.ids import parse_id
from domain.masking import mask_headers


class CappedCountPaginator(Paginator):
    """Count at most `cap` + 1 rows (COUNT over a LIMITed subquery), never a whole large table.

    Past the cap the admin shows "more than <cap>" and pages beyond it are not linked;
    filters and search narrow the list instead.
    """

    cap = 10_000

    @cached_property
    def count(self) -> int:
        # Only the ids, unsorted: sorting rows or computing display columns only to count them is wasted work.
        return cast(QuerySet, self.object_list).order_by().values("pk")[: self.cap + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > self.cap


class InputListFilter(admin.SimpleListFilter):
    """A list filter with a text box, for values too many to list (tenants, task ids).

    `lookups` offers a bounded few; any value can be typed.
    """

    template = "admin/input_filter.html"
    placeholder = ""

    def has_output(self) -> bool:
        return True

    def choices(self, changelist):
        yield from super().choices(changelist)
        yield {
            "input": True,
            "parameter_name": self.parameter_name,
            "value": self.value() or "",
            "placeholder": self.placeholder,
            "hidden": [(name, value) for name, value in changelist.params.items() if name != self.parameter_name],
        }


def shown_time(value) -> str:
    """A time as the admin shows its date-time fields (DATETIME_FORMAT: to the second, with its zone)."""
    return "—" if value is None else formats.localize(timezone.localtime(value))


def preformatted(text: str):
    """Text shown as sent (escaped), or a dash when empty."""
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text) if text else "—"


def masked_headers_block(headers):
    """Headers as pretty JSON with credential-looking values masked."""
    masked = mask_headers(headers)
    return preformatted(json.dumps(masked, indent=2, ensure_ascii=False)) if masked else "—"


class BoundedReadOnlyAdmin(admin.ModelAdmin):
    """Read-only, and list pages that stay fast on a large table: a capped count, no full count, no facets.

    Edits go through the services (the tenant API, the retry and pause actions),
    never through a form. The search is exact on ids (`id_search_fields`, a UUID
    term) and otherwise one lookup (`text_search`): the admin's default ORs an
    icontains over every field, which no index serves and which BINARY(16) ids cannot match.
    """

    list_per_page = 50
    show_full_result_count = False
    show_facets = ShowFacets.NEVER
    paginator = CappedCountPaginator
    id_search_fields: tuple[str, ...] = ("pk",)
    text_search = ""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        as_id = parse_id(term)
        if as_id is not None:
            by_id = Q()
            for field_name in self.id_search_fields:
                by_id |= Q(**{field_name: as_id})
            return queryset.filter(by_id), False
        return queryset.filter(**{self.text_search: term}), False
