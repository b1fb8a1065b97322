"""FEL throughput: validations/s and PDFs/s on one core, then a 500-invoice batch on all cores.

Run from the project root: `.venv/bin/python bench/bench_fel.py` (about 20 seconds). It uses
the Django-free pipeline (`fel.processing`, `fel.batch`) on copies of the test fixtures
(`tests/fixtures/fel/`), so it measures parsing, validation and rendering, not the database.
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fel import batch  # noqa: E402
from fel.processing import process  # noqa: E402
from fel.render import Branding  # noqa: E402
from fel.themes import get_theme  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "fel"
MAX_BYTES = 2 * 1024 * 1024
BRANDING = Branding(
    theme=get_theme("azul"), website="www.ejemplo.gt", phone="+502 2222-3333", email="f@ejemplo.gt"
)


def rate(label: str, seconds: float, work) -> float:
    """Run `work()` (one pass over the samples, returning how many it did) for about `seconds`."""
    work()  # warm-up: imports, font metrics, caches
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        done += work()
    per_second = done / elapsed
    print(f"{label:<38} {per_second:8.1f}/s  ({done} in {elapsed:.2f} s)")
    return per_second


def main() -> None:
    samples = sorted((FIXTURES / "real").glob("*.xml")) + sorted((FIXTURES / "broken").glob("*.xml"))
    real = sorted((FIXTURES / "real").glob("*.xml"))
    print(f"samples: {len(samples)} ({len(real)} real), cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        out.mkdir()

        def validate_all() -> int:
            for path in samples:
                process(path, MAX_BYTES)
            return len(samples)

        def render_all() -> int:
            for path in real:
                process(path, MAX_BYTES, out / f"{path.stem}.pdf", BRANDING)
            return len(real)

        rate("validations, one core (read+parse+check)", 4, validate_all)
        rate("PDFs, one core (read+validate+render+write)", 6, render_all)

        folder = Path(tmp) / "xml500"
        folder.mkdir()
        for i in range(500):
            source = samples[i % len(samples)]
            shutil.copy(source, folder / f"{i:03d}_{source.name}")
        batch_out = Path(tmp) / "batch_out"
        batch_out.mkdir()
        jobs = [(p, batch_out / f"{p.stem}.pdf") for p in batch.xml_files(folder)]
        workers = os.cpu_count() or 1
        start = time.perf_counter()
        results = list(batch.run(jobs, BRANDING, MAX_BYTES, workers))
        elapsed = time.perf_counter() - start
        rendered = sum(1 for r in results if r.pdf_path)
        print(
            f"batch of {len(results)} on {workers} processes: {elapsed:.2f} s, "
            f"{len(results) / elapsed:.1f} files/s "
            f"({rendered} PDFs, {len(results) - rendered} without PDF), pool start-up included"
        )
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak memory: parent {own:.0f} MiB, largest worker {child:.0f} MiB")


if __name__ == "__main__":
    main()
