"""Admin for recorded invoices: search, filters, the PDF, and re-rendering through the services."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import FileResponse, Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from audit.models import Event
from fel import selectors, services
from fel.errors import FelError
from fel.models import Invoice


@admin.register(Invoice)
class InvoiceAdmin(admin.ModelAdmin):
    list_display = ["authorization_number", "tipo", "serie", "numero", "emisor_name", "receptor_id",
                    "issued_at", "total", "valid", "pdf_link"]  # fmt: skip
    list_filter = ["valid", "tipo", "currency", "issued_at", "certifier_name"]
    search_fields = ["authorization_number", "serie", "numero", "emisor_nit", "emisor_name",
                     "receptor_id", "receptor_name"]  # fmt: skip
    date_hierarchy = "issued_at"
    actions = ["rerender"]
    readonly_fields = [field.name for field in Invoice._meta.fields] + ["pdf_link"]
    exclude = ["xml"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # invoices come from processed XML, through the services

    def has_change_permission(self, request: HttpRequest, obj: Invoice | None = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        pdf = path("<int:pk>/pdf/", self.admin_site.admin_view(self.pdf_view), name="fel_invoice_pdf")
        return [pdf, *super().get_urls()]

    def pdf_view(self, request: HttpRequest, pk: int) -> FileResponse:
        invoice = get_object_or_404(Invoice, pk=pk)
        if not self.has_view_permission(request, invoice):
            raise Http404
        pdf = selectors.invoice_pdf(invoice)
        if pdf is None:
            raise Http404("This invoice has no PDF yet: use the re-render action.")
        name = f"{invoice.tipo}-{invoice.serie}-{invoice.numero}.pdf"
        return FileResponse(pdf.open("rb"), content_type="application/pdf", filename=name)

    @admin.display(description="PDF")
    def pdf_link(self, obj: Invoice) -> str:
        if not obj.pdf_path:
            return "—"
        return format_html(
            '<a href="{}" target="_blank">PDF</a>', reverse("admin:fel_invoice_pdf", args=[obj.pk])
        )

    @admin.action(description="Re-render the PDF of the selected invoices")
    def rerender(self, request: HttpRequest, queryset: QuerySet[Invoice]) -> None:
        done = 0
        for invoice in queryset:
            try:
                services.rerender_invoice(
                    invoice, actor=request.user.get_username(), interface=Event.Interface.ADMIN
                )
                done += 1
            except FelError as exc:
                self.message_user(request, f"{invoice.authorization_number}: {exc}", messages.ERROR)
        if done:
            self.message_user(request, f"{done} PDF(s) rendered.", messages.SUCCESS)
