from django.core.management.base import BaseCommand

from devices.home.services import seed_home


class Command(BaseCommand):
    help = (
        "Create seed 000's home (lights salon, cocina, dormitorio, bano, garage, all off; "
        "alarm disarmed; Carlos and Ana away). Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--reset", action="store_true", help="Also switch everything back to the start state."
        )

    def handle(self, *args, reset: bool = False, **options):
        created = seed_home(reset=reset)
        summary = ", ".join(f"{count} {kind}" for kind, count in created.items())
        self.stdout.write(self.style.SUCCESS(f"Home ready (created: {summary})."))
