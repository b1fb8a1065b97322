"""Seed 002's font and layout settings: the family embedded in the PDF, accented Spanish that
prints and extracts, a clear error for a missing or broken font, the QR and top bar sizes."""

import shutil
import subprocess

import pytest
from PIL import Image
from pypdf import PdfReader
from reportlab.pdfbase.ttfonts import TTFontFile

from fel.processing import process
from fel.render import Branding
from fel.themes import get_theme
from fel.typefaces import FONT_DIR, Typeface
from mcp_endpoint.engine.tool_errors import ToolError
from tests.fel_support import SAT_SAMPLE, call, make_root

pytestmark = pytest.mark.django_db

SAT = f"data/xml/{SAT_SAMPLE.name}"
SPANISH = "¿Pingüino? ¡Año nuevo! Ñandú, acción, camión, país, lápiz, Q 1.00"


@pytest.fixture
def root(tmp_path, settings):
    return make_root(tmp_path, settings)


def render(root, name: str = "f.pdf", xml: str = SAT) -> PdfReader:
    call("fel_render", {"xml_path": xml, "out_path": f"data/out/{name}"})
    return PdfReader(root / "out" / name)


def fonts(reader: PdfReader) -> dict[str, bool]:
    """Every font the pages use: its name (without the subset tag) and whether it is embedded."""
    found = {}
    for page in reader.pages:
        for ref in page["/Resources"]["/Font"].values():
            font = ref.get_object()
            descriptor = font.get("/FontDescriptor")
            embedded = descriptor is not None and "/FontFile2" in descriptor.get_object()
            found[str(font["/BaseFont"]).lstrip("/").split("+")[-1]] = embedded
    return found


def positions(reader: PdfReader) -> dict[str, tuple[float, float]]:
    """Where each line of text of the first page starts (x, y in points)."""
    spots = {}

    def visit(text, cm, tm, font, size):
        if text.strip():
            spots.setdefault(text.strip(), (tm[4], tm[5]))

    reader.pages[0].extract_text(visitor_text=visit)
    return spots


def with_description(root, text: str) -> str:
    xml = SAT_SAMPLE.read_text(encoding="utf-8")
    start = xml.index("<dte:Descripcion>") + len("<dte:Descripcion>")
    end = xml.index("</dte:Descripcion>")
    (root / "xml" / "acentos.xml").write_text(xml[:start] + text + xml[end:], encoding="utf-8")
    return "data/xml/acentos.xml"


def test_montserrat_is_embedded_by_default(root):
    assert fonts(render(root)) == {"Montserrat-Regular": True, "Montserrat-Bold": True}


def test_the_active_font_setting_changes_the_embedded_family(root, settings):
    settings.FEL_ACTIVE_FONT = "RobotoMono"
    assert fonts(render(root)) == {"RobotoMono-Regular": True, "RobotoMono-Bold": True}


def test_accented_spanish_prints_and_extracts(root, settings):
    reader = render(root, xml=with_description(root, SPANISH))
    text = "\n".join(page.extract_text() for page in reader.pages)
    for word in [*SPANISH.split(), "Descripción", "NÚMERO DE AUTORIZACIÓN", "Página 1 de 1"]:
        assert word in text, word
    for family in ("montserrat", "robotomono"):  # every letter has a glyph of its own in both
        for style in ("Regular", "Bold"):
            face = TTFontFile(str(next((FONT_DIR / family).glob(f"*-{style}.ttf"))))
            missing = [ch for ch in SPANISH + "ÁÉÍÓÚÜ" if face.charToGlyph.get(ord(ch), 0) == 0]
            assert missing == [], (family, style, missing)


def test_a_font_folder_from_the_settings_is_used(root, settings, tmp_path):
    """A family's folder as downloaded (faces in static/); here other faces under Montserrat's
    file names, so the PDF shows which files were embedded."""
    folder = tmp_path / "fuentes" / "static"
    folder.mkdir(parents=True)
    for style in ("Regular", "Bold"):
        shutil.copy(FONT_DIR / "robotomono" / f"RobotoMono-{style}.ttf", folder / f"Montserrat-{style}.ttf")
    settings.FEL_FONT_DIR_MONTSERRAT = str(folder.parent)
    assert fonts(render(root)) == {"RobotoMono-Regular": True, "RobotoMono-Bold": True}


