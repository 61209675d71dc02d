"""The fencing token gets a column of its own: `fence`, bumped by every claim and every give-back.

Online: MariaDB 10.11 (and MySQL 8.0) add a column with a constant default as an INSTANT
change (a metadata write, no table copy, no lock held beyond the metadata lock), so this runs
on the live `jobs` table. Every row starts at 0 and only grows from there; no backfill.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0011_pending_only_due_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="fence",
            field=models.PositiveBigIntegerField(default=0, db_default=0),
        ),
    ]
