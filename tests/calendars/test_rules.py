"""calendars.rules: dates become disjoint UTC spans in the calendar's zone, and the test on an instant."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from tasks.calendars import rules
from tasks.calendars.rules import DateRange

MADRID = ZoneInfo("Europe/Madrid")


def test_consecutive_dates_and_overlapping_ranges_merge_into_one_run():
    runs = rules.day_runs(
        [date(2027, 1, 1), date(2027, 1, 2), date(2027, 1, 10)],
        [DateRange(date(2027, 1, 3), date(2027, 1, 4)), DateRange(date(2027, 1, 4), date(2027, 1, 5))],
    )
    assert runs == [(date(2027, 1, 1), date(2027, 1, 6)), (date(2027, 1, 10), date(2027, 1, 11))]


def test_a_local_date_is_its_zones_day_in_utc_across_daylight_saving():
    # 2027-03-28 is Madrid's spring-forward day: 23 hours long.
    (span,) = rules.spans(MADRID, [date(2027, 3, 28)], [])
    assert span == (datetime(2027, 3, 27, 23, tzinfo=UTC), datetime(2027, 3, 28, 22, tzinfo=UTC))


def test_a_midnight_in_a_daylight_saving_gap_starts_the_day_at_the_change():
    # America/Santiago springs forward at 00:00 local (2026-09-06): the day starts at 01:00 -03.
    (span,) = rules.spans(ZoneInfo("America/Santiago"), [date(2026, 9, 6)], [])
    assert span[0] == datetime(2026, 9, 6, 4, tzinfo=UTC)


def test_covering_names_the_first_calendar_in_the_tasks_order_holding_the_instant():
    holidays = rules.spans(MADRID, [date(2027, 1, 1)], [])
    closed = rules.spans(ZoneInfo("UTC"), [], [DateRange(date(2026, 12, 31), date(2027, 1, 1))])
    calendars = [("holidays", holidays), ("closed", closed)]
    assert rules.covering(calendars, datetime(2027, 1, 1, 12, tzinfo=UTC)) == "holidays"
    # 23:30 UTC on Dec 31 is already Jan 1 in Madrid.
    assert rules.covering(calendars, datetime(2026, 12, 31, 23, 30, tzinfo=UTC)) == "holidays"
    assert rules.covering(calendars, datetime(2026, 12, 31, 22, 59, tzinfo=UTC)) == "closed"
    assert rules.covering(calendars, datetime(2027, 1, 2, 0, 0, tzinfo=UTC)) is None
    assert rules.covering([], datetime(2027, 1, 1, tzinfo=UTC)) is None


@pytest.mark.parametrize("value", ["2027-02-30", "2027-1-01", "1969-12-31", "2200-01-01", 20270101, None, ""])
def test_a_bad_date_names_its_field(value):
    with pytest.raises(rules.CalendarRuleError) as caught:
        rules.parse_date(value, "dates[3]")
    assert caught.value.field == "dates[3]"


def test_a_range_longer_than_the_bound_or_backwards_names_its_end():
    with pytest.raises(rules.CalendarRuleError) as too_long:
        rules.check_ranges(
            [DateRange(date(2027, 1, 1), date(2027, 1, 1)), DateRange(date(2027, 1, 1), date(2028, 1, 2))]
        )
    assert too_long.value.field == "ranges[1].to"
    rules.check_ranges([DateRange(date(2028, 1, 1), date(2028, 12, 31))])  # 366 days, a leap year: allowed
    with pytest.raises(rules.CalendarRuleError) as backwards:
        rules.check_ranges([DateRange(date(2027, 1, 2), date(2027, 1, 1))])
    assert backwards.value.field == "ranges[0].to"


@pytest.mark.parametrize("name", ["a", "es-holidays", "x_1", "a" * 63])
def test_valid_names(name):
    assert rules.is_valid_name(name)


@pytest.mark.parametrize("name", ["", "A", "-a", "a-", "a.b", "a" * 64, "é", "a b", None])
def test_invalid_names(name):
    assert not rules.is_valid_name(name)
