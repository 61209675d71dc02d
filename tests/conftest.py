"""Fixtures shared by every app's tests."""
