"""A new agent is pending until the owner approves it (discovery announcements create pending
agents). Only the default changes: every existing agent keeps its approval as it is."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0003_agenttool_annotations"),
    ]

    operations = [
        migrations.AlterField(
            model_name="agent",
            name="approved",
            field=models.BooleanField(default=False),
        ),
    ]
