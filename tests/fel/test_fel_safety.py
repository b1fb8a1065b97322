"""Hostile input: XML bombs, external entities, oversized files, and paths that leave FEL_ROOT."""

import pytest

from mcp_endpoint.engine.tool_errors import ToolError
from tests.fel_support import call, make_root

pytestmark = pytest.mark.django_db

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<dte:GTDocumento xmlns:dte="http://www.sat.gob.gt/dte/fel/0.2.0">&lol9;</dte:GTDocumento>"""

XXE = """<?xml version="1.0"?>
<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<dte:GTDocumento xmlns:dte="http://www.sat.gob.gt/dte/fel/0.2.0">&xxe;</dte:GTDocumento>"""


@pytest.fixture
def root(tmp_path, settings):
    return make_root(tmp_path, settings)


def _validate_text(root, text: str):
    (root / "xml" / "hostile.xml").write_text(text)
    return call("fel_validate", {"xml_path": "data/xml/hostile.xml"})


def test_billion_laughs_is_refused(root):
    with pytest.raises(ToolError, match="expansión de entidades"):
        _validate_text(root, BILLION_LAUGHS)


def test_external_entity_is_refused(root):
    with pytest.raises(ToolError, match="entidades externas"):
        _validate_text(root, XXE)


def test_plain_doctype_is_refused(root):
    with pytest.raises(ToolError, match="DTD"):
        _validate_text(root, '<?xml version="1.0"?><!DOCTYPE x><x/>')


def test_malformed_and_foreign_xml(root):
    with pytest.raises(ToolError, match="mal formado"):
        _validate_text(root, "<dte:GTDocumento")
    with pytest.raises(ToolError, match="no es un documento FEL"):
        _validate_text(root, "<factura/>")
    with pytest.raises(ToolError, match=r"espacio de nombres FEL 0\.2\.0"):
        _validate_text(root, '<GTDocumento xmlns="urn:otro"/>')


def test_size_limit(root, settings):
    settings.FEL_MAX_XML_BYTES = 1000
    with pytest.raises(ToolError, match="supera el límite de 1000 bytes"):
        call("fel_validate", {"xml_path": "data/xml/fact_megaprint_45items_receptor-empresa.xml"})


def test_dotdot_escape_is_refused(root, tmp_path):
    (tmp_path / "secret.xml").write_text("<x/>")
    with pytest.raises(ToolError, match=r"sale de FEL_ROOT .* mediante «\.\.»"):
        call("fel_validate", {"xml_path": "data/xml/../../secret.xml"})


def test_absolute_path_outside_is_refused(root):
    with pytest.raises(ToolError, match="está fuera de FEL_ROOT"):
        call("fel_validate", {"xml_path": "/etc/passwd"})


def test_absolute_path_inside_is_accepted(root):
    result = call(
        "fel_validate", {"xml_path": str(root / "xml" / "fact_sat_1item-servicio_receptor-empresa.xml")}
    )
    assert result.structured["ok"] is True


def test_symlink_out_is_refused(root, tmp_path):
    outside = tmp_path / "outside.xml"
    outside.write_text("<x/>")
    (root / "xml" / "link.xml").symlink_to(outside)
    with pytest.raises(ToolError, match="enlace simbólico"):
        call("fel_validate", {"xml_path": "data/xml/link.xml"})
    (root / "evil").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="enlace simbólico"):
        call(
            "fel_render",
            {
                "xml_path": "data/xml/fact_sat_1item-servicio_receptor-empresa.xml",
                "out_path": "data/evil/x.pdf",
            },
        )
    assert not (tmp_path / "x.pdf").exists()


def test_outputs_and_logo_outside_are_refused(root):
    xml = "data/xml/fact_sat_1item-servicio_receptor-empresa.xml"
    with pytest.raises(ToolError, match="fuera de FEL_ROOT"):
        call("fel_render", {"xml_path": xml, "out_path": "/tmp/fuera.pdf"})
    with pytest.raises(ToolError, match="fuera de FEL_ROOT"):
        call("fel_render", {"xml_path": xml, "logo_path": "/etc/hostname"})
    with pytest.raises(ToolError, match=r"mediante «\.\.»"):
        call("fel_batch", {"dir_xml": "data/xml", "out_dir": "data/../fuera"})
    with pytest.raises(ToolError, match="No existe la carpeta de XML"):
        call("fel_batch", {"dir_xml": "data/nada"})
