"""What the deployment tests read from `deploy/` and the docs: the environment example as systemd
and a shell read it, the shell commands of a documented step, and systemd unit files."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
DOCS = ROOT / "docs"
ENV_EXAMPLE = DEPLOY / "homehub.env.example"


def env_example() -> dict[str, str]:
    """NAME=value lines of deploy/homehub.env.example (quotes removed, as systemd does)."""
    values = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value.strip('"')
    return values


def section(markdown: Path, heading: str) -> str:
    """The text of the section whose heading starts with `heading`, up to the next heading of
    the same or a higher level."""
    text = markdown.read_text()
    match = re.search(rf"^(#+) {re.escape(heading)}.*$", text, re.MULTILINE)
    assert match, f"{markdown.name} has no section {heading!r}"
    level = len(match.group(1))
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def commands(markdown: Path, heading: str, block: int = 0) -> list[str]:
    """The shell commands of the `block`-th ```bash block of a section: continued lines
    joined, comments and blank lines left out."""
    blocks = re.findall(r"```bash\n(.*?)```", section(markdown, heading), re.DOTALL)
    assert len(blocks) > block, f"{markdown.name} § {heading} has no bash block {block}"
    joined = blocks[block].replace("\\\n", " ")
    lines = [re.sub(r"\s+#\s.*$", "", line).strip() for line in joined.splitlines()]
    return [" ".join(line.split()) for line in lines if line and not line.startswith("#")]


def unit(path: Path) -> dict[str, list[str]]:
    """A systemd unit file: each key's values, in order (repeated keys kept)."""
    values: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            values.setdefault(key.strip(), []).append(value.strip())
    return values
