"""The executor: claim due jobs, fire each on its second, record results behind the fence.

Modules: `results` (deciding what an attempt's outcome means), `backoff` (the
retry rule), `http` (the outbound client), `dialer` (the dial-time egress
check), `secrets` (credentials named by `secret_ref`),
`runner` (the asyncio process that ties them together). The claim and the
result writes are statements on `jobs`, so they are `jobs.queue.claim_due` and
`jobs.queue.record_results`.
"""
