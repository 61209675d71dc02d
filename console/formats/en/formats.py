"""English formats, as Django's, but a date-time reads `2026-12-03 11:39:12 UTC`.

The admin shows every DateTimeField (list columns and detail pages) in DATETIME_FORMAT:
Django's own ("Dec. 3, 2026, 11:39 a.m.") drops the seconds a job's times are read in and
names no zone. TIME_ZONE is UTC, so `T` prints "UTC"; the API's ISO 8601 is not affected.
"""

DATETIME_FORMAT = "Y-m-d H:i:s T"
