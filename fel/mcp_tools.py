"""Seed 002's three FEL tools, with its exact argument names and results (scope `fel`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from fel import services
from fel.batch import ManifestEntry
from fel.errors import FelError
from fel.paths import display_path
from mcp_endpoint.auth.scopes import declare_scope
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import ToolContext

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


# A client that declared MCP's tasks extension gets the batch as a task it follows with tasks/get.
@tool(scope="fel", idempotent=True, task_support="optional")
def fel_batch(params: FelBatchInput, ctx: ToolContext) -> FelBatchOutput:
    """Procesa un directorio de XML FEL: un PDF por archivo y un manifest.json con validación y SHA-256."""
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
