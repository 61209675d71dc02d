"""The executor: claim due jobs, fire each on its second, record results behind the fence.

Its parts along a job's path: `claimer` (claims, pacing, prefetch), `timetable` (one
timer per due instant), `call_slots` (calls in flight, give-backs of jobs that waited too
long), `result_writer` (batched result writes and give-backs); `runner` composes them.
Beside them: `credentials` (each call's secret and signing keys, from `secrets` and
`signing`), `results` and `backoff` (what an outcome means), `clock` (the database's
clock). The call itself is `outbound.client`; the statements are `jobs.queue`'s.
"""
