"""The audit app takes over its models from the `devices` app (devices 0006 lets them go):
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
                    name="Event",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("actor", models.CharField(blank=True, max_length=150)),
                        (
                            "interface",
                            models.CharField(
                                choices=[
                                    ("dashboard", "Dashboard"),
                                    ("admin", "Admin"),
                                    ("rest", "Rest"),
                                    ("mcp-http", "Mcp Http"),
                                    ("mcp-ws", "Mcp Ws"),
                                    ("mcp-stdio", "Mcp Stdio"),
                                    ("mqtt", "Mqtt"),
                                    ("device", "Device"),
                                    ("system", "System"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("action", models.CharField(max_length=64)),
                        ("target", models.CharField(blank=True, max_length=200)),
                        ("before", models.JSONField(blank=True, null=True)),
                        ("after", models.JSONField(blank=True, null=True)),
                    ],
                    options={
                        "db_table": "devices_event",
                        "ordering": ["-at", "-id"],
                        "indexes": [
                            models.Index(fields=["interface", "-at"], name="event_interface_time"),
                            models.Index(fields=["target", "-at"], name="event_target_time"),
                        ],
                    },
                ),
            ],
        ),
    ]
