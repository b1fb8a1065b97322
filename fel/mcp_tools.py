"""Seed 002's three FEL tools, with its exact argument names and results (scope `fel`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from fel import batch_jobs, selectors, services
from fel.batch import ManifestEntry
from fel.errors import FelError
from fel.models import BatchJob
from fel.paths import display_path, fel_root
from mcp_endpoint.auth.scopes import declare_scope
from mcp_endpoint.engine import tasks_extension
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tasks_extension import Followed
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import ToolContext, ToolResult
from mcp_endpoint.models import McpTask

declare_scope("fel", "FEL invoices: validate, render and batch them (files under FEL_ROOT)")
registry.add_instructions(
    "HomeHub validates and renders Guatemalan FEL invoices: fel_validate checks one XML, "
    "fel_render makes its PDF, fel_batch does a whole folder; paths are relative to FEL_ROOT."
)


class FelValidateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    xml_path: str = Field(
        description="Ruta al XML FEL, relativa a FEL_ROOT (p. ej. xml/factura.xml) "
        "o absoluta dentro de FEL_ROOT."
    )


class FelTotals(BaseModel):
    subtotal: str
    iva: str
    total: str


class FelValidateOutput(BaseModel):
    ok: bool = Field(description="true si no hay inconsistencias.")
    issues: list[str] = Field(description="Inconsistencias detectadas, una frase por problema.")
    totals: FelTotals = Field(description="Montos con dos decimales (ROUND_HALF_UP).")


class FelRenderInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    xml_path: str = Field(description="Ruta al XML FEL, relativa a FEL_ROOT (p. ej. xml/factura.xml).")
    logo_path: str | None = Field(
        default=None, description="Ruta a un logo, relativa a FEL_ROOT; si es null se usa FEL_LOGO_PATH."
    )
    theme: str | None = Field(
        default=None, description="Tema de colores: azul, verde, vino, grafito o #RRGGBB; null usa FEL_THEME."
    )
    out_path: str | None = Field(
        default=None,
        description="Ruta del PDF, relativa a FEL_ROOT; si es null, <FEL_OUTPUT_DIR>/<nombre del XML>.pdf "
        "(por defecto out/).",
    )


class FelRenderOutput(BaseModel):
    ok: bool
    pdf_path: str


class FelBatchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dir_xml: str = Field(description="Directorio con archivos *.xml, relativo a FEL_ROOT (p. ej. xml).")
    out_dir: str | None = Field(
        default=None,
        description="Directorio de salida, relativo a FEL_ROOT (por defecto FEL_OUTPUT_DIR, out).",
    )


class FelBatchOutput(BaseModel):
    ok: bool = Field(
        description="true cuando el lote terminó; cada archivo tiene su resultado en el manifest."
    )
    count: int = Field(description="Archivos XML procesados.")
    out_dir: str
    manifest_path: str
    invalid: int = Field(description="Archivos con inconsistencias o ilegibles (detalle en el manifest).")


@tool(scope="fel", idempotent=True)
def fel_validate(params: FelValidateInput, ctx: ToolContext) -> FelValidateOutput:
    """Valida un XML FEL: campos obligatorios, IVA 12 %, total = subtotal + IVA, NIT y autorización."""
    try:
        validation = services.validate_xml(
            params.xml_path, actor=ctx.caller.actor, interface=ctx.caller.interface
        )
    except FelError as exc:
        raise ToolError(str(exc)) from None
    return FelValidateOutput.model_validate(validation.as_dict())


@tool(scope="fel", idempotent=True)
def fel_render(params: FelRenderInput, ctx: ToolContext) -> FelRenderOutput:
    """Genera un PDF con marca (logo, colores, QR de verificación de SAT) a partir de un XML FEL."""
    try:
        pdf = services.render_xml(
            params.xml_path,
            logo_path=params.logo_path,
            theme=params.theme,
            out_path=params.out_path,
            actor=ctx.caller.actor,
            interface=ctx.caller.interface,
        )
    except FelError as exc:
        raise ToolError(str(exc)) from None
    return FelRenderOutput(ok=True, pdf_path=display_path(pdf))


LOGGER = "homehub.fel"


def _log_entry(ctx: ToolContext, entry: ManifestEntry) -> None:
    """One file of a batch, as the client's log hears it: done at debug, with problems at warning."""
    if entry["ok"]:
        ctx.log_sync(
            "debug", {"message": "Procesado", "xml": entry["xml"], "pdf": entry["pdf"]}, logger=LOGGER
        )
    else:
        data = {"message": "Con inconsistencias", "xml": entry["xml"], "issues": entry["issues"]}
        ctx.log_sync("warning", data, logger=LOGGER)


