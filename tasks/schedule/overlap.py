"""Overlap policies: what a new run does while the task's previous runs are unfinished.

Decided by the scheduler's tick inside its one transaction (jobs/sql/scheduler.sql,
`scheduler_insert_guarded_jobs` and `scheduler_replace_waiting_jobs`), against the task's
jobs as they are then. "Unfinished" is pending (waiting for its time, or for a retry: a
retry puts the job back to pending with attempt > 0) or running (claimed, call in flight).

- ``allow`` (default): the run is created as always; runs of a task may overlap;
- ``skip``: the run is skipped (job status ``skipped``, error ``overlap:skip``) while a
  previous run is unfinished;
- ``buffer_one``: the run is skipped (``overlap:buffer_one``) while a previous run is
  already waiting (pending); behind a running call it is created, so at most one waits;
- ``replace``: the run is created and the previous runs still waiting or retrying
  (pending) are cancelled (job status ``cancelled``, error ``overlap:replaced``); a call in
  flight (running) is never interrupted.
"""

ALLOW = "allow"
SKIP = "skip"
BUFFER_ONE = "buffer_one"
REPLACE = "replace"
POLICIES = (ALLOW, SKIP, BUFFER_ONE, REPLACE)

# The reason a skipped or replaced job carries in its `error` column (jobs.models.JobStatus.SKIPPED).
REPLACED_REASON = "overlap:replaced"


def skip_reason(policy: str) -> str:
    return f"overlap:{policy}"
