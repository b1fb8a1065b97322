"""Shared helpers of the FEL tests: the fixture documents, a FEL_ROOT in tmp, calling tools."""

from __future__ import annotations

import shutil
from pathlib import Path

from asgiref.sync import async_to_sync

from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tools import Caller, ToolContext, ToolResult

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fel"
REAL = sorted((FIXTURES / "real").glob("*.xml"))
BROKEN = sorted((FIXTURES / "broken").glob("*.xml"))
SAT_SAMPLE = FIXTURES / "real" / "fact_sat_1item-servicio_receptor-empresa.xml"
LONG_SAMPLE = FIXTURES / "real" / "fact_megaprint_45items_receptor-empresa.xml"


def make_root(tmp_path: Path, settings) -> Path:
    """A fresh FEL_ROOT with the samples in xml/ and broken/, and the hub's folder beside it."""
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "real", root / "xml", ignore=shutil.ignore_patterns("*.md"))
    shutil.copytree(FIXTURES / "broken", root / "broken", ignore=shutil.ignore_patterns("*.md"))
    settings.FEL_ROOT = root
    settings.BASE_DIR = tmp_path  # FEL_ROOT in the project folder, as by default: data/xml/... works
    settings.FEL_LOGO_PATH = ""
    settings.FEL_THEME = "azul"
    settings.FEL_WEBSITE = "www.ejemplo.gt"
    settings.FEL_PHONE = "+502 2222-3333"
    settings.FEL_EMAIL = "facturas@ejemplo.gt"
    settings.FEL_ACTIVE_FONT = "montserrat"
    settings.FEL_FONT_DIR_MONTSERRAT = settings.FEL_FONT_DIR_ROBOTOMONO = ""
    settings.FEL_QR_SIZE, settings.FEL_TOP_BAR_HEIGHT = 96, 10
    settings.FEL_OUTPUT_DIR = "out"
    settings.FEL_BATCH_WORKERS = 2
    return root


def call(name: str, arguments: dict, progress: list | None = None) -> ToolResult:
    """Call a registered tool as an MCP session would (errors come back as ToolError)."""

    async def record(done, total, message):
        if progress is not None:
            progress.append((done, total, message))

    ctx = ToolContext(caller=Caller(actor="tester", interface="mcp-stdio"), send_progress=record)
    return async_to_sync(registry.get(name).call)(arguments, ctx)
