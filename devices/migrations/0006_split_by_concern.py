"""The models of `devices` go to the apps that each own one concern (audit, home, agents,
telemetry, mqtt), keeping their tables and rows: the apps' 0001 migrations take them into
their state, this one lets them go from this app's (state only, nothing in the database
changes but the content types, which follow their models so that permissions given on them
and the admin's history stay attached)."""

from django.db import migrations

OWNERS = {
    "event": "audit",
    "light": "home",
    "alarm": "home",
    "person": "home",
    "agent": "agents",
    "agenttool": "agents",
    "telemetryreading": "telemetry",
    "sensor": "telemetry",
    "mqttdelivery": "telemetry",
    "rejectedmessage": "telemetry",
    "mqttworker": "mqtt",
}


def move_content_types(apps, schema_editor, *, source: bool) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model, app in OWNERS.items():
        old, new = ("devices", app) if source else (app, "devices")
        # A content type made for the new label meanwhile (a `migrate` of a fresh database
        # makes none before this runs) would clash with the moved one: the moved one wins.
        content_type.objects.using(db).filter(app_label=new, model=model).delete()
        content_type.objects.using(db).filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor) -> None:
    move_content_types(apps, schema_editor, source=True)


def backwards(apps, schema_editor) -> None:
    move_content_types(apps, schema_editor, source=False)


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("devices", "0005_mqttworker_subscriptions"),
        ("audit", "0001_initial"),
        ("home", "0001_initial"),
        ("agents", "0001_initial"),
        ("telemetry", "0001_initial"),
        ("mqtt", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="AgentTool"),
                *(
                    migrations.DeleteModel(name=name)
                    for name in (
                        "Agent",
                        "Alarm",
                        "Event",
                        "Light",
                        "MqttDelivery",
                        "MqttWorker",
                        "Person",
                        "RejectedMessage",
                        "Sensor",
                        "TelemetryReading",
                    )
                ),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
