"""The branded PDF of a FEL document, drawn with reportlab's canvas.

The layout is computed before anything is drawn (row heights from the wrapped descriptions,
then pages), so every page can say "Página i de N", the items table repeats its header on
each page, and the closing block (totals, QR, total in words, phrases) is placed whole: on
the last page if it fits, otherwise on a page of its own. The text is set in the branding's
TrueType family (`fel.typefaces`), embedded as a subset of the glyphs used, so it prints the
same everywhere and stays extractable. The QR's side and the top bar's height are settings;
everything below the bar moves with it.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from urllib.parse import urlencode

import segno
from reportlab import rl_config
from reportlab.lib.colors import HexColor, white
from reportlab.lib.pagesizes import letter
from reportlab.lib.utils import ImageReader, simpleSplit
from reportlab.pdfgen.canvas import Canvas

from fel.catalog import document_type_name, phrase_text
from fel.errors import FelError
from fel.money import exact, money, money_grouped
from fel.parsing import Document, Item
from fel.themes import Theme
from fel.typefaces import SHIPPED, Typeface, font_names
from fel.validation import NO_IVA_TYPES, Validation
from fel.words import amount_in_words

SAT_VERIFY_URL = "https://felpub.c.sat.gob.gt/verificador-web/publico/vistas/verificacionDte.jsf"

PAGE_W, PAGE_H = letter
MARGIN = 40
CONTENT_W = PAGE_W - 2 * MARGIN
FOOTER_TOP = 58  # nothing but the footer below this line
HEAD_H = 20
LEADING = 10.5
ROW_PAD = 7
HEADER_TEXT_W = 220  # the emisor's block, left of the document box
# Any of the eight masks gives a valid, scannable code (the format bits name it); trying all
# eight to score them is 80 % of a PDF's rendering time, so one fixed mask is used.
QR_MASK = 4
TOTALS_W = 210

# (title, width, align); the description takes what the others leave.
COLUMNS = [("#", 24, "c"), ("Cant.", 48, "r"), ("Descripción", 0, "l"), ("P. unitario", 72, "r"),
           ("Descuento", 62, "r"), ("Total", 78, "r")]  # fmt: skip
DESC_W = CONTENT_W - sum(w for _, w, _ in COLUMNS) - 12


# Compressed streams stay binary: the ASCII85 wrapper only made files bigger and slower to write.
rl_config.useA85 = 0


class RenderError(FelError):
    """The document lacks what the PDF must show (message in Spanish)."""


@dataclass(frozen=True, slots=True)
class Branding:
    """What settings (or the call) choose: logo file, colours and the footer's contact line."""

    theme: Theme
    logo_path: str | None = None  # absolute, already checked to be inside FEL_ROOT
    website: str = ""
    phone: str = ""
    email: str = ""
    typeface: Typeface = SHIPPED
    qr_size: float = 96  # the QR code's side, points
    top_bar_height: float = 10  # the coloured bar along each page's top edge, points


def verification_url(doc: Document) -> str:
    """SAT's public verification page for this document (what the QR code holds)."""
    query = urlencode(
        {
            "tipo": "autorizacion",
            "numero": doc.certification.authorization,
            "emisor": doc.emisor.tax_id.replace("-", ""),
            "receptor": doc.receptor.tax_id.replace("-", ""),
            "monto": money(doc.grand_total or Decimal(0)),
        }
    )
    return f"{SAT_VERIFY_URL}?{query}"


def render_pdf(doc: Document, validation: Validation, branding: Branding) -> bytes:
    """The PDF of `doc`, as bytes."""
    needed = {
        "Certificacion/NumeroAutorizacion": doc.certification.authorization,
        "Emisor/@NITEmisor": doc.emisor.tax_id,
        "Receptor/@IDReceptor": doc.receptor.tax_id,
        "Totales/GranTotal": doc.grand_total,
    }
    absent = [name for name, value in needed.items() if value in ("", None)]
    if absent:
        raise RenderError(
            f"No se puede generar el PDF: falta {', '.join(absent)} (necesario para el código QR de SAT)."
        )
    fonts = font_names(branding.typeface)
    buffer = io.BytesIO()
    # types-reportlab declares initialFontName a float; reportlab takes a font's name.
    canvas = Canvas(
        buffer,
        pagesize=letter,
        pageCompression=1,
        initialFontName=fonts[0],  # type: ignore[arg-type]
    )
    _Painter(canvas, doc, validation, branding, fonts).paint()
    canvas.save()
    return buffer.getvalue()


