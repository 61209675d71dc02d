"""The concurrency tests' one harness: the same work in several threads, released together, on real connections."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections


def at_once(work: Callable[..., Any], arguments: Sequence[tuple], *, timeout: float = 60.0) -> list[Any]:
    """`work(*args)` for each `args`, each in a thread of its own, all released by one barrier; results in order.

    Each thread closes its connections when done (Django opens one per thread). A thread's
    exception is raised here, so it fails the test instead of vanishing with its thread.
    """
    barrier = threading.Barrier(len(arguments))
    results: list[Any] = [None] * len(arguments)
    errors: list[BaseException] = []

    def run(n: int, args: tuple) -> None:
        try:
            barrier.wait(timeout=timeout)
            results[n] = work(*args)
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n, args)) for n, args in enumerate(arguments)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in threads), f"a thread still ran after {timeout} s"
    if errors:
        raise errors[0]
    return results
