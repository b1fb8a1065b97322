"""Admin for ESP32 agents: approval and device tokens through the services, adds, edits and
deletes audited; tools are read-only (they come from the device)."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Model

from audit.admin import AuditedAdmin
from audit.models import Event
from devices.agents import agent_channels, selectors
from devices.agents import services as agent_services
from devices.agents.models import Agent, AgentTool

ADMIN = Event.Interface.ADMIN


class AgentToolInline(admin.TabularInline):
    model = AgentTool
    extra = 0
    fields = ["name", "description", "available"]
    readonly_fields = ["name", "description", "available"]
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class AgentForm(forms.ModelForm):
    class Meta:
        model = Agent
        fields = ["agent_id"]  # the admin adds the rest it shows

    def clean_agent_id(self) -> str:
        """A new id whose tools would take another agent's names is refused, naming it."""
        agent_id: str = self.cleaned_data["agent_id"]
        if self.instance.pk is None or agent_id != self.instance.agent_id:
            other = selectors.clashing_agent(agent_id)
            if other is not None and other != self.instance.agent_id:
                raise forms.ValidationError(str(agent_services.AgentIdClash(agent_id, other)))
        return agent_id


@admin.register(Agent)
class AgentAdmin(AuditedAdmin):
    form = AgentForm
    list_display = ["agent_id", "name", "transport", "approved", "online", "connects_on_demand", "last_seen"]
    list_filter = ["transport", "approved", "online", "connects_on_demand"]
    search_fields = ["agent_id", "name"]
    # Approval goes through the action, so that it is audited and a waiting device starts.
    readonly_fields = ["approved", "online", "last_seen", "server_info", "capabilities", "created_at"]
    inlines = [AgentToolInline]
    actions = ["approve", "issue_token"]

    def save_model(self, request, obj: Model, form, change) -> None:
        if not change and isinstance(obj, Agent):
            obj.approved = True  # the owner adding it is the owner's approval
        super().save_model(request, obj, form, change)

    def audit_target(self, row: Any) -> tuple[str, dict[str, Any]]:
        agent_channels.announce_agent_change_on_commit(row.agent_id)
        return f"agent:{row.agent_id}", {"kind": "agent", "agent_id": row.agent_id}

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
