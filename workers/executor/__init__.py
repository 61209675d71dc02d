"""The executor: claim due jobs, fire each on its second, record results behind the fence.

Modules: `claims` (the claim transaction), `results` (deciding and writing
results), `backoff` (the retry rule), `http` (the outbound client), `dialer`
(the dial-time egress check), `secrets` (credentials named by `secret_ref`),
`runner` (the asyncio process that ties them together).
"""
