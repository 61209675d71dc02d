"""The priority range, in one place: the API's validation, the models' default and the claim's probe read it.

0 runs first, 9 last. The range is small on purpose: the claim reads each
level's due range on jobs_claim_idx (pending_priority, next_attempt_at) with
one probe per level, which only stays cheap while there are few levels.
"""

from __future__ import annotations

PRIORITIES = range(0, 10)  # 0 = first ... 9 = last
DEFAULT_PRIORITY = 5
