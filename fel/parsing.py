"""Reading FEL documents (SAT Guatemala DTE, schema 0.2.0) into plain dataclasses.

Parsing is hardened (defusedxml refuses DTDs, entity declarations and external references)
and lenient about content: a missing required field or an unreadable amount is recorded on
the `Document` (in `missing` and `invalid`) instead of raising, so the validator can report
every problem in one pass. Only a file that is not a safe, well-formed FEL document raises
`FelXmlError`.

This module (like validation and render) does not touch Django, so batch workers can import
it without setting Django up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import fromstring

from fel.errors import FelError

FEL_NS = "http://www.sat.gob.gt/dte/fel/0.2.0"
# Guatemala has kept UTC-6 all year since 2006: times written without a zone are local.
GUATEMALA_TZ = timezone(timedelta(hours=-6), "America/Guatemala")
# Amounts and quantities from 10^10 on are refused as out of range: real invoices stay far
# below, and products and sums of such values stay within Decimal's 28 digits (1E+50 once
# made rendering raise InvalidOperation).
MAX_AMOUNT = Decimal(10) ** 10


class FelXmlError(FelError):
    """The file cannot be read as a safe, well-formed FEL document (message in Spanish)."""


@dataclass(slots=True)
class Tax:
    name: str
    unit_code: str
    taxable: Decimal | None
    amount: Decimal | None


@dataclass(slots=True)
class Item:
    position: int  # 1-based order in the document; NumeroLinea is often repeated
    line_number: str
    kind: str  # B (bien) or S (servicio)
    quantity: Decimal | None
    unit: str
    description: str
    unit_price: Decimal | None
    price: Decimal | None
    discount: Decimal | None
    total: Decimal | None
    taxes: list[Tax] = field(default_factory=list)

    def tax(self, name: str) -> Tax | None:
        return next((t for t in self.taxes if t.name == name), None)


@dataclass(slots=True)
class Party:
    tax_id: str  # NITEmisor or IDReceptor (`CF` for consumidor final)
    name: str
    commercial_name: str = ""
    email: str = ""
    address: str = ""
    vat_affiliation: str = ""  # AfiliacionIVA: GEN, PEQ, ...
    establishment: str = ""
    special_type: str = ""  # TipoEspecial of the receptor: CUI, EXT


@dataclass(slots=True)
class NoteReference:
    """A credit/debit note's reference to the document it adjusts (ComplementoReferenciaNota)."""

    authorization: str
    serie: str
    numero: str
    issued: str
    reason: str


@dataclass(slots=True)
class Certification:
    certifier_nit: str
    certifier_name: str
    authorization: str
    serie: str
    numero: str
    certified_at: datetime | None


@dataclass(slots=True)
class Document:
    tipo: str
    issued_at: datetime | None
    currency: str
    emisor: Party
    receptor: Party
    phrases: list[tuple[str, str]]  # (TipoFrase, CodigoEscenario)
    items: list[Item]
    total_taxes: dict[str, Decimal | None]  # NombreCorto -> TotalMontoImpuesto
    grand_total: Decimal | None
    references: list[NoteReference]
    certification: Certification
    adenda: list[tuple[str, str]]  # leaf elements of the Adenda: (name, text)
    missing: list[str] = field(default_factory=list)  # required fields absent, as XPath-like paths
    invalid: list[str] = field(default_factory=list)  # values that could not be read (Spanish)


def parse_document(data: bytes) -> Document:
    return _Reader(_parse_xml(data)).document()


def _parse_xml(data: bytes) -> Element:
    try:
        return fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DTDForbidden:
        head = data[:4096].upper()
        if b"<!ENTITY" in head:
            what = "declara entidades (posible ataque de expansión de entidades, «billion laughs»)"
            if b"SYSTEM" in head or b"PUBLIC" in head:
                what = "declara entidades externas (posible lectura de archivos o red, XXE)"
            raise FelXmlError(
                f"El XML {what}: por seguridad no se aceptan DTD, entidades ni referencias externas."
            ) from None
        raise FelXmlError(
            "El XML contiene una declaración DTD (<!DOCTYPE>): por seguridad no se aceptan DTD, "
            "entidades ni referencias externas."
        ) from None
    except EntitiesForbidden:
        raise FelXmlError(
            "El XML declara entidades: por seguridad no se aceptan DTD, entidades ni referencias externas."
        ) from None
    except ExternalReferenceForbidden:
        raise FelXmlError(
            "El XML hace referencia a un recurso externo: por seguridad no se aceptan referencias externas."
        ) from None
    except ParseError as exc:
        line, column = exc.position
        raise FelXmlError(f"El XML está mal formado (línea {line}, columna {column}): {exc}.") from None


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def parse_datetime(raw: str) -> datetime | None:
    """ISO 8601 as FEL writes it, with or without zone and fraction; naive means Guatemala time."""
    try:
        value = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=GUATEMALA_TZ)


