"""The support group may view tenants' notification subscriptions and deliveries in the console (read-only)."""

from django.db import migrations

from sharding.routers import GLOBAL_TABLES

# (app_label, model, codename, name)
PERMISSIONS = [
    ("notifications", "notificationsubscription", "view_notificationsubscription", "Can view notification subscription"),
    ("notifications", "notificationevent", "view_notificationevent", "Can view notification event"),
]


def grant(apps, schema_editor):
    alias = schema_editor.connection.alias if schema_editor else "default"
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.using(alias).get_or_create(name="support")
    for app_label, model, codename, name in PERMISSIONS:
        content_type, _ = ContentType.objects.using(alias).get_or_create(app_label=app_label, model=model)
        permission, _ = Permission.objects.using(alias).get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
        group.permissions.add(permission)


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    alias = schema_editor.connection.alias
    codenames = [codename for _, _, codename, _ in PERMISSIONS]
    for group in Group.objects.using(alias).filter(name="support"):
        group.permissions.remove(*Permission.objects.using(alias).filter(codename__in=codenames))


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, revoke, hints=GLOBAL_TABLES)]
