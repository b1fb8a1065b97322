"""The mqtt app takes over its models from the `devices` app (devices 0006 lets them go):
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
                    name="MqttWorker",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("client_id", models.CharField(max_length=100, unique=True)),
                        ("broker", models.CharField(max_length=200)),
                        ("connected", models.BooleanField(default=False)),
                        ("since", models.DateTimeField(blank=True, null=True)),
                        ("reported_at", models.DateTimeField()),
                        ("counters", models.JSONField(blank=True, default=dict)),
                        ("subscriptions", models.JSONField(blank=True, default=list)),
                        ("adopted", models.JSONField(blank=True, default=list)),
                    ],
                    options={
                        "db_table": "devices_mqttworker",
                        "ordering": ["client_id"],
                    },
                ),
            ],
        ),
    ]
