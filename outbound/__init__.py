"""What a call sends: egress policy, headers, signature, request building, the pool, the wire, the dialer.

A leaf: it imports no app of the project (configuration is passed in), so the task API
(`tasks`), the dry run (`jobs`) and the executor (`workers`) share one rule for each part:

- `egress`: which destinations a task may reach (create time and dial time);
- `headers`, `signature`, `attempt_headers`: the request headers a task may set, and ours;
- `client`: one call (request head from `wire`, body bound and redaction from `decoding`
  and `redaction`); `transport`: the port its bytes go through; `connections`: our pool;
- `dialer`, `tenant_lookups`, `calling_tenant`: the vetted dial and its DNS lookups.
"""
