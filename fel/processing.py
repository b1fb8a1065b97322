"""One document through the pipeline: read (size-limited), parse, validate, render, hash.

Django-free on purpose: `fel_batch` runs this in worker processes that never set Django up;
the caller records the outcome (`fel.services`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fel.errors import FelError
from fel.parsing import Document, FelXmlError, parse_document
from fel.validation import Validation, validate

if TYPE_CHECKING:
    from fel.render import Branding


@dataclass(slots=True)
class Processed:
    xml_path: Path
    xml_sha256: str = ""
    xml_text: str = ""
    document: Document | None = None
    validation: Validation | None = None
    pdf_path: Path | None = None
    pdf_sha256: str = ""
    error: str = ""  # why the file could not be read or rendered (Spanish); empty on success


def read_limited(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, refusing files over `max_bytes` before reading them."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise FelXmlError(
                f"El archivo XML mide {size} bytes y supera el límite de {max_bytes} bytes "
                "(FEL_MAX_XML_BYTES)."
            )
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise FelXmlError(f"No se puede leer el archivo XML {path.name}: {exc.strerror}.") from None
    if len(data) > max_bytes:  # it grew between stat and read
        raise FelXmlError(f"El archivo XML supera el límite de {max_bytes} bytes (FEL_MAX_XML_BYTES).")
    return data


def write_atomically(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder, so readers never see half a PDF."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def process(
    xml_path: Path, max_bytes: int, pdf_path: Path | None = None, branding: Branding | None = None
) -> Processed:
    """Validate the file at `xml_path` and, when `pdf_path` is given, render it there.

    Never raises a FelError: the failure is returned in `error`, so a batch records it and goes on.
    """
    try:
        data = read_limited(xml_path, max_bytes)
    except FelError as exc:
        return Processed(xml_path=xml_path, error=str(exc))
    return process_bytes(xml_path, data, pdf_path, branding)


def process_bytes(
    xml_path: Path, data: bytes, pdf_path: Path | None = None, branding: Branding | None = None
) -> Processed:
    """The same for XML already in memory (`xml_path` only names it)."""
    result = Processed(xml_path=xml_path, xml_sha256=hashlib.sha256(data).hexdigest())
    result.xml_text = data.decode("utf-8", errors="replace")
    try:
        result.document = parse_document(data)
        result.validation = validate(result.document)
        if pdf_path is not None and branding is not None:
            # reportlab loads with the first PDF drawn, not with every command of the hub (about
            # 25 ms of CPU at start, mcp_stdio's included).
            from fel.render import render_pdf

            pdf = render_pdf(result.document, result.validation, branding)
            write_atomically(pdf_path, pdf)
            result.pdf_path = pdf_path
            result.pdf_sha256 = hashlib.sha256(pdf).hexdigest()
    except FelError as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"No se puede escribir el PDF {pdf_path}: {exc.strerror}."
    return result
