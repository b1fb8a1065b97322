"""Why a room or scene change was refused; each message names what was wrong."""


class SceneError(ValueError):
    pass


class SceneNotFound(SceneError):
    def __init__(self, name: str) -> None:
        super().__init__(f"No scene named '{name}'.")
        self.name = name
