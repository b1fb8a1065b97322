from django.core.management.base import BaseCommand, CommandError

from audit.models import Event
from devices.xiaozhi.services import PairingError, pair


class Command(BaseCommand):
    help = (
        "Bind the stock xiaozhi device showing activation CODE (as the dashboard's 'Add a device' "
        "does): its agent is registered, and the device fetches its configuration and device token "
        "from the OTA URL by itself."
    )

    def add_arguments(self, parser):
        parser.add_argument("code", help="The 6 digits the device shows and says")
        parser.add_argument("--name", default="", help="A label for people (default: the board's name)")

    def handle(self, *args, code: str, name: str, **options):
        try:
            row = pair(code, actor="pair_device", interface=Event.Interface.SYSTEM, name=name)
        except PairingError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"Device {row.device_id} bound: it connects to the hub once it has fetched its configuration "
            "(within seconds, while it shows the code)."
        )
