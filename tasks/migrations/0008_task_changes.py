"""The audit trail of tasks (`task_changes`), readable by the "support" group in the console.

`tasks.view_taskchange` is get_or_created (permissions are made after all migrations on a
fresh database), as in 0006_tenant_pause.
"""

import domain.ids
import domain.tenants
from django.db import migrations, models

from sharding.routers import GLOBAL_TABLES


def grant(apps, schema_editor):
    alias = schema_editor.connection.alias if schema_editor else "default"
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.using(alias).get_or_create(name="support")
    content_type, _ = ContentType.objects.using(alias).get_or_create(app_label="tasks", model="taskchange")
    permission, _ = Permission.objects.using(alias).get_or_create(
        content_type=content_type, codename="view_taskchange", defaults={"name": "Can view task change"}
    )
    group.permissions.add(permission)


class Migration(migrations.Migration):

    dependencies = [
        ('tasks', '0007_labels'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.CreateModel(
            name='TaskChange',
            fields=[
                ('id', domain.ids.BinaryUUIDField(default=domain.ids.new_id, editable=False, primary_key=True, serialize=False)),
                ('task_id', domain.ids.BinaryUUIDField()),
                ('tenant_id', domain.tenants.TenantIdField()),
                ('action', models.CharField(choices=[('create', 'Create'), ('update', 'Update'), ('pause', 'Pause'), ('resume', 'Resume'), ('delete', 'Delete'), ('auto_pause', 'Auto Pause'), ('import', 'Import'), ('backfill', 'Backfill'), ('complete', 'Complete')], max_length=16)),
                ('actor', models.CharField(max_length=200)),
                ('at', models.DateTimeField()),
                ('version', models.PositiveIntegerField(blank=True, null=True)),
                ('changes', models.JSONField(default=list)),
            ],
            options={
                'db_table': 'task_changes',
                'indexes': [models.Index(fields=['tenant_id', 'task_id', 'id'], name='task_changes_task_idx'), models.Index(fields=['at'], name='task_changes_at_idx')],
            },
        ),
        migrations.RunPython(grant, migrations.RunPython.noop, hints=GLOBAL_TABLES),
    ]
