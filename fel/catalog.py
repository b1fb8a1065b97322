"""SAT's catalogues as printed on a document: DTE type names and the texts of the Frases."""

from __future__ import annotations

DOCUMENT_TYPES = {
    "FACT": "Factura",
    "FCAM": "Factura Cambiaria",
    "FPEQ": "Factura Pequeño Contribuyente",
    "FCAP": "Factura Cambiaria Pequeño Contribuyente",
    "FESP": "Factura Especial",
    "FACA": "Factura Contribuyente Agropecuario",
    "FCCA": "Factura Cambiaria Contribuyente Agropecuario",
    "FAPE": "Factura Pequeño Contribuyente Régimen Electrónico",
    "FCPE": "Factura Cambiaria Pequeño Contribuyente Régimen Electrónico",
    "FAAE": "Factura Contribuyente Agropecuario Régimen Electrónico",
    "FCAE": "Factura Cambiaria Contribuyente Agropecuario Régimen Electrónico",
    "NABN": "Nota de Abono",
    "NCRE": "Nota de Crédito",
    "NDEB": "Nota de Débito",
    "RDON": "Recibo por Donación",
    "RECI": "Recibo",
}

# (TipoFrase, CodigoEscenario) -> text, for the phrases that appear on everyday documents.
PHRASES = {
    ("1", "1"): "Sujeto a pagos trimestrales ISR",
    ("1", "2"): "Sujeto a retención definitiva ISR",
    ("1", "3"): "Sujeto a pago directo ISR",
    ("1", "4"): "Agente de retención del ISR",
    ("2", "1"): "Agente de retención del IVA",
    ("3", "1"): "No genera derecho a crédito fiscal",
    ("4", "1"): "Exenta del IVA (art. 7 núm. 2 Ley del IVA)",
    ("4", "2"): "Exenta del IVA (art. 7 núm. 4 Ley del IVA)",
    ("4", "3"): "Exenta del IVA (art. 7 núm. 5 Ley del IVA)",
    ("4", "4"): "Exenta del IVA (art. 7 núm. 9 Ley del IVA)",
    ("4", "5"): "Exenta del IVA (art. 7 núm. 10 Ley del IVA)",
    ("5", "1"): "Sujeto al régimen de exportación",
    ("8", "1"): "Exento del ISR (art. 8 núm. 1 Ley de Actualización Tributaria)",
}


def document_type_name(tipo: str) -> str:
    return DOCUMENT_TYPES.get(tipo, tipo or "Documento tributario electrónico")


def phrase_text(tipo_frase: str, escenario: str) -> str:
    return PHRASES.get((tipo_frase, escenario), f"Frase tipo {tipo_frase}, escenario {escenario}")
