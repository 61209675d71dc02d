"""A history store that is always down, for end-to-end tests (HISTORY_BACKEND=<this dotted path>)."""

from history.base import HistoryStore, HistoryUnavailable


class UnavailableHistoryStore(HistoryStore):
    def write_many(self, records):
        raise HistoryUnavailable("the test store is down")

    def get(self, tenant_id, job_id):
        raise HistoryUnavailable("the test store is down")

    def page(self, tenant_id, task_id, cursor, limit):
        raise HistoryUnavailable("the test store is down")