# A client that declared MCP's tasks extension gets the batch as a task it follows with tasks/get:
# a batch job on Django's Tasks framework, which outlives the process that took the call.
@tool(scope="fel", idempotent=True, task_support="optional", output=FelBatchOutput)
def fel_batch(params: FelBatchInput, ctx: ToolContext) -> FelBatchOutput | ToolResult:
    """Procesa un directorio de XML FEL: un PDF por archivo y un manifest.json con validación y SHA-256."""
    if ctx.task_id is not None:
        return _queue_batch(params, ctx, ctx.task_id)
    ctx.log_sync("info", {"message": "Lote iniciado", "dir_xml": params.dir_xml}, logger=LOGGER)
    try:
        outcome = services.run_batch(
            params.dir_xml,
            params.out_dir,
            actor=ctx.caller.actor,
            interface=ctx.caller.interface,
            progress=lambda done, total, name: ctx.report_progress_sync(
                done, total, f"{done}/{total} {name}"
            ),
            on_entry=lambda entry: _log_entry(ctx, entry),
        )
    except FelError as exc:
        ctx.log_sync("warning", {"message": "Lote no procesado", "error": str(exc)}, logger=LOGGER)
        raise ToolError(str(exc)) from None
    services.record_batch(
        outcome, folder=params.dir_xml, actor=ctx.caller.actor, interface=ctx.caller.interface
    )
    summary = {
        "message": "Lote terminado",
        "count": outcome.count,
        "invalid": outcome.invalid,
        "manifest_path": display_path(outcome.manifest_path),
    }
    ctx.log_sync("info", summary, logger=LOGGER)
    return FelBatchOutput(
        ok=True,
        count=outcome.count,
        out_dir=display_path(outcome.out_dir),
        manifest_path=display_path(outcome.manifest_path),
        invalid=outcome.invalid,
    )


BATCH_JOBS = "fel.batch"  # the kind of job a task of `fel_batch` follows


def _queue_batch(params: FelBatchInput, ctx: ToolContext, task_id: str) -> ToolResult:
    """The batch as a job (the one the dashboard and REST run), its task following it: the job
    and the link are saved together, so a task is never left following nothing."""
    try:
        job = batch_jobs.start_folder_job(
            params.dir_xml,
            params.out_dir,
            actor=ctx.caller.actor,
            interface=ctx.caller.interface,
            then=lambda job: tasks_extension.follow(task_id, BATCH_JOBS, str(job.pk)),
        )
    except FelError as exc:
        raise ToolError(str(exc)) from None
    return ToolResult(structured={"batch_job": job.pk}, text=f"Lote en cola (trabajo {job.pk})")


def _batch_task_state(ref: str) -> Followed | None:
    """A `fel_batch` task as its job stands: working while it runs (with how many files are
    done), then the result the in-call tool gives, built from the job's rows and manifest, or
    its error as the in-call tool's error."""
    job = selectors.job(int(ref))
    if job is None:
        return None
    if not job.finished:
        return Followed(McpTask.WORKING, job.updated_at, message=f"{job.done} of {job.total} files")
    if job.state == BatchJob.State.FAILED:
        result = ToolResult(is_error=True, text=job.error)
    else:
        files = selectors.job_files(job)
        root = fel_root()
        output = FelBatchOutput(
            ok=True,
            count=len(files),
            out_dir=display_path(root / job.out_dir),
            manifest_path=display_path(root / job.manifest_path),
            invalid=sum(not file.ok for file in files),
        )
        result = ToolResult(structured=output.model_dump(mode="json", exclude_none=True))
    return Followed(McpTask.COMPLETED, job.updated_at, result=result.as_mcp())


def _cancel_batch(ref: str) -> None:
    batch_jobs.cancel_job(int(ref))


tasks_extension.register_follower(BATCH_JOBS, state=_batch_task_state, cancel=_cancel_batch)
