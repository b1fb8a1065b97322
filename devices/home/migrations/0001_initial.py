"""The home app takes over its models from the `devices` app (devices 0006 lets them go):
state only, the tables (named `devices_...`) stay as they are, with every row."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("devices", "0005_mqttworker_subscriptions")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Alarm",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("armed", models.BooleanField(default=False)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "devices_alarm",
                    },
                ),
                migrations.CreateModel(
                    name="Light",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "name",
                            models.SlugField(
                                help_text="Stable id used by tools, e.g. 'salon'.", max_length=64, unique=True
                            ),
                        ),
                        ("label", models.CharField(blank=True, max_length=100)),
                        ("room", models.CharField(blank=True, max_length=100)),
                        ("on", models.BooleanField(default=False)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "devices_light",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="Person",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=100, unique=True)),
                        ("present", models.BooleanField(default=False)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name_plural": "people",
                        "db_table": "devices_person",
                        "ordering": ["id"],
                    },
                ),
            ],
        ),
    ]
