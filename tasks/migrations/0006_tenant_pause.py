"""Pausing a whole tenant: its flag (who, when, why) on `tenant_limits`, and the permission.

The permission `tasks.pause_tenants` is granted to the "support" group, with
`tasks.view_tenantlimits` so its agents reach the tenant-limits pages where the
pause lives (read-only: changing limits stays with add/change_tenantlimits).
Permissions are created after all migrations on a fresh database, so they are
get_or_created here (as jobs/migrations/0005_cancel_and_discard_permissions.py).
"""

from django.db import migrations, models

from sharding.routers import GLOBAL_TABLES

# (app_label, model, codename, name)
PERMISSIONS = [
    ("tasks", "tenantlimits", "pause_tenants", "Can pause and resume tenants"),
    ("tasks", "tenantlimits", "view_tenantlimits", "Can view tenant limits"),
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
    alias = schema_editor.connection.alias
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    Permission.objects.using(alias).filter(content_type__app_label="tasks", codename="pause_tenants").delete()
    view = Permission.objects.using(alias).filter(content_type__app_label="tasks", codename="view_tenantlimits")
    for group in Group.objects.using(alias).filter(name="support"):
        group.permissions.remove(*view)


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0005_merge_0004_lifecycle_and_last_run_0004_tenant_limits"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="tenantlimits",
            options={
                "permissions": [("pause_tenants", "Can pause and resume tenants")],
                "verbose_name": "tenant limits",
                "verbose_name_plural": "tenant limits",
            },
        ),
        migrations.AddField(
            model_name="tenantlimits",
            name="paused",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="tenantlimits",
            name="paused_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="tenantlimits",
            name="paused_by",
            field=models.CharField(blank=True, db_default="", default="", max_length=150),
        ),
        migrations.AddField(
            model_name="tenantlimits",
            name="paused_reason",
            field=models.CharField(blank=True, db_default="", default="", max_length=255),
        ),
        migrations.AddIndex(
            model_name="tenantlimits",
            index=models.Index(fields=["paused", "tenant_id"], name="tenant_limits_paused_idx"),
        ),
        migrations.RunPython(grant, revoke, hints=GLOBAL_TABLES),
    ]
