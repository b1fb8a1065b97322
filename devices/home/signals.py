"""What the home tells apps above it, which it may not import."""

from django.dispatch import Signal

# Sent by `services.seed_home` inside its transaction, with `lights`: seed 000's
# (name, label, room) triples; the automations app puts each light in its room.
home_seeded = Signal()