@lru_cache(maxsize=8)
def _logo(path: str, mtime_ns: int) -> ImageReader:
    """Decoded once per worker and file version: batches reuse it for every document."""
    return ImageReader(path)


def load_logo(path: str) -> ImageReader:
    try:
        return _logo(path, os.stat(path).st_mtime_ns)
    except (OSError, ValueError, SyntaxError) as exc:  # Pillow's errors for unreadable images
        raise RenderError(f"El logo {path} no es una imagen legible ({exc}).") from None


def _quantity(value: Decimal | None) -> str:
    if value is None:
        return ""
    if value == value.to_integral_value():
        return f"{int(value):,}"
    return f"{value.normalize():f}"


def _grouped_exact(value: Decimal | None) -> str:
    """Thousands separators, and more than two decimals only when the document has them."""
    if value is None:
        return ""
    whole, _, frac = exact(value).partition(".")
    sign = "-" if whole.startswith("-") else ""
    return f"{sign}{int(whole.lstrip('-')):,}.{frac}"


def _datetime(doc_value: datetime | None) -> str:
    return doc_value.strftime("%d/%m/%Y %H:%M:%S") if doc_value else "—"


@dataclass(slots=True)
class _Row:
    item: Item
    lines: list[str]
    height: float


@dataclass(slots=True)
class _Para:
    font: str
    size: float
    colour: str
    lines: list[str]
    space_before: float = 0

    @property
    def height(self) -> float:
        return self.space_before + len(self.lines) * (self.size + 2.5)


