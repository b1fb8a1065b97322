"""SAT's rules for a FEL document, each broken rule reported as one precise Spanish sentence.

One defect gives one issue: checks whose failure would only repeat an issue already reported
(for example `total = subtotal + IVA` after `GranTotal ≠ Σ Total`) are skipped, and the two
IVA rules of an item (MontoGravable = Total / 1.12, MontoImpuesto = MontoGravable * 0.12) are
reported together as that item's IVA issue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from fel.money import exact, money, money_grouped
from fel.parsing import Document, Item

IVA_RATE = Decimal("0.12")
IVA_DIVISOR = Decimal("1.12")
TOLERANCE = Decimal("0.01")  # certified documents carry sub-cent rounding differences
CF_LIMIT = Decimal("2500")  # from Q2,500 the receptor must be identified (NIT or CUI)
NO_IVA_TYPES = {"FPEQ": "pequeño contribuyente", "FCAP": "cambiaria de pequeño contribuyente"}
# Certifiers' test environments number documents with this series instead of the UUID's.
TEST_SERIES = {"PRUEBAS"}
_UUID_RE = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
_NIT_RE = re.compile(r"^(\d+)([\dK])$")
_ZERO = Decimal(0)
# Printed in issues as SAT writes its rules.
TIMES = "×"  # noqa: RUF001
MINUS = "−"  # noqa: RUF001


@dataclass(slots=True, frozen=True)
class Totals:
    subtotal: Decimal
    iva: Decimal
    total: Decimal

    def as_strings(self) -> dict[str, str]:
        return {"subtotal": money(self.subtotal), "iva": money(self.iva), "total": money(self.total)}


@dataclass(slots=True, frozen=True)
class Validation:
    ok: bool
    issues: list[str]
    totals: Totals

    def as_dict(self) -> dict[str, object]:
        """The seed's `fel_validate` result."""
        return {"ok": self.ok, "issues": self.issues, "totals": self.totals.as_strings()}


def nit_check_digit(body: str) -> str:
    """SAT's mod-11 check digit for the digits `body` (weights n+1 … 2 from the left; 10 is `K`)."""
    weight = len(body) + 1
    total = 0
    for digit in body:
        total += int(digit) * weight
        weight -= 1
    check = (11 - total % 11) % 11
    return "K" if check == 10 else str(check)


def nit_problem(raw: str) -> str | None:
    """Why `raw` is not a valid NIT, or None when it is."""
    nit = raw.replace("-", "").replace(" ", "").upper()
    match = _NIT_RE.match(nit)
    if match is None:
        return "no tiene el formato de un NIT (dígitos y un dígito verificador 0-9 o K)"
    expected = nit_check_digit(match.group(1))
    if expected != match.group(2):
        return f"el dígito verificador debería ser {expected} y es {match.group(2)}"
    return None


def compute_totals(doc: Document) -> Totals:
    """subtotal = Σ MontoGravable of IVA items + Σ Total of the others; iva = TotalMontoImpuesto."""
    subtotal = _ZERO
    for item in doc.items:
        iva = item.tax("IVA")
        if iva is not None and iva.taxable is not None:
            subtotal += iva.taxable
        elif item.total is not None:
            subtotal += item.total
    iva_total = doc.total_taxes.get("IVA") or _ZERO
    return Totals(subtotal=subtotal, iva=iva_total, total=doc.grand_total or _ZERO)


def validate(doc: Document) -> Validation:
    issues: list[str] = [f"Falta el campo obligatorio {path}." for path in doc.missing]
    issues += doc.invalid
    for item in doc.items:
        issues += _item_issues(doc, item)
    issues += _document_issues(doc)
    issues += _identity_issues(doc)
    return Validation(ok=not issues, issues=issues, totals=compute_totals(doc))


def _off(expected: Decimal, found: Decimal) -> bool:
    return abs(found - expected) > TOLERANCE


def _known(values: list[Decimal | None]) -> list[Decimal] | None:
    """All the values, or None when any of them is missing."""
    known = [value for value in values if value is not None]
    return known if len(known) == len(values) else None


def _mismatch(field: str, rule: str, expected: Decimal, found: Decimal) -> str:
    """`field debe ser rule = expected, pero es found (diferencia d)`."""
    difference = exact(abs(found - expected))
    return f"{field} debe ser {rule} = {exact(expected)}, pero es {exact(found)} (diferencia {difference})"


def _label(item: Item) -> str:
    description = item.description if len(item.description) <= 40 else item.description[:39] + "…"
    return f"Ítem {item.position} («{description}»)" if description else f"Ítem {item.position}"


