"""tasks.lookup_slots: a tenant's lookup slots as file locks, shared by processes and freed by a crash."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from contextlib import ExitStack

import pytest

from tasks import lookup_slots
from tests.processes import wait_until

HOLD = """
import sys, time
from tasks import lookup_slots
with lookup_slots.tenant_slot(sys.argv[1], slots=int(sys.argv[2])):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def slots_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(lookup_slots.LOOKUP_SLOTS_DIR_ENV, str(tmp_path))
    lookup_slots._directory.cache_clear()
    yield tmp_path
    lookup_slots._directory.cache_clear()


def test_a_tenant_holds_at_most_its_slots_and_a_freed_one_is_taken_again(slots_dir):
    with ExitStack() as held:
        held.enter_context(lookup_slots.tenant_slot("tenant-a", slots=2))
        held.enter_context(lookup_slots.tenant_slot("tenant-a", slots=2))
        with pytest.raises(lookup_slots.NoSlotFree):
            held.enter_context(lookup_slots.tenant_slot("tenant-a", slots=2))
        with lookup_slots.tenant_slot("tenant-b", slots=2):  # another tenant's slots are its own
            pass
    with lookup_slots.tenant_slot("tenant-a", slots=2):
        pass


def test_an_error_in_the_block_frees_the_slot(slots_dir):
    with pytest.raises(RuntimeError), lookup_slots.tenant_slot("tenant-a", slots=1):
        raise RuntimeError("the lookup failed")
    with lookup_slots.tenant_slot("tenant-a", slots=1):
        pass


def test_a_slot_held_by_another_process_counts_and_its_death_frees_it(slots_dir):
    env = {**os.environ, lookup_slots.LOOKUP_SLOTS_DIR_ENV: str(slots_dir)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, "tenant-a", "1"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(lookup_slots.NoSlotFree), lookup_slots.tenant_slot("tenant-a", slots=1):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()

    def free() -> bool:
        try:
            with lookup_slots.tenant_slot("tenant-a", slots=1):
                return True
        except lookup_slots.NoSlotFree:
            return False

    wait_until(free, timeout=5, what="the killed holder's slot freed")


def test_the_files_are_named_by_a_digest_of_the_tenant_id(slots_dir):
    with lookup_slots.tenant_slot("../../etc/tenant a", slots=1):
        names = os.listdir(slots_dir)
    assert len(names) == 1 and names[0].endswith(".0") and "/" not in names[0] and " " not in names[0]


def test_without_the_variable_a_process_has_a_directory_of_its_own(monkeypatch):
    monkeypatch.delenv(lookup_slots.LOOKUP_SLOTS_DIR_ENV, raising=False)
    lookup_slots._directory.cache_clear()
    try:
        own = lookup_slots._directory()
        assert own.is_dir() and own.name.startswith("jobsched-lookups-")
    finally:
        lookup_slots._directory.cache_clear()


def test_a_removed_directory_is_made_again(slots_dir):
    shutil.rmtree(slots_dir)
    with (
        lookup_slots.tenant_slot("tenant-a", slots=1),
        pytest.raises(lookup_slots.NoSlotFree),
        lookup_slots.tenant_slot("tenant-a", slots=1),
    ):
        pass
    assert slots_dir.is_dir()


def test_a_directory_that_cannot_hold_a_slot_is_logged_and_raised(tmp_path, monkeypatch, caplog):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    monkeypatch.setenv(lookup_slots.LOOKUP_SLOTS_DIR_ENV, str(not_a_directory))
    lookup_slots._directory.cache_clear()
    try:
        with pytest.raises(NotADirectoryError), lookup_slots.tenant_slot("tenant-a", slots=1):
            pass
    finally:
        lookup_slots._directory.cache_clear()
    assert [record.event for record in caplog.records] == ["lookup_slots_unusable"]
    assert caplog.records[0].directory == str(not_a_directory)


def test_no_descriptor_is_left_open(slots_dir):
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with (
            lookup_slots.tenant_slot("tenant-a", slots=1),
            pytest.raises(lookup_slots.NoSlotFree),
            lookup_slots.tenant_slot("tenant-a", slots=1),
        ):
            pass
    assert len(os.listdir("/proc/self/fd")) == before