class _Painter:
    def __init__(
        self,
        canvas: Canvas,
        doc: Document,
        validation: Validation,
        branding: Branding,
        fonts: tuple[str, str],
    ) -> None:
        self.c = canvas
        self.doc = doc
        self.validation = validation
        self.branding = branding
        self.theme = branding.theme
        self.regular, self.bold = fonts
        self.qr_size = branding.qr_size
        self.top = PAGE_H - 24 - branding.top_bar_height  # content starts below the bar
        self.first_table_top = self.top - 190
        self.next_table_top = self.top - 58
        self.colours = {
            name: HexColor(getattr(self.theme, name))
            for name in ("primary", "accent", "tint", "ink", "muted")
        }
        self.title = document_type_name(doc.tipo).upper()

    # --- layout -------------------------------------------------------------------------

    def _rows(self) -> list[_Row]:
        rows = []
        for item in self.doc.items:
            text = item.description or "(sin descripción)"
            if item.unit:
                text = f"{text} [{item.unit}]"
            lines = simpleSplit(text, self.regular, 8.5, DESC_W) or [""]
            rows.append(_Row(item, lines, len(lines) * LEADING + ROW_PAD))
        return rows

    def _summary_paragraphs(self) -> list[_Para]:
        doc, width = self.doc, CONTENT_W
        in_words = "Total en letras: " + amount_in_words(doc.grand_total or Decimal(0), doc.currency)
        paras = [_Para(self.bold, 8.5, "ink", simpleSplit(in_words, self.bold, 8.5, width), space_before=10)]
        phrases = [phrase_text(t, e) for t, e in doc.phrases]
        if phrases:
            paras.append(
                _Para(self.regular, 8, "muted", simpleSplit(" · ".join(phrases), self.regular, 8, width), 4)
            )
        for ref in doc.references:
            text = (
                f"Documento de origen: serie {ref.serie or '—'}, número {ref.numero or '—'}, "
                f"autorización {ref.authorization or '—'}, emitido {ref.issued or '—'}. "
                f"Motivo del ajuste: {ref.reason or '—'}."
            )
            paras.append(_Para(self.regular, 8, "ink", simpleSplit(text, self.regular, 8, width), 4))
        if doc.adenda:
            text = "Información adicional: " + "; ".join(f"{name}: {value}" for name, value in doc.adenda)
            paras.append(_Para(self.regular, 7.5, "muted", simpleSplit(text, self.regular, 7.5, width), 4))
        if not self.validation.ok:
            issues = self.validation.issues
            text = (
                f"Atención: este documento no pasó la validación ({len(issues)} inconsistencia(s)). "
                + " ".join(issues[:3])
            )
            paras.append(_Para(self.bold, 8, "alert", simpleSplit(text, self.bold, 8, width - 12), 8))
        return paras

    def _paginate(self, rows: list[_Row], summary_h: float) -> list[list[_Row]]:
        """Rows per page; a trailing empty page means the closing block needs a page of its own."""
        pages: list[list[_Row]] = [[]]
        y = self.first_table_top - HEAD_H
        for row in rows:
            if y - row.height < FOOTER_TOP and pages[-1]:
                pages.append([])
                y = self.next_table_top - HEAD_H
            pages[-1].append(row)
            y -= row.height
        if y - summary_h < FOOTER_TOP:
            pages.append([])
        return pages

    # --- drawing ------------------------------------------------------------------------

    def paint(self) -> None:
        c, doc = self.c, self.doc
        c.setTitle(f"{self.title} {doc.certification.serie}-{doc.certification.numero}")
        c.setAuthor(doc.emisor.name)
        c.setSubject(f"DTE {doc.certification.authorization}")
        c.setCreator("HomeHub FEL")
        paras = self._summary_paragraphs()
        summary_h = 14 + self.qr_size + sum(p.height for p in paras)
        pages = self._paginate(self._rows(), summary_h)
        for number, rows in enumerate(pages, start=1):
            if number == 1:
                self._first_header()
                y = self.first_table_top
            else:
                self._next_header()
                y = self.next_table_top
            if rows:
                y = self._table(rows, y)
            if number == len(pages):
                self._summary(y, paras)
            self._footer(number, len(pages))
            c.showPage()

    def _fill(self, name: str) -> None:
        self.c.setFillColor(HexColor("#B03A2E") if name == "alert" else self.colours[name])

    def _text(self, x: float, y: float, text: str, font: str | None = None, size: float = 8.5,
              colour: str = "ink", align: str = "l") -> None:  # fmt: skip
        c = self.c
        c.setFont(font or self.regular, size)
        self._fill(colour)
        if align == "r":
            c.drawRightString(x, y, text)
        elif align == "c":
            c.drawCentredString(x, y, text)
        else:
            c.drawString(x, y, text)

    def _top_bar(self) -> None:
        height = self.branding.top_bar_height
        if height > 0:
            self._fill("primary")
            self.c.rect(0, PAGE_H - height, PAGE_W, height, stroke=0, fill=1)

    def _logo_box(self, x: float, y: float, size: float) -> None:
        c, path = self.c, self.branding.logo_path
        if path:
            image = load_logo(path)
            c.drawImage(image, x, y, size, size, preserveAspectRatio=True, anchor="c", mask="auto")
            return
        # No logo configured: a monogram of the business's name in the theme's colour.
        name = self.doc.emisor.commercial_name or self.doc.emisor.name or "?"
        initials = "".join(word[0] for word in name.split() if word[:1].isalnum())[:2].upper() or "?"
        self._fill("primary")
        c.roundRect(x, y, size, size, 8, stroke=0, fill=1)
        c.setFillColor(white)
        c.setFont(self.bold, 22)
        c.drawCentredString(x + size / 2, y + size / 2 - 8, initials)

    def _first_header(self) -> None:
        c, doc = self.c, self.doc
        emisor, cert = doc.emisor, doc.certification
        self._top_bar()
        self._logo_box(MARGIN, self.top - 64, 64)
        x, y = MARGIN + 76, self.top - 12
        heading = emisor.commercial_name or emisor.name
        size = 14 if self.c.stringWidth(heading, self.bold, 14) <= HEADER_TEXT_W else 10.5
        self._text(x, y, simpleSplit(heading, self.bold, size, HEADER_TEXT_W)[0], self.bold, size)
        y -= 14
        if emisor.commercial_name and emisor.name and emisor.name != emisor.commercial_name:
            for line in simpleSplit(emisor.name, self.regular, 8.5, HEADER_TEXT_W)[:2]:
                self._text(x, y, line, self.regular, 8.5, "muted")
                y -= 11
            y -= 1
        self._text(
            x,
            y,
            f"NIT {emisor.tax_id or '—'}   ·   Establecimiento {emisor.establishment or '—'}",
            self.bold,
            8.5,
        )
        y -= 11
        for line in simpleSplit(emisor.address, self.regular, 8, HEADER_TEXT_W)[:3]:
            self._text(x, y, line, self.regular, 8, "muted")
            y -= 10
        if emisor.email:
            self._text(x, y, emisor.email, self.regular, 8, "muted")

        # Document box, top right.
        bx, bw, bh = PAGE_W - MARGIN - 224, 224, 118
        by = self.top - bh + 4
        c.setStrokeColor(self.colours["primary"])
        c.setLineWidth(0.8)
        self._fill("tint")
        c.roundRect(bx, by, bw, bh, 6, stroke=1, fill=1)
        self._fill("primary")
        c.roundRect(bx, by + bh - 24, bw, 24, 6, stroke=0, fill=1)
        c.rect(bx, by + bh - 24, bw, 8, stroke=0, fill=1)
        title_size = 11 if c.stringWidth(self.title, self.bold, 11) < bw - 16 else 8.5
        c.setFillColor(white)
        c.setFont(self.bold, title_size)
        c.drawCentredString(bx + bw / 2, by + bh - 16, self.title)
        lx, rx, y = bx + 10, bx + bw / 2 + 4, by + bh - 36
        self._label_value(lx, y, "Serie", cert.serie or "—")
        self._label_value(rx, y, "Número", cert.numero or "—")
        y -= 21
        self._label_value(lx, y, "Número de autorización", cert.authorization or "—", size=8.3)
        y -= 21
        self._label_value(lx, y, "Fecha de emisión", _datetime(doc.issued_at))
        self._label_value(rx, y, "Fecha de certificación", _datetime(cert.certified_at))
        y -= 21
        self._label_value(lx, y, "Moneda", doc.currency or "—")
        self._label_value(rx, y, "Régimen IVA", emisor.vat_affiliation or "—")

        # Receptor panel.
        receptor = doc.receptor
        py, ph = self.top - 176, 48
        self._fill("tint")
        c.roundRect(MARGIN, py, CONTENT_W, ph, 5, stroke=0, fill=1)
        self._fill("accent")
        c.rect(MARGIN, py, 3, ph, stroke=0, fill=1)
        self._text(MARGIN + 12, py + ph - 13, "CLIENTE", self.bold, 7.5, "accent")
        self._text(MARGIN + 12, py + ph - 26, receptor.name or "—", self.bold, 10)
        id_label = {"CUI": "CUI", "EXT": "ID extranjero"}.get(receptor.special_type, "NIT")
        self._text(MARGIN + 12, py + 9, f"{id_label}: {receptor.tax_id or '—'}", self.bold, 8.5)
        right = MARGIN + CONTENT_W - 12
        address = simpleSplit(receptor.address, self.regular, 8, 250)[:2]
        for i, line in enumerate(address):
            self._text(right, py + ph - 13 - 10 * i, line, self.regular, 8, "muted", "r")
        if receptor.email:
            self._text(right, py + 9, receptor.email, self.regular, 8, "muted", "r")

    def _label_value(self, x: float, y: float, label: str, value: str, size: float = 8.5) -> None:
        self._text(x, y, label.upper(), self.bold, 6.3, "muted")
        self._text(x, y - 10, value, self.bold, size)

    def _next_header(self) -> None:
        cert = self.doc.certification
        self._top_bar()
        self._text(
            MARGIN, self.top - 14, self.doc.emisor.commercial_name or self.doc.emisor.name, self.bold, 11
        )
        self._text(MARGIN, self.top - 27, f"NIT {self.doc.emisor.tax_id}", self.regular, 8, "muted")
        right = PAGE_W - MARGIN
        self._text(
            right,
            self.top - 14,
            f"{self.title}  ·  Serie {cert.serie}  ·  Número {cert.numero}",
            self.bold,
            9,
            align="r",
        )
        self._text(
            right,
            self.top - 27,
            f"Autorización {cert.authorization} (continuación)",
            self.regular,
            8,
            "muted",
            "r",
        )
        self.c.setStrokeColor(self.colours["accent"])
        self.c.setLineWidth(0.6)
        self.c.line(MARGIN, self.top - 36, PAGE_W - MARGIN, self.top - 36)

    def _column_x(self) -> list[tuple[float, float, str]]:
        """(left x, width, align) of each column."""
        spots: list[tuple[float, float, str]] = []
        x: float = MARGIN
        for _, fixed_width, align in COLUMNS:
            width = fixed_width or DESC_W + 12
            spots.append((x, width, align))
            x += width
        return spots

    def _table(self, rows: list[_Row], top: float) -> float:
        c = self.c
        spots = self._column_x()
        self._fill("primary")
        c.rect(MARGIN, top - HEAD_H, CONTENT_W, HEAD_H, stroke=0, fill=1)
        c.setFillColor(white)
        c.setFont(self.bold, 8)
        for (title, _, _), (x, width, align) in zip(COLUMNS, spots, strict=True):
            self._cell(x, width, align, top - HEAD_H + 7, title, self.bold, 8, None)
        y = top - HEAD_H
        for index, row in enumerate(rows):
            if index % 2:
                self._fill("tint")
                c.rect(MARGIN, y - row.height, CONTENT_W, row.height, stroke=0, fill=1)
            item = row.item
            baseline = y - ROW_PAD / 2 - 8
            values = [str(item.position), _quantity(item.quantity), None, _grouped_exact(item.unit_price),
                      _grouped_exact(item.discount), _grouped_exact(item.total)]  # fmt: skip
            for value, (x, width, align) in zip(values, spots, strict=True):
                if value is None:
                    for i, line in enumerate(row.lines):
                        self._cell(x, width, align, baseline - i * LEADING, line, self.regular, 8.5, "ink")
                else:
                    self._cell(x, width, align, baseline, value, self.regular, 8.5, "ink")
            y -= row.height
        c.setStrokeColor(self.colours["primary"])
        c.setLineWidth(0.8)
        c.line(MARGIN, y, PAGE_W - MARGIN, y)
        return y

    def _cell(self, x: float, width: float, align: str, y: float, text: str, font: str, size: float,
              colour: str | None) -> None:  # fmt: skip
        c = self.c
        c.setFont(font, size)
        if colour:
            self._fill(colour)
        if align == "r":
            c.drawRightString(x + width - 6, y, text)
        elif align == "c":
            c.drawCentredString(x + width / 2, y, text)
        else:
            c.drawString(x + 6, y, text)

    def _summary(self, top: float, paras: list[_Para]) -> None:
        c, doc = self.c, self.doc
        totals = self.validation.totals
        y = top - 14
        # Totals box, right.
        bx = PAGE_W - MARGIN - TOTALS_W
        iva_label = "IVA (no aplica)" if doc.tipo in NO_IVA_TYPES else "IVA (12 %)"
        lines = [("Subtotal (sin IVA)", totals.subtotal), (iva_label, totals.iva)]
        row_y = y - 12
        for label, value in lines:
            self._text(bx + 8, row_y, label, self.regular, 9, "muted")
            self._text(
                bx + TOTALS_W - 8, row_y, f"{doc.currency} {money_grouped(value)}", self.regular, 9, align="r"
            )
            row_y -= 16
        self._fill("primary")
        c.roundRect(bx, row_y - 12, TOTALS_W, 26, 4, stroke=0, fill=1)
        c.setFillColor(white)
        c.setFont(self.bold, 11)
        c.drawString(bx + 8, row_y - 3, "TOTAL")
        c.setFont(self.bold, 12)
        c.drawRightString(bx + TOTALS_W - 8, row_y - 3, f"{doc.currency} {money_grouped(totals.total)}")
        cert = doc.certification
        self._text(
            bx + TOTALS_W, row_y - 30, f"Certificador: {cert.certifier_name}", self.regular, 7.5, "muted", "r"
        )
        self._text(
            bx + TOTALS_W,
            row_y - 40,
            f"NIT del certificador: {cert.certifier_nit}",
            self.regular,
            7.5,
            "muted",
            "r",
        )

        # QR and how to verify, left.
        url = verification_url(doc)
        self._qr(url, MARGIN, y - self.qr_size, self.qr_size)
        tx, tw = MARGIN + self.qr_size + 10, bx - MARGIN - self.qr_size - 24
        ty = y - 10
        self._text(tx, ty, "Verifique este documento", self.bold, 9, "primary")
        ty -= 12
        for line in simpleSplit(
            "Escanee el código QR o consulte el portal de verificación de SAT con el número de autorización.",
            self.regular, 7.5, tw,
        ):  # fmt: skip
            self._text(tx, ty, line, self.regular, 7.5, "muted")
            ty -= 9.5
        ty -= 2
        for line in self._wrap_anywhere(url, self.regular, 6, tw):
            self._text(tx, ty, line, self.regular, 6, "accent")
            ty -= 7.5

        y -= self.qr_size
        for para in paras:
            y -= para.space_before
            if para.colour == "alert":
                self.c.setStrokeColor(HexColor("#B03A2E"))
                self.c.setFillColor(HexColor("#FDEDEC"))
                self.c.roundRect(MARGIN, y - para.height + para.space_before - 4, CONTENT_W,
                                 para.height - para.space_before + 6, 4, stroke=1, fill=1)  # fmt: skip
            for line in para.lines:
                y -= para.size + 2.5
                self._text(
                    MARGIN + (6 if para.colour == "alert" else 0),
                    y + 2.5,
                    line,
                    para.font,
                    para.size,
                    para.colour,
                )

    def _wrap_anywhere(self, text: str, font: str, size: float, width: float) -> list[str]:
        """Break a text without spaces (the URL) wherever the width runs out."""
        lines, line, used = [], "", 0.0
        for char in text:
            char_width = self.c.stringWidth(char, font, size)
            if used + char_width > width and line:
                lines.append(line)
                line, used = "", 0.0
            line += char
            used += char_width
        return [*lines, line]

    def _qr(self, data: str, x: float, y: float, size: float) -> None:
        """The QR as vector squares (one path, one run per row of dark modules): crisp at any zoom."""
        matrix = segno.make(data, error="m", boost_error=False, mask=QR_MASK).matrix
        quiet = 2
        count = len(matrix) + 2 * quiet
        module = size / count
        c = self.c
        c.setFillColor(white)
        c.rect(x, y, size, size, stroke=0, fill=1)
        self._fill("ink")
        path = c.beginPath()
        for r, row in enumerate(matrix):
            top = y + size - (r + quiet + 1) * module
            start = None
            for col, dark in enumerate((*row, 0)):
                if dark and start is None:
                    start = col
                elif not dark and start is not None:
                    path.rect(x + (start + quiet) * module, top, (col - start) * module, module)
                    start = None
        c.drawPath(path, stroke=0, fill=1)

    def _footer(self, number: int, count: int) -> None:
        c, b = self.c, self.branding
        c.setStrokeColor(self.colours["accent"])
        c.setLineWidth(0.6)
        c.line(MARGIN, FOOTER_TOP - 12, PAGE_W - MARGIN, FOOTER_TOP - 12)
        contact = "   ·   ".join(part for part in (b.website, b.phone, b.email) if part)
        if contact:
            self._text(MARGIN, FOOTER_TOP - 25, contact, self.bold, 8, "primary")
        self._text(
            PAGE_W - MARGIN, FOOTER_TOP - 25, f"Página {number} de {count}", self.regular, 8, "muted", "r"
        )
        self._text(
            MARGIN,
            FOOTER_TOP - 37,
            "Documento Tributario Electrónico (FEL) certificado ante la Superintendencia de Administración "
            "Tributaria (SAT).",
            self.regular,
            6.8,
            "muted",
        )
