"""Seed 002's terminal examples (printf ... | server), with the fixture invoices, through
`manage.py mcp_stdio` as a real subprocess."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fel_support import BROKEN, FIXTURES, SAT_SAMPLE

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.live

INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
LIST = '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'


def tool_call(request_id: int, name: str, arguments: dict) -> str:
    params = {"name": name, "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def printf_pipe(env, *lines: str) -> list[dict]:
    """`printf '%s\\n' ... | python manage.py mcp_stdio`, as seed 002 shows."""
    script = "printf '%s\\n' " + " ".join("'" + line.replace("'", "'\\''") + "'" for line in lines)
    proc = subprocess.run(
        f"{script} | {sys.executable} manage.py mcp_stdio",
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture
def fel_env(live_env, tmp_path):
    root = tmp_path / "data"
    (root / "xml").mkdir(parents=True)
    shutil.copy(SAT_SAMPLE, root / "xml" / "factura.xml")
    shutil.copy(BROKEN[0], root / "xml" / BROKEN[0].name)
    return {**live_env, "FEL_ROOT": str(root), "FEL_BATCH_WORKERS": "2"}, root


def result_json(message: dict) -> dict:
    return json.loads(message["result"]["content"][0]["text"])


def test_7_1_initialize_and_list(fel_env):
    env, _ = fel_env
    init, listed = printf_pipe(env, INIT, LIST)
    names = {t["name"] for t in listed["result"]["tools"]}
    assert {"fel_validate", "fel_render", "fel_batch"} <= names
    assert init["result"]["serverInfo"]["name"] == "homehub"


def test_7_2_validate(fel_env):
    env, root = fel_env
    out = printf_pipe(
        env, INIT, LIST, tool_call(3, "fel_validate", {"xml_path": str(root / "xml/factura.xml")})
    )
    validated = result_json(out[2])
    assert validated["ok"] is True and validated["issues"] == []
    assert set(validated["totals"]) == {"subtotal", "iva", "total"}
    assert out[2]["result"]["structuredContent"] == validated
    broken = printf_pipe(
        env, INIT, tool_call(3, "fel_validate", {"xml_path": str(root / "xml" / BROKEN[0].name)})
    )
    assert result_json(broken[1])["ok"] is False and result_json(broken[1])["issues"]


def test_7_3_render(fel_env):
    env, root = fel_env
    arguments = {"xml_path": str(root / "xml/factura.xml"), "out_path": str(root / "out/factura.pdf")}
    out = printf_pipe(env, INIT, LIST, tool_call(3, "fel_render", arguments))
    rendered = result_json(out[2])
    assert rendered["ok"] is True
    assert Path(rendered["pdf_path"]).name == "factura.pdf"
    assert (root / "out/factura.pdf").read_bytes().startswith(b"%PDF")


def test_7_4_batch_and_manifest(fel_env):
    env, root = fel_env
    arguments = {"dir_xml": str(root / "xml"), "out_dir": str(root / "out")}
    out = printf_pipe(env, INIT, LIST, tool_call(3, "fel_batch", arguments))
    batch = result_json(out[2])
    assert batch["ok"] is True and batch["count"] == 2
    manifest = json.loads((root / "out/manifest.json").read_text())
    assert (manifest["count"], manifest["valid"], manifest["invalid"]) == (2, 1, 1)
    by_name = {Path(entry["xml"]).name: entry for entry in manifest["files"]}
    assert by_name["factura.xml"]["ok"] is True and len(by_name["factura.xml"]["pdf_sha256"]) == 64
    assert by_name[BROKEN[0].name]["ok"] is False and by_name[BROKEN[0].name]["issues"]
    assert (root / "out" / "factura.pdf").exists()


def test_paths_outside_fel_root_are_refused(fel_env):
    env, _ = fel_env
    outside = str(FIXTURES / "real" / SAT_SAMPLE.name)
    out = printf_pipe(env, INIT, tool_call(2, "fel_validate", {"xml_path": outside}))
    assert out[1]["result"]["isError"] is True
    assert (
        "FEL_ROOT" in out[1]["result"]["content"][0]["text"]
        or "fuera" in out[1]["result"]["content"][0]["text"]
    )


def test_relative_paths_resolve_against_fel_root(fel_env):
    """Seed 002's calls with FEL_ROOT outside the project, as a deployment sets it."""
    env, root = fel_env
    out = printf_pipe(
        env,
        INIT,
        tool_call(2, "fel_validate", {"xml_path": "xml/factura.xml"}),
        tool_call(3, "fel_render", {"xml_path": "xml/factura.xml", "out_path": "out/factura.pdf"}),
        tool_call(4, "fel_batch", {"dir_xml": "xml", "out_dir": "lote"}),
    )
    assert result_json(out[1])["ok"] is True
    assert result_json(out[2]) == {"ok": True, "pdf_path": "out/factura.pdf"}
    assert (root / "out/factura.pdf").read_bytes().startswith(b"%PDF")
    batch = result_json(out[3])
    assert (batch["count"], batch["out_dir"], batch["manifest_path"]) == (2, "lote", "lote/manifest.json")
    assert (root / "lote" / "factura.pdf").exists()
