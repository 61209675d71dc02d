"""The `jobsched` command line, built on the SDK."""
