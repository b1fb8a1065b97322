"""The owner's controls over tools: the catalogue and a person's confirmation of dangerous calls."""
