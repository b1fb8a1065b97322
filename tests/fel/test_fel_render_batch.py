"""fel_render and fel_batch: the PDF's content and pagination, the manifest, progress."""

import asyncio
import hashlib
import json

import pytest
from asgiref.sync import async_to_sync
from PIL import Image
from pypdf import PdfReader

from fel.models import Invoice
from mcp_endpoint.engine.tool_errors import ToolError
from tests.fel_support import call, make_root
from tests.mcp_helpers import Peer

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path, settings):
    return make_root(tmp_path, settings)


def _text(pdf_path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(pdf_path).pages)


def test_render_default_output_and_extractable_text(root):
    result = call("fel_render", {"xml_path": "data/xml/fact_sat_1item-servicio_receptor-empresa.xml"})
    assert result.structured == {
        "ok": True,
        "pdf_path": "data/out/fact_sat_1item-servicio_receptor-empresa.pdf",
    }
    pdf = root / "out" / "fact_sat_1item-servicio_receptor-empresa.pdf"
    reader = PdfReader(pdf)
    assert len(reader.pages) == 1
    text = _text(pdf)
    needles = [
        *("9E52C854-E18B-45C1-A77B-C87CF42F35F1", "110062647", "107209306", "8,971.86", "16693949"),
        *("OCHO MIL NOVECIENTOS SETENTA Y UN QUETZALES CON 86/100", "Sujeto a retención definitiva ISR"),
        *("www.ejemplo.gt", "FACTURA"),
    ]
    for needle in needles:
        assert needle in text, needle
    assert "monto=8971.86" in text.replace("\n", "")  # the URL wraps wherever the width runs out
    invoice = Invoice.objects.get()
    assert invoice.pdf_path == "out/fact_sat_1item-servicio_receptor-empresa.pdf"
    assert invoice.pdf_sha256 == hashlib.sha256(pdf.read_bytes()).hexdigest()


def test_45_items_paginate_with_header_repeated(root):
    call(
        "fel_render",
        {"xml_path": "data/xml/fact_megaprint_45items_receptor-empresa.xml", "out_path": "data/o/l.pdf"},
    )
    pages = [page.extract_text() for page in PdfReader(root / "o" / "l.pdf").pages]
    assert len(pages) >= 2
    assert all(
        "Descripción" in page and "P. unitario" in page
        for page in pages
        if "Cuchillas" in page or "[UNI]" in page
    )
    assert sum(page.count("[UNI]") for page in pages) == 45
    last = pages[-1]
    assert "22,695.20" in last and "VEINTIDÓS MIL SEISCIENTOS NOVENTA Y CINCO QUETZALES CON 20/100" in last
    assert f"Página {len(pages)} de {len(pages)}" in last


def test_logo_and_theme_overrides(root):
    logo = root / "logos" / "logo.png"
    logo.parent.mkdir()
    Image.new("RGB", (120, 60), "#C0392B").save(logo)
    xml = "data/xml/fpeq_sat_1item_pequeno-contribuyente-sin-iva.xml"
    arguments = {
        "xml_path": xml,
        "logo_path": "data/logos/logo.png",
        "theme": "verde",
        "out_path": "data/out/f.pdf",
    }
    result = call("fel_render", arguments)
    assert result.structured["ok"] is True
    assert "No genera derecho a crédito fiscal" in _text(root / "out" / "f.pdf")
    with pytest.raises(ToolError, match="Tema desconocido"):
        call(
            "fel_render",
            {"xml_path": "data/xml/fpeq_sat_1item_pequeno-contribuyente-sin-iva.xml", "theme": "rosa"},
        )
    (root / "logos" / "roto.png").write_bytes(b"not an image")
    with pytest.raises(ToolError, match="no es una imagen legible"):
        call(
            "fel_render",
            {
                "xml_path": "data/xml/fpeq_sat_1item_pequeno-contribuyente-sin-iva.xml",
                "logo_path": "data/logos/roto.png",
            },
        )


