"""Admin for the home. State changes (lights, alarm, presence) happen only through actions
that call the services, and lights, people and agents are added, edited and deleted through
them too, so every change made here is audited with interface `admin`."""

from django.contrib import admin, messages

from devices import agent_services, services
from devices.models import (
    Agent,
    AgentTool,
    Alarm,
    Event,
    Light,
    MqttWorker,
    Person,
    RejectedMessage,
    Sensor,
    TelemetryReading,
)

ADMIN = Event.Interface.ADMIN


class AuditedAdmin(admin.ModelAdmin):
    """Adds, edits and deletes go through the services, each with its audit event."""

    def save_model(self, request, obj, form, change):
        services.save_row(
            obj,
            fields=form.changed_data,
            initial=form.initial,
            created=not change,
            actor=request.user.get_username(),
        )

    def delete_model(self, request, obj):
        services.delete_rows([obj], actor=request.user.get_username())

    def delete_queryset(self, request, queryset):
        services.delete_rows(queryset, actor=request.user.get_username())


@admin.register(Light)
class LightAdmin(AuditedAdmin):
    list_display = ["name", "label", "room", "on", "updated_at"]
    list_filter = ["on", "room"]
    search_fields = ["name", "label", "room"]
    readonly_fields = ["on", "updated_at"]
    actions = ["turn_on", "turn_off"]

    def get_readonly_fields(self, request, obj=None):
        # The slug is the tools' identifier: fixed once created.
        return [*self.readonly_fields, "name"] if obj else self.readonly_fields

    @admin.action(description="Turn selected lights on")
    def turn_on(self, request, queryset):
        self._switch(request, queryset, True)

    @admin.action(description="Turn selected lights off")
    def turn_off(self, request, queryset):
        self._switch(request, queryset, False)

    def _switch(self, request, queryset, on: bool) -> None:
        for light in queryset:
            services.set_light_state(light.name, on, actor=request.user.get_username(), interface=ADMIN)
        self.message_user(
            request, f"{len(queryset)} light(s) turned {'on' if on else 'off'}.", messages.SUCCESS
        )


@admin.register(Alarm)
class AlarmAdmin(admin.ModelAdmin):
    list_display = ["__str__", "armed", "updated_at"]
    readonly_fields = ["armed", "updated_at"]
    actions = ["arm", "disarm"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Arm the alarm")
    def arm(self, request, queryset):
        services.set_alarm_state(True, actor=request.user.get_username(), interface=ADMIN)
        self.message_user(request, "Alarm armed.", messages.SUCCESS)

    @admin.action(description="Disarm the alarm")
    def disarm(self, request, queryset):
        services.set_alarm_state(False, actor=request.user.get_username(), interface=ADMIN)
        self.message_user(request, "Alarm disarmed.", messages.SUCCESS)


@admin.register(Person)
class PersonAdmin(AuditedAdmin):
    list_display = ["name", "present", "updated_at"]
    list_filter = ["present"]
    search_fields = ["name"]
    readonly_fields = ["present", "updated_at"]
    actions = ["mark_home", "mark_away"]

    @admin.action(description="Mark selected people as home")
    def mark_home(self, request, queryset):
        self._mark(request, queryset, True)

    @admin.action(description="Mark selected people as away")
    def mark_away(self, request, queryset):
        self._mark(request, queryset, False)

    def _mark(self, request, queryset, present: bool) -> None:
        for person in queryset:
            services.set_person_presence(
                person.name, present, actor=request.user.get_username(), interface=ADMIN
            )
        self.message_user(
            request, f"{len(queryset)} person(s) marked {'home' if present else 'away'}.", messages.SUCCESS
        )


class AgentToolInline(admin.TabularInline):
    model = AgentTool
    extra = 0
    fields = ["name", "description", "available"]
    readonly_fields = ["name", "description", "available"]
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Agent)
class AgentAdmin(AuditedAdmin):
    list_display = ["agent_id", "name", "transport", "approved", "online", "last_seen"]
    list_filter = ["transport", "approved", "online"]
    search_fields = ["agent_id", "name"]
    # Approval goes through the action, so that it is audited and a waiting device starts.
    readonly_fields = ["approved", "online", "last_seen", "server_info", "capabilities", "created_at"]
    inlines = [AgentToolInline]
    actions = ["approve", "issue_token"]

    @admin.action(description="Approve selected pending agents")
    def approve(self, request, queryset):
        count = agent_services.approve_agents(
            queryset.values_list("agent_id", flat=True), actor=request.user.get_username(), interface=ADMIN
        )
        self.message_user(request, f"{count} agent(s) approved.", messages.SUCCESS)

    @admin.action(description="Issue a new device token (replaces the old one)")
    def issue_token(self, request, queryset):
        for agent in queryset.filter(transport=Agent.Transport.WS):
            _, token = agent_services.register_agent(
                agent.agent_id, transport=agent.transport, actor=request.user.get_username(), interface=ADMIN
            )
            self.message_user(
                request, f"Device token for {agent.agent_id} (shown once): {token}", messages.WARNING
            )


@admin.register(AgentTool)
class AgentToolAdmin(admin.ModelAdmin):
    list_display = ["name", "agent", "available"]
    list_filter = ["available", "agent__transport"]
    search_fields = ["name", "description", "agent__agent_id"]
    list_select_related = ["agent"]
    readonly_fields = ["agent", "name", "description", "input_schema", "available"]


@admin.register(TelemetryReading)
class TelemetryReadingAdmin(admin.ModelAdmin):
    list_display = ["measured_at", "zone", "device_type", "device_id", "channel", "value", "unit"]
    list_filter = ["zone", "device_type", "channel"]
    search_fields = ["device_id", "zone"]
    date_hierarchy = "measured_at"
    show_full_result_count = False


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the MQTT worker keeps: looked at in the admin, changed only by the worker (or,
    for rejected messages, deleted once read)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Sensor)
class SensorAdmin(ReadOnlyAdmin):
    list_display = ["zone", "device_type", "device_id", "channel", "value", "unit", "measured_at"]
    list_filter = ["zone", "device_type", "channel"]
    search_fields = ["device_id", "zone", "channel"]


@admin.register(RejectedMessage)
class RejectedMessageAdmin(ReadOnlyAdmin):
    list_display = ["received_at", "topic", "reason"]
    list_filter = ["reason"]
    search_fields = ["topic", "payload"]
    date_hierarchy = "received_at"


@admin.register(MqttWorker)
class MqttWorkerAdmin(ReadOnlyAdmin):
    list_display = ["client_id", "broker", "connected", "since", "reported_at"]


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """The audit trail is read-only, even for superusers."""

    list_display = ["at", "actor", "interface", "action", "target"]
    list_filter = ["interface", "action"]
    search_fields = ["actor", "target", "action"]
    date_hierarchy = "at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
