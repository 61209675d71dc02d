"""Task API routes (filled by the task API)."""

urlpatterns: list = []