def test_render_needs_the_qr_fields(root):
    with pytest.raises(ToolError, match="falta Emisor/@NITEmisor"):
        call("fel_render", {"xml_path": "data/broken/broken_sin-nitemisor.xml"})


def test_render_output_must_be_pdf(root):
    with pytest.raises(ToolError, match=r"debe terminar en \.pdf"):
        call(
            "fel_render",
            {"xml_path": "data/xml/fact_sat_1item-servicio_receptor-empresa.xml", "out_path": "data/a.txt"},
        )


def test_batch_with_a_broken_file(root, settings):
    folder = root / "lote"
    folder.mkdir()
    for name in (
        "fact_sat_1item-servicio_receptor-empresa.xml",
        "fact_megaprint_45items_receptor-empresa.xml",
    ):
        (folder / name).write_bytes((root / "xml" / name).read_bytes())
    (folder / "roto.xml").write_text("<dte:GTDocumento")
    (folder / "notas.txt").write_text("ignored")
    progress: list = []
    result = call("fel_batch", {"dir_xml": "data/lote", "out_dir": "data/lote_out"}, progress)
    assert result.structured == {
        "ok": True,
        "count": 3,
        "out_dir": "data/lote_out",
        "manifest_path": "data/lote_out/manifest.json",
        "invalid": 1,
    }
    manifest = json.loads((root / "lote_out" / "manifest.json").read_text())
    assert manifest["count"] == 3 and manifest["valid"] == 2 and manifest["invalid"] == 1
    by_name = {entry["xml"].rsplit("/", 1)[1]: entry for entry in manifest["files"]}
    broken = by_name["roto.xml"]
    assert broken["ok"] is False and broken["pdf"] is None and "mal formado" in broken["error"]
    assert broken["xml_sha256"] == hashlib.sha256(b"<dte:GTDocumento").hexdigest()
    good = by_name["fact_sat_1item-servicio_receptor-empresa.xml"]
    assert good["ok"] is True and good["issues"] == []
    assert good["totals"] == {"subtotal": "8010.59", "iva": "961.27", "total": "8971.86"}
    assert good["pdf"] == "data/lote_out/fact_sat_1item-servicio_receptor-empresa.pdf"
    assert good["pdf_sha256"] == hashlib.sha256((root / good["pdf"][5:]).read_bytes()).hexdigest()
    assert good["authorization_number"] == "9E52C854-E18B-45C1-A77B-C87CF42F35F1"
    assert [p[:2] for p in progress] == [(1, 3), (2, 3), (3, 3)]
    assert Invoice.objects.count() == 2


def test_batch_of_the_samples_in_process(root, settings):
    settings.FEL_BATCH_WORKERS = 1
    result = call("fel_batch", {"dir_xml": "data/broken"})
    assert result.structured["count"] == 3 and result.structured["invalid"] == 3
    assert result.structured["out_dir"] == "data/out"
    manifest = json.loads((root / "out" / "manifest.json").read_text())
    no_pdf = [e for e in manifest["files"] if e["pdf"] is None]
    assert len(no_pdf) == 1 and "NITEmisor" in " ".join(no_pdf[0]["issues"])


def _batch_over_mcp(meta_or_level: dict | str | None) -> tuple[dict, list[dict]]:
    """fel_batch of data/lote through an MCP session: a handshake-era client that set the level
    (str), a stateless request's `_meta` (dict), or a client that asked for no logs (None).
    The answer and the `notifications/message` it heard."""

    async def scenario():
        peer = Peer()
        params: dict = {}
        if isinstance(meta_or_level, dict):
            params["_meta"] = meta_or_level
        else:
            await peer.initialize()
            if meta_or_level:
                await peer.request("logging/setLevel", {"level": meta_or_level})
        answer = await peer.call("fel_batch", {"dir_xml": "data/lote", "out_dir": "data/lote_out"}, **params)
        return answer, [m["params"] for m in peer.sent if m.get("method") == "notifications/message"]

    return async_to_sync(scenario)()


