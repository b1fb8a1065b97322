"""The agents app takes over its models from the `devices` app (devices 0006 lets them go):
state only, the tables (named `devices_...`) stay as they are, with every row."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("devices", "0005_mqttworker_subscriptions")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Agent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("agent_id", models.CharField(max_length=64, unique=True)),
                        ("name", models.CharField(blank=True, max_length=100)),
                        (
                            "transport",
                            models.CharField(
                                choices=[("ws", "WebSocket"), ("mqtt", "MQTT")], default="ws", max_length=8
                            ),
                        ),
                        ("approved", models.BooleanField(default=True)),
                        ("online", models.BooleanField(default=False)),
                        ("last_seen", models.DateTimeField(blank=True, null=True)),
                        ("server_info", models.JSONField(blank=True, default=dict)),
                        ("capabilities", models.JSONField(blank=True, default=dict)),
                        ("token_hash", models.CharField(blank=True, editable=False, max_length=128)),
                        (
                            "call_timeout",
                            models.FloatField(default=30.0, help_text="Seconds to wait for a tool call."),
                        ),
                        ("session_id", models.CharField(blank=True, editable=False, max_length=64)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "db_table": "devices_agent",
                        "ordering": ["agent_id"],
                    },
                ),
                migrations.CreateModel(
                    name="AgentTool",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200)),
                        ("description", models.TextField(blank=True)),
                        ("input_schema", models.JSONField(blank=True, default=dict)),
                        ("available", models.BooleanField(default=True)),
                        (
                            "agent",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="tools",
                                to="agents.agent",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "devices_agenttool",
                        "ordering": ["agent_id", "id"],
                        "constraints": [
                            models.UniqueConstraint(fields=("agent", "name"), name="unique_tool_per_agent")
                        ],
                    },
                ),
            ],
        ),
    ]
