"""Domain errors of the home. Their messages are the exact texts of seed 000."""


class HomeError(Exception):
    """A request the home cannot satisfy; the message is meant for the caller."""


class LightNotFound(HomeError):
    def __init__(self, name: str) -> None:
        super().__init__(f"Luz '{name}' no encontrada")
        self.name = name


class PersonNotFound(HomeError):
    def __init__(self, name: str) -> None:
        super().__init__(f"Persona '{name}' no encontrada")
        self.name = name
