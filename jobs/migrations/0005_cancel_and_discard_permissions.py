"""Cancel and discard: their permissions, granted to the "support" group (like the retry)."""

from django.db import migrations

from sharding.routers import GLOBAL_TABLES

# (app_label, model, codename, name)
PERMISSIONS = [
    ("jobs", "job", "cancel_pending_jobs", "Can cancel pending jobs"),
    ("jobs", "job", "discard_dead_jobs", "Can discard dead jobs"),
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
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.using(schema_editor.connection.alias).filter(
        content_type__app_label="jobs", codename__in=[codename for _, _, codename, _ in PERMISSIONS]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0004_job_cancelled_status"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="job",
            options={
                "permissions": [
                    ("retry_dead_jobs", "Can retry dead jobs"),
                    ("cancel_pending_jobs", "Can cancel pending jobs"),
                    ("discard_dead_jobs", "Can discard dead jobs"),
                ]
            },
        ),
        migrations.RunPython(grant, revoke, hints=GLOBAL_TABLES),
    ]
