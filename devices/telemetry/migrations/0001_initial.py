"""The telemetry app takes over its models from the `devices` app (devices 0006 lets them go):
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
                    name="MqttDelivery",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "session",
                                "packet_id",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("session", models.CharField(max_length=100)),
                        ("packet_id", models.PositiveIntegerField()),
                        ("digest", models.BigIntegerField()),
                    ],
                    options={
                        "db_table": "devices_mqttdelivery",
                    },
                ),
                migrations.CreateModel(
                    name="RejectedMessage",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("topic", models.CharField(max_length=255)),
                        ("payload", models.TextField(blank=True)),
                        ("reason", models.CharField(max_length=200)),
                        ("received_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "db_table": "devices_rejectedmessage",
                        "ordering": ["-id"],
                    },
                ),
                migrations.CreateModel(
                    name="Sensor",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("zone", models.CharField(max_length=64)),
                        ("device_type", models.CharField(max_length=64)),
                        ("device_id", models.CharField(max_length=64)),
                        ("channel", models.CharField(max_length=64)),
                        ("value", models.FloatField()),
                        ("unit", models.CharField(blank=True, max_length=16)),
                        ("measured_at", models.DateTimeField()),
                    ],
                    options={
                        "db_table": "devices_sensor",
                        "ordering": ["zone", "device_type", "device_id", "channel"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("zone", "device_type", "device_id", "channel"), name="unique_sensor"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TelemetryReading",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("zone", models.CharField(max_length=64)),
                        ("device_type", models.CharField(max_length=64)),
                        ("device_id", models.CharField(max_length=64)),
                        ("channel", models.CharField(max_length=64)),
                        ("value", models.FloatField()),
                        ("unit", models.CharField(blank=True, max_length=16)),
                        ("measured_at", models.DateTimeField()),
                        ("received_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "db_table": "devices_telemetryreading",
                        "ordering": ["-measured_at"],
                        "indexes": [
                            models.Index(
                                fields=["zone", "device_type", "device_id", "channel", "measured_at"],
                                name="telemetry_sensor_time",
                            ),
                            models.Index(fields=["measured_at"], name="telemetry_time"),
                        ],
                    },
                ),
            ],
        ),
    ]