def _item_issues(doc: Document, item: Item) -> list[str]:
    issues = []
    label = _label(item)
    if item.quantity is not None and item.unit_price is not None and item.price is not None:
        expected = item.quantity * item.unit_price
        if _off(expected, item.price):
            issues.append(
                f"{label}: {_mismatch('Precio', f'Cantidad {TIMES} PrecioUnitario', expected, item.price)}."
            )
    discount = item.discount
    if item.price is not None and discount is not None:
        if discount > item.price:
            issues.append(
                f"{label}: el Descuento {exact(discount)} es mayor que el Precio {exact(item.price)}."
            )
        elif item.total is not None and all(t.name == "IVA" for t in item.taxes):
            # Other taxes (IDP, turismo...) are added to the line's Total, so the rule holds only here.
            expected = item.price - discount
            if _off(expected, item.total):
                issues.append(
                    f"{label}: {_mismatch('Total', f'Precio {MINUS} Descuento', expected, item.total)}."
                )
    iva = item.tax("IVA")
    if iva is None:
        return issues
    if doc.tipo in NO_IVA_TYPES:
        issues.append(
            f"{label}: un documento {doc.tipo} ({NO_IVA_TYPES[doc.tipo]}) no lleva IVA, "
            f"pero el ítem declara MontoImpuesto {exact(iva.amount or _ZERO)}."
        )
        return issues
    if iva.taxable is None or iva.amount is None or item.total is None:
        return issues
    problems = []
    if iva.unit_code == "2":  # exento: the whole Total is the base and there is no tax
        expected_taxable, expected_amount = item.total, _ZERO
        taxable_rule, amount_rule = "Total (exento)", "0 (exento)"
    else:
        expected_taxable, expected_amount = item.total / IVA_DIVISOR, iva.taxable * IVA_RATE
        taxable_rule, amount_rule = "Total / 1.12", f"MontoGravable {TIMES} 0.12"
    if _off(expected_taxable, iva.taxable):
        problems.append(_mismatch("MontoGravable", taxable_rule, expected_taxable, iva.taxable))
    if _off(expected_amount, iva.amount):
        problems.append(_mismatch("MontoImpuesto", amount_rule, expected_amount, iva.amount))
    if problems:
        issues.append(f"{label}: IVA incorrecto: " + "; ".join(problems) + ".")
    return issues


def _document_issues(doc: Document) -> list[str]:
    issues = []
    totals_consistent = True
    item_totals = _known([item.total for item in doc.items])
    if doc.grand_total is not None and item_totals is not None:
        expected = sum(item_totals, _ZERO)
        if _off(expected, doc.grand_total):
            totals_consistent = False
            issues.append(
                _mismatch("GranTotal", "la suma de los Total de los ítems", expected, doc.grand_total) + "."
            )
    item_iva = [item.tax("IVA") for item in doc.items]
    declared_iva = doc.total_taxes.get("IVA")
    if doc.tipo in NO_IVA_TYPES:
        if declared_iva:
            issues.append(
                f"Un documento {doc.tipo} ({NO_IVA_TYPES[doc.tipo]}) no lleva IVA, pero Totales declara "
                f"TotalMontoImpuesto IVA {exact(declared_iva)}."
            )
        return issues
    if any(tax is not None for tax in item_iva):
        if "IVA" not in doc.total_taxes:
            totals_consistent = False
            issues.append("Los ítems llevan IVA pero Totales no declara TotalImpuesto IVA.")
        elif (
            declared_iva is not None
            and (item_amounts := _known([t.amount for t in item_iva if t is not None])) is not None
        ):
            expected = sum(item_amounts, _ZERO)
            if _off(expected, declared_iva):
                totals_consistent = False
                rule = "la suma de los MontoImpuesto de los ítems"
                issues.append(_mismatch("TotalMontoImpuesto del IVA", rule, expected, declared_iva) + ".")
    if totals_consistent and doc.grand_total is not None:
        totals = compute_totals(doc)
        if _off(totals.subtotal + totals.iva, totals.total):
            issues.append(
                _mismatch("El total", "subtotal + IVA", totals.subtotal + totals.iva, totals.total) + "."
            )
    return issues


def _identity_issues(doc: Document) -> list[str]:
    issues = []
    parties = [("del emisor", doc.emisor.tax_id), ("del certificador", doc.certification.certifier_nit)]
    receptor = doc.receptor.tax_id
    if receptor and receptor != "CF" and not doc.receptor.special_type:
        parties.insert(1, ("del receptor", receptor))
    for who, nit in parties:
        if nit and (problem := nit_problem(nit)):
            issues.append(f"El NIT {who} {nit} no es válido: {problem}.")
    cert = doc.certification
    if cert.authorization:
        if not _UUID_RE.match(cert.authorization):
            issues.append(f"El número de autorización {cert.authorization} no es un UUID válido.")
        else:
            hex_digits = cert.authorization.replace("-", "")
            serie = hex_digits[:8]
            if cert.serie and cert.serie.upper() != serie and cert.serie.upper() not in TEST_SERIES:
                issues.append(
                    f"La Serie {cert.serie} no corresponde al número de autorización: "
                    f"debería ser {serie} (sus primeros 8 caracteres)."
                )
            numero = str(int(hex_digits[8:16], 16))
            if cert.numero and cert.numero.lstrip("0") != numero:
                issues.append(
                    f"El Número {cert.numero} no corresponde al número de autorización: debería ser "
                    f"{numero} (caracteres 9 a 16 del UUID, de hexadecimal a decimal)."
                )
    total = doc.grand_total
    if receptor == "CF" and doc.currency in ("GTQ", "") and total is not None and total >= CF_LIMIT:
        issues.append(
            f"El receptor es consumidor final (CF) con un total de Q{money_grouped(total)}: "
            f"desde Q{money_grouped(CF_LIMIT)} SAT exige identificar al receptor con NIT o CUI."
        )
    return issues
