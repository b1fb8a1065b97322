"""The home of seed 000, as data."""

LIGHTS = [
    # (name, label, room)
    ("salon", "Salón", "Salón"),
    ("cocina", "Cocina", "Cocina"),
    ("dormitorio", "Dormitorio", "Dormitorio"),
    ("bano", "Baño", "Baño"),
    ("garage", "Garage", "Garage"),
]
PEOPLE = ["Carlos", "Ana"]