def test_a_missing_or_broken_font_is_a_clear_error_before_any_document(root, settings, tmp_path):
    settings.FEL_FONT_DIR_MONTSERRAT = str(tmp_path / "nada")
    with pytest.raises(
        ToolError, match=r"No existe la carpeta de la fuente Montserrat: .*nada \(FEL_FONT_DIR_MONTSERRAT\)"
    ):
        call("fel_render", {"xml_path": SAT})
    with pytest.raises(ToolError, match="No existe la carpeta de la fuente"):
        call("fel_batch", {"dir_xml": "data/xml", "out_dir": "data/lote"})
    assert not (root / "lote").exists() or not any((root / "lote").iterdir())

    folder = tmp_path / "rota"
    folder.mkdir()
    shutil.copy(FONT_DIR / "montserrat" / "Montserrat-Regular.ttf", folder)
    settings.FEL_FONT_DIR_MONTSERRAT = str(folder)
    with pytest.raises(ToolError, match=r"Falta Montserrat-Bold\.ttf en la carpeta de la fuente"):
        call("fel_render", {"xml_path": SAT})
    (folder / "Montserrat-Bold.ttf").write_bytes(
        (FONT_DIR / "montserrat" / "Montserrat-Bold.ttf").read_bytes()[:20000]  # a copy cut short
    )
    with pytest.raises(ToolError, match=r"Montserrat-Bold\.ttf no es una fuente TrueType legible"):
        call("fel_render", {"xml_path": SAT})
    settings.FEL_ACTIVE_FONT = "comic"
    with pytest.raises(ToolError, match=r"Fuente desconocida «comic» .*montserrat o robotomono"):
        call("fel_render", {"xml_path": SAT})
    assert call("fel_validate", {"xml_path": SAT}).structured["ok"] is True  # no font needed


def test_a_font_gone_during_a_batch_fails_that_file_only(tmp_path):
    """What a batch worker meets if the files vanish after the check: an error entry, no crash."""
    gone = Typeface("montserrat", str(tmp_path / "a.ttf"), str(tmp_path / "b.ttf"))
    result = process(SAT_SAMPLE, 1_000_000, tmp_path / "f.pdf", Branding(get_theme("azul"), typeface=gone))
    assert "No se puede leer la fuente" in result.error and result.pdf_path is None
    assert result.validation is not None and result.validation.ok


def test_top_bar_height_moves_the_page_down(root, settings):
    before = positions(render(root, "a.pdf"))
    settings.FEL_TOP_BAR_HEIGHT = 40
    after = positions(render(root, "b.pdf"))
    for line in ("CINCO CONSULTORES", "CLIENTE", "Descripción", "Verifique este documento"):
        assert after[line][1] == pytest.approx(before[line][1] - 30), line
    assert after["Página 1 de 1"] == before["Página 1 de 1"]  # the footer stays
    settings.FEL_TOP_BAR_HEIGHT = 0
    assert positions(render(root, "c.pdf"))["CLIENTE"][1] == pytest.approx(before["CLIENTE"][1] + 10)


def test_qr_size_changes_the_code_and_what_stands_beside_it(root, settings, tmp_path):
    before = positions(render(root, "a.pdf"))
    settings.FEL_QR_SIZE = 150
    after = positions(render(root, "b.pdf"))
    assert after["Verifique este documento"][0] == pytest.approx(before["Verifique este documento"][0] + 54)
    # the closing block is taller by as much: what follows the QR starts 54 points lower
    line = next(k for k in before if k.startswith("Total en letras"))
    assert after[line][1] == pytest.approx(before[line][1] - 54)
    for size in (50, 400):
        settings.FEL_QR_SIZE = size
        with pytest.raises(ToolError, match="FEL_QR_SIZE debe estar entre 72 y 180 puntos"):
            call("fel_render", {"xml_path": SAT})
    if shutil.which("pdftoppm") and shutil.which("zbarimg"):  # the smallest allowed still scans
        settings.FEL_QR_SIZE = 72
        render(root, "small.pdf")
        png = tmp_path / "page"
        subprocess.run(
            ["pdftoppm", "-png", "-r", "150", "-singlefile", root / "out" / "small.pdf", png], check=True
        )
        assert Image.open(f"{png}.png").size[0] > 200
        scanned = subprocess.run(["zbarimg", "-q", "--raw", f"{png}.png"], capture_output=True, text=True)
        assert "numero=9E52C854-E18B-45C1-A77B-C87CF42F35F1" in scanned.stdout
