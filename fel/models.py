"""Processed FEL documents. Rows are written only through `fel.services`."""

from django.db import models

from fel.catalog import document_type_name


class Invoice(models.Model):
    """One certified document, identified by SAT's authorization number (a UUID)."""

    authorization_number = models.CharField(max_length=36, unique=True)
    serie = models.CharField(max_length=32, blank=True)
    numero = models.CharField(max_length=32, blank=True)
    tipo = models.CharField(
        max_length=8, blank=True, db_index=True, help_text="DTE type: FACT, FPEQ, NCRE..."
    )
    currency = models.CharField(max_length=3, blank=True)
    emisor_nit = models.CharField(max_length=32, blank=True, db_index=True)
    emisor_name = models.CharField(max_length=300, blank=True)
    receptor_id = models.CharField(max_length=32, blank=True, db_index=True, help_text="NIT, CUI or CF.")
    receptor_name = models.CharField(max_length=300, blank=True)
    certifier_nit = models.CharField(max_length=32, blank=True)
    certifier_name = models.CharField(max_length=300, blank=True)
    issued_at = models.DateTimeField(null=True, blank=True, db_index=True)
    certified_at = models.DateTimeField(null=True, blank=True)
    subtotal = models.DecimalField(max_digits=18, decimal_places=2)
    iva = models.DecimalField(max_digits=18, decimal_places=2)
    total = models.DecimalField(max_digits=18, decimal_places=2)
    valid = models.BooleanField(default=False, db_index=True)
    issues = models.JSONField(default=list, blank=True)
    xml_path = models.CharField(max_length=500, help_text="Where the XML was read, relative to FEL_ROOT.")
    xml_sha256 = models.CharField(max_length=64)
    xml = models.TextField(help_text="The XML as processed, so the PDF can be rebuilt if the file goes.")
    pdf_path = models.CharField(
        max_length=500, blank=True, help_text="Relative to FEL_ROOT; empty until rendered."
    )
    pdf_sha256 = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-issued_at", "-id"]

    def __str__(self) -> str:
        return f"{self.tipo} {self.serie}-{self.numero} ({self.emisor_name})"

    @property
    def tipo_name(self) -> str:
        return document_type_name(self.tipo)
