"""Create the "support" group: view the console and tasks, and retry dead jobs.

Permissions are normally created after all migrations (post_migrate), so on a
fresh database they do not exist yet here: get_or_create them (post_migrate then
finds them and adds nothing). Pausing/resuming tasks (tasks.change_task) is
deliberately not granted: it changes a tenant's configuration.
"""

from django.db import migrations

from sharding.routers import GLOBAL_TABLES

GROUP_NAME = "support"

# (app_label, model, codename, name)
SUPPORT_PERMISSIONS = [
    ("jobs", "deadjob", "view_deadjob", "Can view dead job"),
    ("jobs", "job", "view_job", "Can view job"),
    ("jobs", "job", "retry_dead_jobs", "Can retry dead jobs"),
    ("tasks", "task", "view_task", "Can view task"),
]


def create_support_group(apps, schema_editor):
    alias = schema_editor.connection.alias if schema_editor else "default"
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.using(alias).get_or_create(name=GROUP_NAME)
    for app_label, model, codename, name in SUPPORT_PERMISSIONS:
        content_type, _ = ContentType.objects.using(alias).get_or_create(app_label=app_label, model=model)
        permission, _ = Permission.objects.using(alias).get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
        group.permissions.add(permission)


def delete_support_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name=GROUP_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0002_deadjob"),
        ("tasks", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_support_group, delete_support_group, hints=GLOBAL_TABLES)]
