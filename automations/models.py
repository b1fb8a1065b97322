"""The app's models, each kept in the module of the part it belongs to."""

from automations.notifications.models import Notification, NotifyTarget

__all__ = ["Notification", "NotifyTarget"]