def test_a_batch_logs_each_file_and_its_problems_at_the_level_asked(root, settings):
    settings.FEL_BATCH_WORKERS = 1
    folder = root / "lote"
    folder.mkdir()
    good = "fact_sat_1item-servicio_receptor-empresa.xml"
    (folder / good).write_bytes((root / "xml" / good).read_bytes())
    (folder / "roto.xml").write_text("<dte:GTDocumento")

    answer, logs = _batch_over_mcp("debug")
    assert answer["result"]["isError"] is False
    assert {log["logger"] for log in logs} == {"homehub.fel"}
    assert [(log["level"], log["data"]["message"]) for log in logs] == [
        ("info", "Lote iniciado"),
        ("debug", "Procesado"),
        ("warning", "Con inconsistencias"),
        ("info", "Lote terminado"),
    ]
    assert logs[1]["data"]["xml"] == f"data/lote/{good}"
    assert logs[2]["data"]["xml"] == "data/lote/roto.xml" and "mal formado" in " ".join(
        logs[2]["data"]["issues"]
    )
    assert logs[3]["data"] == {
        "message": "Lote terminado",
        "count": 2,
        "invalid": 1,
        "manifest_path": "data/lote_out/manifest.json",
    }
    assert [log["data"]["message"] for log in _batch_over_mcp("warning")[1]] == ["Con inconsistencias"]
    assert _batch_over_mcp(None)[1] == []
    # A stateless request asks for its own level in its _meta, or for none.
    stateless = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    assert len(_batch_over_mcp({**stateless, "io.modelcontextprotocol/logLevel": "info"})[1]) == 3
    assert _batch_over_mcp(stateless)[1] == []


def test_a_client_that_declares_the_tasks_extension_gets_the_batch_as_a_task(root, settings, inline_batches):
    """The task's batch is a job on the Tasks framework (run at once here): the task ends with
    what the in-call tool returns (tests/fel/test_fel_batch_task.py: a job run elsewhere)."""
    settings.FEL_BATCH_WORKERS = 1
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    }

    async def scenario():
        peer = Peer()
        created = await peer.call("fel_batch", {"dir_xml": "data/broken"}, _meta=meta)
        assert created["result"]["resultType"] == "task"
        task_id = created["result"]["taskId"]
        for _ in range(300):
            task = (await peer.request("tasks/get", {"taskId": task_id, "_meta": meta}))["result"]
            if task["status"] != "working":
                return task
            await asyncio.sleep(0.05)
        raise AssertionError("the batch's task never finished")

    task = async_to_sync(scenario)()
    assert task["status"] == "completed"
    assert task["result"]["structuredContent"] == call("fel_batch", {"dir_xml": "data/broken"}).structured
    assert task["result"]["structuredContent"]["count"] == 3
    assert json.loads((root / "out" / "manifest.json").read_text())["files"]


def test_pdf_is_a_real_pdf_image(root, tmp_path):
    """The first page rasterises (what a person would see) when poppler is installed."""
    import shutil
    import subprocess

    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm not installed")
    call(
        "fel_render",
        {"xml_path": "data/xml/fact_megaprint_3items_redondeo-2-decimales.xml", "out_path": "data/p.pdf"},
    )
    command = ["pdftoppm", "-png", "-r", "100", "-singlefile", str(root / "p.pdf"), str(tmp_path / "page")]
    subprocess.run(command, check=True)
    assert Image.open(tmp_path / "page.png").size[0] > 200
    if shutil.which("zbarimg"):  # the QR holds SAT's verification URL and scans
        scanned = subprocess.run(
            ["zbarimg", "-q", "--raw", str(tmp_path / "page.png")], capture_output=True, text=True
        )
        assert (
            "numero=C3451378-3785-463C-ADE5-6A428D6B3939&emisor=75423952&receptor=CF&monto=84.00"
            in scanned.stdout
        )