class _Reader:
    """Walks one parsed tree; `ns` is `{FEL_NS}` or empty for documents with prefixes stripped."""

    def __init__(self, root: Element) -> None:
        if _local(root.tag) != "GTDocumento":
            raise FelXmlError(f"El XML no es un documento FEL: el elemento raíz es «{_local(root.tag)}».")
        namespace = root.tag[1:].partition("}")[0] if root.tag.startswith("{") else ""
        if namespace not in ("", FEL_NS):
            raise FelXmlError(
                f"El XML no usa el espacio de nombres FEL 0.2.0 ({FEL_NS}), sino «{namespace}»."
            )
        self.ns = f"{{{namespace}}}" if namespace else ""
        self.root = root
        self.missing: list[str] = []
        self.invalid: list[str] = []

    def _find(self, parent: Element | None, path: str) -> Element | None:
        if parent is None:
            return None
        ns = self.ns
        return parent.find("/".join(ns + part for part in path.split("/")))

    def _findall(self, parent: Element | None, path: str) -> list[Element]:
        if parent is None:
            return []
        ns = self.ns
        return parent.findall("/".join(ns + part for part in path.split("/")))

    def _required_attr(self, el: Element | None, name: str, where: str) -> str:
        value = (el.get(name) or "").strip() if el is not None else ""
        if not value:
            self.missing.append(f"{where}/@{name}")
        return value

    def _required_text(self, parent: Element | None, tag: str, where: str) -> str:
        el = self._find(parent, tag)
        value = (el.text or "").strip() if el is not None else ""
        if not value:
            self.missing.append(f"{where}/{tag}")
        return value

    def _text(self, parent: Element | None, tag: str) -> str:
        el = self._find(parent, tag)
        return (el.text or "").strip() if el is not None else ""

    def _amount(self, raw: str, what: str, required: bool = True) -> Decimal | None:
        """A money or quantity value from its raw string (thousands commas tolerated)."""
        if not raw:
            return None if required else Decimal(0)
        try:
            value = Decimal(raw.replace(",", ""))
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite():
            self.invalid.append(f"{what}: «{raw}» no es un número válido.")
            return None
        if abs(value) >= MAX_AMOUNT:
            self.invalid.append(f"{what}: «{raw}» está fuera del rango admitido (menos de 10 000 millones).")
            return None
        return value

    def document(self) -> Document:
        dte = self._find(self.root, "SAT/DTE")
        if dte is None:
            raise FelXmlError("El XML no contiene el bloque SAT/DTE de un documento FEL.")
        emision = self._find(dte, "DatosEmision")
        if emision is None:
            self.missing.append("DatosEmision")
        general = self._find(emision, "DatosGenerales")
        tipo = self._required_attr(general, "Tipo", "DatosGenerales")
        issued_raw = self._required_attr(general, "FechaHoraEmision", "DatosGenerales")
        issued_at = parse_datetime(issued_raw) if issued_raw else None
        if issued_raw and issued_at is None:
            self.invalid.append(f"DatosGenerales/@FechaHoraEmision: «{issued_raw}» no es una fecha válida.")
        currency = self._required_attr(general, "CodigoMoneda", "DatosGenerales")
        return Document(
            tipo=tipo,
            issued_at=issued_at,
            currency=currency,
            emisor=self._emisor(self._find(emision, "Emisor")),
            receptor=self._receptor(self._find(emision, "Receptor")),
            phrases=[
                (f.get("TipoFrase", ""), f.get("CodigoEscenario", ""))
                for f in self._findall(emision, "Frases/Frase")
            ],
            items=self._items(emision),
            total_taxes={
                t.get("NombreCorto", ""): self._amount(
                    t.get("TotalMontoImpuesto", ""), f"TotalImpuesto {t.get('NombreCorto', '')}"
                )
                for t in self._findall(emision, "Totales/TotalImpuestos/TotalImpuesto")
            },
            grand_total=self._amount(
                self._required_text(self._find(emision, "Totales"), "GranTotal", "Totales"), "GranTotal"
            ),
            references=self._references(emision),
            certification=self._certification(self._find(dte, "Certificacion")),
            adenda=self._adenda(),
            missing=self.missing,
            invalid=self.invalid,
        )

    def _address(self, el: Element | None) -> str:
        parts = [self._text(el, tag) for tag in ("Direccion", "Municipio", "Departamento")]
        seen: list[str] = []
        for part in parts:
            if part and part not in (".", "0") and part.lower() not in (s.lower() for s in seen):
                seen.append(part)
        return ", ".join(seen)

    def _emisor(self, el: Element | None) -> Party:
        if el is None:
            self.missing.append("Emisor")
        return Party(
            tax_id=self._required_attr(el, "NITEmisor", "Emisor"),
            name=self._required_attr(el, "NombreEmisor", "Emisor"),
            commercial_name=(el.get("NombreComercial") or "").strip() if el is not None else "",
            email=(el.get("CorreoEmisor") or "").strip() if el is not None else "",
            address=self._address(self._find(el, "DireccionEmisor")),
            vat_affiliation=self._required_attr(el, "AfiliacionIVA", "Emisor"),
            establishment=self._required_attr(el, "CodigoEstablecimiento", "Emisor"),
        )

    def _receptor(self, el: Element | None) -> Party:
        if el is None:
            self.missing.append("Receptor")
        return Party(
            tax_id=self._required_attr(el, "IDReceptor", "Receptor").upper(),
            name=self._required_attr(el, "NombreReceptor", "Receptor"),
            email=(el.get("CorreoReceptor") or "").strip() if el is not None else "",
            address=self._address(self._find(el, "DireccionReceptor")),
            special_type=(el.get("TipoEspecial") or "").strip() if el is not None else "",
        )

    def _items(self, emision: Element | None) -> list[Item]:
        elements = self._findall(emision, "Items/Item")
        if not elements:
            self.missing.append("Items/Item")
        items = []
        for position, el in enumerate(elements, start=1):
            where = f"Ítem {position}"
            taxes = [
                Tax(
                    name=self._text(tax, "NombreCorto"),
                    unit_code=self._text(tax, "CodigoUnidadGravable"),
                    taxable=self._amount(self._text(tax, "MontoGravable"), f"{where} MontoGravable"),
                    amount=self._amount(self._text(tax, "MontoImpuesto"), f"{where} MontoImpuesto"),
                )
                for tax in self._findall(el, "Impuestos/Impuesto")
            ]
            items.append(
                Item(
                    position=position,
                    line_number=el.get("NumeroLinea", ""),
                    kind=self._required_attr(el, "BienOServicio", f"Items/Item[{position}]"),
                    quantity=self._amount(
                        self._required_text(el, "Cantidad", f"Items/Item[{position}]"), f"{where} Cantidad"
                    ),
                    unit=self._text(el, "UnidadMedida"),
                    description=self._required_text(el, "Descripcion", f"Items/Item[{position}]"),
                    unit_price=self._amount(
                        self._required_text(el, "PrecioUnitario", f"Items/Item[{position}]"),
                        f"{where} PrecioUnitario",
                    ),
                    price=self._amount(
                        self._required_text(el, "Precio", f"Items/Item[{position}]"), f"{where} Precio"
                    ),
                    discount=self._amount(self._text(el, "Descuento"), f"{where} Descuento", required=False),
                    total=self._amount(
                        self._required_text(el, "Total", f"Items/Item[{position}]"), f"{where} Total"
                    ),
                    taxes=taxes,
                )
            )
        return items

    def _references(self, emision: Element | None) -> list[NoteReference]:
        complementos = self._find(emision, "Complementos")
        if complementos is None:
            return []
        return [
            NoteReference(
                authorization=el.get("NumeroAutorizacionDocumentoOrigen", ""),
                serie=el.get("SerieDocumentoOrigen", ""),
                numero=el.get("NumeroDocumentoOrigen", ""),
                issued=el.get("FechaEmisionDocumentoOrigen", ""),
                reason=el.get("MotivoAjuste", ""),
            )
            for el in complementos.iter()
            if _local(el.tag) == "ReferenciasNota"
        ]

    def _certification(self, el: Element | None) -> Certification:
        if el is None:
            self.missing.append("Certificacion")
        auth_el = self._find(el, "NumeroAutorizacion")
        certified_raw = self._required_text(el, "FechaHoraCertificacion", "Certificacion")
        certified_at = parse_datetime(certified_raw) if certified_raw else None
        if certified_raw and certified_at is None:
            self.invalid.append(
                f"Certificacion/FechaHoraCertificacion: «{certified_raw}» no es una fecha válida."
            )
        return Certification(
            certifier_nit=self._required_text(el, "NITCertificador", "Certificacion"),
            certifier_name=self._required_text(el, "NombreCertificador", "Certificacion"),
            authorization=self._required_text(el, "NumeroAutorizacion", "Certificacion").upper(),
            serie=self._required_attr(auth_el, "Serie", "Certificacion/NumeroAutorizacion")
            if el is not None
            else "",
            numero=self._required_attr(auth_el, "Numero", "Certificacion/NumeroAutorizacion")
            if el is not None
            else "",
            certified_at=certified_at,
        )

    def _adenda(self) -> list[tuple[str, str]]:
        adenda = self._find(self.root, "SAT/Adenda")
        if adenda is None:
            return []
        return [
            (_local(el.tag), el.text.strip())
            for el in adenda.iter()
            if len(el) == 0 and el is not adenda and el.text and el.text.strip()
        ]
