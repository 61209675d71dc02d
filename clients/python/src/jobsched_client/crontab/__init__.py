"""Crontab files as jobsched tasks: parsing (pure), the sync (plan, apply) and the export."""
