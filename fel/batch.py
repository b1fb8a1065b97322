"""`fel_batch`'s engine: every XML of a folder through `fel.processing`, over all cores.

Workers are separate processes (a process pool started with `spawn`, so they never inherit
the hub's threads, sockets or database connections); each returns a `Processed` and the
calling thread records it and reports progress. A broken or unreadable file is one entry in
the manifest, never the end of the batch.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from fel.processing import Processed, process, write_atomically

if TYPE_CHECKING:
    from fel.render import Branding

MANIFEST_NAME = "manifest.json"


class ManifestEntry(TypedDict):
    """One file's entry in manifest.json, as `run_batch` also reports it."""

    xml: str
    xml_sha256: str | None
    pdf: str | None
    pdf_sha256: str | None
    ok: bool
    issues: list[str]
    totals: dict[str, str] | None
    authorization_number: str | None
    error: str | None


def xml_files(folder: Path) -> list[Path]:
    """The `*.xml` files directly inside `folder` (case-insensitive), sorted by name."""
    return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".xml" and not p.is_dir())


def run(
    jobs: list[tuple[Path, Path]],
    branding: Branding,
    max_bytes: int,
    workers: int,
) -> Iterator[Processed]:
    """Process each `(xml, pdf)` pair, yielding results as they finish (in completion order)."""
    if workers <= 1 or len(jobs) <= 1:
        for xml, pdf in jobs:
            yield process(xml, max_bytes, pdf, branding)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool:
        futures = [pool.submit(process, xml, max_bytes, pdf, branding) for xml, pdf in jobs]
        for future in as_completed(futures):
            yield future.result()


def manifest_entry(result: Processed, show: Callable[[Path], str]) -> ManifestEntry:
    validation = result.validation
    issues = list(validation.issues) if validation else []
    if result.error:
        issues.append(result.error)
    document = result.document
    return {
        "xml": show(result.xml_path),
        "xml_sha256": result.xml_sha256 or None,
        "pdf": show(result.pdf_path) if result.pdf_path else None,
        "pdf_sha256": result.pdf_sha256 or None,
        "ok": bool(validation and validation.ok and not result.error),
        "issues": issues,
        "totals": validation.totals.as_strings() if validation else None,
        "authorization_number": (document.certification.authorization or None) if document else None,
        "error": result.error or None,
    }


def write_manifest(path: Path, dir_xml: str, out_dir: str, entries: list[ManifestEntry]) -> None:
    entries = sorted(entries, key=lambda e: e["xml"])
    manifest = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "dir_xml": dir_xml,
        "out_dir": out_dir,
        "count": len(entries),
        "valid": sum(1 for e in entries if e["ok"]),
        "invalid": sum(1 for e in entries if not e["ok"]),
        "files": entries,
    }
    write_atomically(path, (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode())
