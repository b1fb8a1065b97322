"""fel_validate through the tool registry: every real sample passes, every broken one fails once."""

import pytest

from fel.models import Invoice
from fel.validation import TIMES, nit_check_digit
from mcp_endpoint.engine.tool_errors import ToolError
from tests.fel_support import BROKEN, REAL, call, make_root

pytestmark = pytest.mark.django_db

EXPECTED_TOTALS = {
    "fact_sat_1item-servicio_receptor-empresa.xml": ("8010.59", "961.27", "8971.86"),  # seed 002's example
    "fact_megaprint_3items_redondeo-2-decimales.xml": ("75.00", "9.00", "84.00"),
    "fact_megaprint_cf_13items_numerolinea-repetido.xml": ("195.54", "23.46", "219.00"),
    "fact_megaprint_45items_receptor-empresa.xml": ("20263.57", "2431.63", "22695.20"),
    "fpeq_sat_1item_pequeno-contribuyente-sin-iva.xml": ("2399.00", "0.00", "2399.00"),
    "fact_corposistemas-pruebas_1item_grantotal-200.000001.xml": ("178.57", "21.43", "200.00"),
}

EXPECTED_ISSUE = {
    "broken_iva-incorrecto-item-2.xml": (
        "Ítem 2 («Linterna LED de metal con zoom»): IVA incorrecto: "
        "MontoGravable debe ser Total / 1.12 = 25.00, pero es 26.67 (diferencia 1.67); "
        f"MontoImpuesto debe ser MontoGravable {TIMES} 0.12 = 3.2004, pero es 1.33 (diferencia 1.8704)."
    ),
    "broken_grantotal-distinto-suma-items.xml": (
        "GranTotal debe ser la suma de los Total de los ítems = 84.00, pero es 94.00 (diferencia 10.00)."
    ),
    "broken_sin-nitemisor.xml": "Falta el campo obligatorio Emisor/@NITEmisor.",
}


@pytest.fixture
def root(tmp_path, settings):
    return make_root(tmp_path, settings)


@pytest.mark.parametrize("sample", REAL, ids=lambda p: p.name)
def test_real_samples_validate(root, sample):
    result = call("fel_validate", {"xml_path": f"data/xml/{sample.name}"})
    assert not result.is_error
    subtotal, iva, total = EXPECTED_TOTALS[sample.name]
    assert result.structured == {
        "ok": True,
        "issues": [],
        "totals": {"subtotal": subtotal, "iva": iva, "total": total},
    }
    assert Invoice.objects.get().valid


@pytest.mark.parametrize("sample", BROKEN, ids=lambda p: p.name)
def test_broken_samples_fail_with_their_one_issue(root, sample):
    result = call("fel_validate", {"xml_path": str(root / "broken" / sample.name)})
    assert result.structured["ok"] is False
    assert result.structured["issues"] == [EXPECTED_ISSUE[sample.name]]
    invoice = Invoice.objects.get()
    assert invoice.valid is False and invoice.issues == [EXPECTED_ISSUE[sample.name]]


def test_fixture_lists_are_complete():
    assert {p.name for p in REAL} == set(EXPECTED_TOTALS)
    assert {p.name for p in BROKEN} == set(EXPECTED_ISSUE)


def test_tampered_copy_does_not_replace_the_valid_record(root):
    call("fel_validate", {"xml_path": "data/xml/fact_megaprint_3items_redondeo-2-decimales.xml"})
    call("fel_validate", {"xml_path": "data/broken/broken_grantotal-distinto-suma-items.xml"})
    invoice = Invoice.objects.get()
    assert invoice.valid and str(invoice.total) == "84.00"


def test_stripped_prefixes_are_read_too(root):
    source = (root / "xml" / "fact_megaprint_45items_receptor-empresa.xml").read_text()
    (root / "xml" / "sin_prefijos.xml").write_text(
        source.replace("<dte:", "<").replace("</dte:", "</").replace("xmlns:dte=", "xmlns=")
    )
    result = call("fel_validate", {"xml_path": "data/xml/sin_prefijos.xml"})
    assert result.structured["ok"] is True
    assert result.structured["totals"]["total"] == "22695.20"


