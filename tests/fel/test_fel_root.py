"""FEL paths in a deployment: FEL_ROOT outside the project folder (e.g. /var/lib/homehub/fel),
relative paths taken inside it, results spelled so they can be given back, escapes refused."""

import json

import pytest

from audit.models import Event
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tool_errors import ToolError
from tests.fel_support import SAT_SAMPLE, call, make_root

pytestmark = pytest.mark.django_db

SAT = SAT_SAMPLE.name


@pytest.fixture
def root(tmp_path, settings):
    """FEL_ROOT at <tmp>/data, the project folder at <tmp>/project: neither inside the other."""
    root = make_root(tmp_path, settings)
    settings.BASE_DIR = tmp_path / "project"
    settings.BASE_DIR.mkdir()
    return root


def test_relative_paths_are_read_inside_fel_root(root):
    assert call("fel_validate", {"xml_path": f"xml/{SAT}"}).structured["ok"] is True
    rendered = call("fel_render", {"xml_path": f"xml/{SAT}", "out_path": "pdfs/f.pdf"}).structured
    assert rendered == {"ok": True, "pdf_path": "pdfs/f.pdf"}
    assert (root / "pdfs" / "f.pdf").read_bytes().startswith(b"%PDF")
    default = call("fel_render", {"xml_path": f"xml/{SAT}"}).structured
    assert default["pdf_path"] == f"out/{SAT[:-4]}.pdf" and (root / default["pdf_path"]).is_file()


def test_batch_results_name_paths_that_work_when_given_back(root):
    result = call("fel_batch", {"dir_xml": "broken", "out_dir": "lote"}).structured
    assert (result["out_dir"], result["manifest_path"]) == ("lote", "lote/manifest.json")
    manifest = json.loads((root / result["manifest_path"]).read_text())
    assert manifest["dir_xml"] == "broken"
    # one audit event for the batch (the files' own are `fel.batch.file`, out of the Activity)
    summary = Event.objects.get(action="fel.batch")
    assert (summary.target, summary.after["count"]) == ("folder:broken", manifest["count"])
    entry = next(e for e in manifest["files"] if e["pdf"])
    assert entry["xml"].startswith("broken/") and entry["pdf"].startswith("lote/")
    again = call("fel_validate", {"xml_path": entry["xml"]}).structured
    assert again["ok"] is False and again["issues"] == entry["issues"]


def test_the_project_folder_spelling_is_not_special_outside_it(root):
    with pytest.raises(
        ToolError, match=rf"No existe el archivo de XML: data/xml/{SAT} \(se buscó en {root}/data"
    ):
        call("fel_validate", {"xml_path": f"data/xml/{SAT}"})


def test_escapes_are_still_refused(root, tmp_path):
    (tmp_path / "secret.xml").write_bytes(SAT_SAMPLE.read_bytes())
    (tmp_path / "project" / "inside-project.xml").write_bytes(SAT_SAMPLE.read_bytes())
    with pytest.raises(ToolError, match=r"sale de FEL_ROOT .* mediante «\.\.»"):
        call("fel_validate", {"xml_path": "../secret.xml"})
    with pytest.raises(ToolError, match=r"mediante «\.\.»"):
        call("fel_validate", {"xml_path": "xml/../../project/inside-project.xml"})
    with pytest.raises(ToolError, match="está fuera de FEL_ROOT"):
        call("fel_validate", {"xml_path": str(tmp_path / "project" / "inside-project.xml")})
    (root / "xml" / "link.xml").symlink_to(tmp_path / "secret.xml")
    with pytest.raises(ToolError, match="enlace simbólico"):
        call("fel_validate", {"xml_path": "xml/link.xml"})
    with pytest.raises(ToolError, match=r"mediante «\.\.»"):
        call("fel_render", {"xml_path": f"xml/{SAT}", "out_path": "../fuera.pdf"})
    with pytest.raises(ToolError, match=r"mediante «\.\.»"):
        call("fel_batch", {"dir_xml": "xml", "out_dir": "../fuera"})
    assert not (tmp_path / "fuera.pdf").exists() and not (tmp_path / "fuera").exists()


def test_default_root_inside_the_project_takes_both_spellings(tmp_path, settings):
    """With FEL_ROOT at <project>/data (the default layout), seed 002's `data/xml/...` and the
    FEL_ROOT-relative `xml/...` name the same file; results keep seed 002's spelling."""
    root = make_root(tmp_path, settings)  # BASE_DIR is tmp_path: FEL_ROOT is its data/
    assert call("fel_validate", {"xml_path": f"data/xml/{SAT}"}).structured["ok"] is True
    assert call("fel_validate", {"xml_path": f"xml/{SAT}"}).structured["ok"] is True
    rendered = call("fel_render", {"xml_path": f"xml/{SAT}", "out_path": "out/a.pdf"}).structured
    assert rendered["pdf_path"] == "data/out/a.pdf" and (root / "out" / "a.pdf").is_file()
    with pytest.raises(ToolError, match=r"mediante «\.\.»"):
        call("fel_validate", {"xml_path": "data/../secret.xml"})


def test_tool_descriptions_say_paths_are_relative_to_fel_root():
    for name, field in [("fel_validate", "xml_path"), ("fel_render", "out_path"), ("fel_batch", "dir_xml")]:
        schema = registry.get(name).definition()["inputSchema"]
        assert "relativ" in schema["properties"][field]["description"]
        assert "FEL_ROOT" in schema["properties"][field]["description"]
