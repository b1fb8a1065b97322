"""The names a household gives its things (a sensor, a device): what every label shares."""

from django.utils.translation import gettext

LABEL_MAX_CHARS = 100  # the rows' name and label fields


class LabelError(ValueError):
    """A label the hub will not keep; the message names the field."""


def tidy_label(label: str) -> str:
    """`label` with its spaces tidied (blank: back to the default name); LabelError when too
    long."""
    label = " ".join(label.split())
    if len(label) > LABEL_MAX_CHARS:
        raise LabelError(gettext("label: at most %(count)d characters.") % {"count": LABEL_MAX_CHARS})
    return label