def _edit(root, name, old, new):
    path = root / "xml" / "edited.xml"
    text = (root / "xml" / name).read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return call("fel_validate", {"xml_path": "data/xml/edited.xml"}).structured


def test_each_rule_reports_a_precise_sentence(root):
    base = "fact_megaprint_3items_redondeo-2-decimales.xml"
    issues = _edit(root, base, "<dte:Precio>36.00</dte:Precio>", "<dte:Precio>35.00</dte:Precio>")["issues"]
    assert issues[0] == (
        f"Ítem 1 («Cuchillo automatico 16cm»): Precio debe ser Cantidad {TIMES} PrecioUnitario = 36.00, "
        "pero es 35.00 (diferencia 1.00)."
    )
    issues = _edit(root, base, "<dte:Descuento>0.00</dte:Descuento>", "<dte:Descuento>50.00</dte:Descuento>")[
        "issues"
    ]
    assert (
        issues[0] == "Ítem 1 («Cuchillo automatico 16cm»): el Descuento 50.00 es mayor que el Precio 36.00."
    )
    issues = _edit(root, base, 'TotalMontoImpuesto="9.00"', 'TotalMontoImpuesto="9.50"')["issues"]
    assert issues == [
        "TotalMontoImpuesto del IVA debe ser la suma de los MontoImpuesto de los ítems = 9.00, pero es 9.50 "
        "(diferencia 0.50)."
    ]
    issues = _edit(root, base, 'Serie="C3451378"', 'Serie="C3451379"')["issues"]
    assert issues == [
        "La Serie C3451379 no corresponde al número de autorización: "
        "debería ser C3451378 (sus primeros 8 caracteres)."
    ]
    issues = _edit(root, base, 'Numero="931481148"', 'Numero="931481149"')["issues"]
    assert issues[0].startswith(
        "El Número 931481149 no corresponde al número de autorización: debería ser 931481148"
    )
    issues = _edit(root, base, 'NITEmisor="75423952"', 'NITEmisor="75423953"')["issues"]
    assert issues == ["El NIT del emisor 75423953 no es válido: el dígito verificador debería ser 2 y es 3."]


def test_cf_receptor_from_2500_is_flagged(root):
    result = _edit(
        root,
        "fact_sat_1item-servicio_receptor-empresa.xml",
        'IDReceptor="107209306"',
        'IDReceptor="CF"',
    )
    assert result["issues"] == [
        "El receptor es consumidor final (CF) con un total de Q8,971.86: desde Q2,500.00 SAT exige "
        "identificar al receptor con NIT o CUI."
    ]


def test_fpeq_with_iva_is_flagged(root):
    result = _edit(
        root,
        "fpeq_sat_1item_pequeno-contribuyente-sin-iva.xml",
        "<dte:Totales>",
        '<dte:Totales><dte:TotalImpuestos><dte:TotalImpuesto NombreCorto="IVA" TotalMontoImpuesto="257.04"/>'
        "</dte:TotalImpuestos>",
    )
    assert result["issues"] == [
        "Un documento FPEQ (pequeño contribuyente) no lleva IVA, "
        "pero Totales declara TotalMontoImpuesto IVA 257.04."
    ]


@pytest.mark.parametrize(
    ("body", "digit"), [("7542395", "2"), ("1669394", "9"), ("5051023", "1"), ("1", "9")]
)
def test_nit_check_digit(body, digit):
    assert nit_check_digit(body) == digit


def test_missing_file_is_a_clear_error(root):
    with pytest.raises(ToolError, match=r"No existe el archivo de XML: data/xml/nada\.xml"):
        call("fel_validate", {"xml_path": "data/xml/nada.xml"})


def test_unknown_argument_is_refused(root):
    with pytest.raises(ToolError, match="Parámetros desconocidos"):
        call("fel_validate", {"xml_path": "data/xml/x.xml", "extra": 1})
