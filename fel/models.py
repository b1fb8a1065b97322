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


class BatchJob(models.Model):
    """A `fel_batch` run started from the dashboard or the REST API, on uploaded files.

    Its progress lives here (not in one process's memory), so any hub process can report it and
    a reloaded page finds it again. Rows are written only through `fel.batch_jobs`, whose task
    (Django's Tasks framework) runs it on any tasks worker: `task_id` names the task holding it
    and `updated_at` is that task's heartbeat, so a batch whose worker died is found and resumed.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    folder = models.CharField(max_length=64, unique=True, help_text="Name of its folders under FEL_ROOT.")
    created_by = models.CharField(max_length=150)
    interface = models.CharField(max_length=16)
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED, db_index=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    invalid = models.PositiveIntegerField(default=0)
    current = models.CharField(max_length=200, blank=True, help_text="The file last finished.")
    xml_dir = models.CharField(max_length=500, help_text="Relative to FEL_ROOT.")
    out_dir = models.CharField(max_length=500, help_text="Relative to FEL_ROOT.")
    manifest_path = models.CharField(max_length=500, blank=True, help_text="Relative to FEL_ROOT.")
    task_id = models.CharField(
        max_length=64, blank=True, help_text="The task running the batch; empty while it waits for one."
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"batch {self.folder} ({self.state}, {self.done}/{self.total})"

    @property
    def finished(self) -> bool:
        return self.state in {self.State.DONE, self.State.FAILED}


class BatchJobFile(models.Model):
    """One file's outcome in a batch job, as its manifest entry says (in order of completion).

    Written in the transaction that records the file's invoice and audit event: a row here is
    the marker that the file is done, which a resumed batch skips (one row per name)."""

    job = models.ForeignKey(BatchJob, on_delete=models.CASCADE, related_name="files")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    ok = models.BooleanField(default=False)
    issues = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    totals = models.JSONField(null=True, blank=True)
    authorization_number = models.CharField(max_length=36, blank=True)
    xml_sha256 = models.CharField(max_length=64, blank=True)
    pdf_name = models.CharField(max_length=200, blank=True, help_text="Inside the job's out_dir.")
    pdf_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["job", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "position"], name="fel_batch_file_position"),
            models.UniqueConstraint(fields=["job", "name"], name="fel_batch_file_once"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({'ok' if self.ok else 'issues'})"
