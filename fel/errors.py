"""The failures FEL tools report to people and models; every message is a Spanish sentence."""


class FelError(Exception):
    """Base of the FEL errors a caller can act on (bad path, unsafe XML, nothing to render...)."""
