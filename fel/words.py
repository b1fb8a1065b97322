"""Amounts in Spanish words, as Guatemalan invoices print them: "OCHO MIL ... QUETZALES CON 86/100".

Written here rather than taken from a library because invoices need the apocopated forms
("veintiún quetzales", "un millón") and the "CON nn/100" cents convention, which generic
number-to-words packages do not give.
"""

from __future__ import annotations

from decimal import Decimal

from fel.money import q2

_UNITS = [
    "cero",
    "uno",
    "dos",
    "tres",
    "cuatro",
    "cinco",
    "seis",
    "siete",
    "ocho",
    "nueve",
    "diez",
    "once",
    "doce",
    "trece",
    "catorce",
    "quince",
    "dieciséis",
    "diecisiete",
    "dieciocho",
    "diecinueve",
    "veinte",
    "veintiuno",
    "veintidós",
    "veintitrés",
    "veinticuatro",
    "veinticinco",
    "veintiséis",
    "veintisiete",
    "veintiocho",
    "veintinueve",
]
_TENS = ["treinta", "cuarenta", "cincuenta", "sesenta", "setenta", "ochenta", "noventa"]
_HUNDREDS = [
    "ciento",
    "doscientos",
    "trescientos",
    "cuatrocientos",
    "quinientos",
    "seiscientos",
    "setecientos",
    "ochocientos",
    "novecientos",
]
CURRENCIES = {"GTQ": ("QUETZAL", "QUETZALES"), "USD": ("DÓLAR", "DÓLARES"), "EUR": ("EURO", "EUROS")}


def _below_thousand(n: int) -> str:
    if n == 100:
        return "cien"
    hundreds, rest = divmod(n, 100)
    words = [_HUNDREDS[hundreds - 1]] if hundreds else []
    if rest >= 30:
        tens, unit = divmod(rest, 10)
        words.append(_TENS[tens - 3] + (f" y {_UNITS[unit]}" if unit else ""))
    elif rest:
        words.append(_UNITS[rest])
    return " ".join(words)


def integer_words(n: int) -> str:
    """`n` (0 ≤ n < 10**12) in words, masculine full form ("veintiuno", "ciento uno")."""
    if n == 0:
        return "cero"
    millions, rest = divmod(n, 1_000_000)
    thousands, units = divmod(rest, 1000)
    words = []
    if millions:
        words.append("un millón" if millions == 1 else f"{_apocope(integer_words(millions))} millones")
    if thousands:
        words.append("mil" if thousands == 1 else f"{_apocope(_below_thousand(thousands))} mil")
    if units:
        words.append(_below_thousand(units))
    return " ".join(words)


def _apocope(words: str) -> str:
    """Before a noun "uno" shortens: "veintiuno" -> "veintiún", "treinta y uno" -> "treinta y un"."""
    if words.endswith("veintiuno"):
        return words.removesuffix("veintiuno") + "veintiún"
    if words.endswith("uno"):
        return words[:-1]
    return words


def amount_in_words(amount: Decimal, currency: str = "GTQ") -> str:
    """`8971.86` -> "OCHO MIL NOVECIENTOS SETENTA Y UN QUETZALES CON 86/100"."""
    value = q2(abs(amount))
    whole = int(value)
    cents = int((value - whole) * 100)
    singular, plural = CURRENCIES.get(currency, (currency, currency))
    name = singular if whole == 1 else plural
    number = _apocope(integer_words(whole))
    if whole and whole % 1_000_000 == 0:
        number += " de"  # "un millón de quetzales"
    return f"{number} {name} con {cents:02d}/100".upper()
