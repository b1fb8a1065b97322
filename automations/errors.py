"""Why a room or scene change was refused; each message names what was wrong."""


class SceneError(ValueError):
    pass


class SceneNotFound(SceneError):
    def __init__(self, name: str) -> None:
        super().__init__(f"No scene named '{name}'.")
        self.name = name


class AutomationError(ValueError):
    """An automation change refused; the message says why."""


class AutomationNotFound(AutomationError):
    def __init__(self, name: str) -> None:
        super().__init__(f"No automation named '{name}'.")
        self.name = name


class DefinitionError(AutomationError):
    """A definition that cannot be saved or run: each entry of `errors` names its field
    (`triggers[0].cron: ...`) or the reference that does not exist."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors
