"""docs/ARCHITECTURE.md's layer diagram says what the import-linter contract in pyproject.toml
enforces: a newcomer reading the page learns the layers `make lint` checks, not older ones."""

import re
import tomllib

from tests.hub_support import ROOT


def _layers(lines: list[str]) -> list[set[str]]:
    return [{name.strip() for name in line.split("|") if name.strip()} for line in lines]


def contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return _layers(layers)


def documented_layers() -> list[set[str]]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("## Which way the imports go", 1)[1]
    diagram = re.search(r"```\n(.*?)```", section, re.S)
    assert diagram, "the layer diagram (a fenced block) is missing"
    lines = [re.sub(r"\(.*\)", "", line) for line in diagram.group(1).splitlines() if line.strip()]
    return _layers(lines)


def test_the_documented_layers_are_the_enforced_ones():
    assert documented_layers() == contract_layers()


def test_every_root_package_is_documented_as_an_app():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    for package in config["tool"]["importlinter"]["root_packages"]:
        assert f"| `{package}/` |" in text, package
