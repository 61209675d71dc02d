from django.apps import AppConfig


class CalendarsConfig(AppConfig):
    name = "tasks.calendars"
    label = "calendars"
    verbose_name = "Calendars"
