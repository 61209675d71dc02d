"""The share rules of the fair claim, without a database (jobs.fairness)."""

from __future__ import annotations

import pytest

from jobs.fairness import cursor_after, interleave, next_round, share_slots


def test_free_slots_are_split_equally_and_the_remainder_goes_to_the_first_tenants_in_walk_order():
    assert share_slots(10, ["a", "b", "c"], {}) == {"a": 4, "b": 3, "c": 3}


def test_with_more_tenants_than_slots_the_first_ones_in_walk_order_get_one_each():
    assert share_slots(2, ["c", "a", "b"], {}) == {"c": 1, "a": 1, "b": 0}


def test_a_capped_tenant_gets_at_most_its_headroom_and_the_rest_goes_to_the_others():
    assert share_slots(9, ["a", "b", "c"], {"a": 1}) == {"a": 1, "b": 4, "c": 4}


def test_a_tenant_at_its_cap_gets_nothing():
    assert share_slots(4, ["a", "b"], {"a": 0}) == {"a": 0, "b": 4}


def test_when_every_tenant_is_capped_the_slots_beyond_their_headroom_stay_free():
    assert share_slots(100, ["a", "b"], {"a": 2, "b": 0}) == {"a": 2, "b": 0}


@pytest.mark.parametrize("free", [0, -3])
def test_no_free_slots_give_nobody_anything(free):
    assert share_slots(free, ["a", "b"], {}) == {"a": 0, "b": 0}


def test_no_tenants_give_an_empty_plan():
    assert share_slots(5, [], {}) == {}


@pytest.mark.parametrize("free", [1, 7, 500, 1001])
@pytest.mark.parametrize("tenants", [1, 3, 11, 600])
def test_shares_never_exceed_the_free_slots_and_use_them_all_when_nobody_is_capped(free, tenants):
    names = [f"t{n}" for n in range(tenants)]
    shares = share_slots(free, names, {})
    assert sum(shares.values()) == min(free, sum(shares.values())) == free
    assert max(shares.values()) - min(shares.values()) <= 1


def test_the_next_round_shares_what_is_left_among_the_tenants_that_filled_their_share():
    # b..k took their 10 jobs of a 46-slot share each; a filled its share, so it gets the rest.
    shares = share_slots(500, ["a", *"bcdefghijk"], {})
    taken = {"a": shares["a"], **dict.fromkeys("bcdefghijk", 10)}
    left = 500 - sum(taken.values())
    assert next_round(left, shares, taken, {}) == {"a": left}


def test_the_next_round_respects_the_headroom_left_after_what_was_taken():
    assert next_round(10, {"a": 3, "b": 3}, {"a": 3, "b": 3}, {"a": 4}) == {"a": 1, "b": 9}


def test_the_next_round_is_empty_when_every_tenant_ran_out_of_due_jobs():
    assert next_round(10, {"a": 5, "b": 5}, {"a": 2, "b": 0}, {}) == {}


def test_the_cursor_stops_before_the_first_tenant_left_out_for_lack_of_slots():
    walked = ["d", "e", "f", "a"]
    assert cursor_after("c", walked, {"d": 1, "e": 1, "f": 0, "a": 0}, {}) == "e"


def test_the_cursor_moves_past_the_walk_when_every_tenant_got_a_slot_or_is_capped():
    assert cursor_after("c", ["d", "e"], {"d": 1, "e": 0}, {"e": 0}) == "e"


def test_the_cursor_stays_where_it_was_when_the_first_tenant_is_left_out():
    assert cursor_after("c", ["d", "e"], {"d": 0, "e": 0}, {}) == "c"


def test_interleave_takes_one_of_each_group_in_turn():
    assert interleave([[1, 2, 3], ["a"], [], ["x", "y"]]) == [1, "a", "x", 2, "y", 3]
    assert interleave([]) == []


def test_tenants_walked_with_nothing_due_are_not_left_out():
    assert cursor_after("", ["a", "b", "c"], {"b": 1}, {}) == "c"


def test_an_unfinished_tenant_takes_part_in_the_next_round_though_it_took_nothing():
    # Its one job was taken by the walk's key, and that row was locked or not yet committed.
    assert next_round(4, {"a": 1, "b": 1}, {"b": 1}, {}) == {"b": 4}
    assert next_round(4, {"a": 1, "b": 1}, {"b": 1}, {}, unfinished={"a"}) == {"a": 2, "b": 2}
    assert next_round(4, {"a": 1, "b": 1}, {"b": 1}, {"a": 1}, unfinished={"a"}) == {"a": 1, "b": 3}
