"""Job API routes (filled by the job API)."""

urlpatterns: list = []
