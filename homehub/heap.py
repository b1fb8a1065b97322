"""Keep the garbage collector off the objects every server process loads once.

Django, the apps, Twisted and the rest leave a few hundred thousand objects that live as
long as the process. CPython's full (generation 2) collections walk all of them, and they
come more often the more objects a busy server keeps alive for a moment (writes gathered
for one commit, tasks in flight): ~50 ms each, every request in flight waiting. Freezing
what exists once the process is ready (`gc.freeze`) leaves them out of every collection;
what is created later is collected as usual.
"""

import gc


def freeze_startup_objects() -> None:
    """Collect what start-up left behind, then exempt the rest from later collections."""
    gc.collect()
    gc.freeze()
