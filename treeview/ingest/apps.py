from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "treeview.ingest"
    label = "ingest"
    verbose_name = "Arbor ingest API"
    default_auto_field = "django.db.models.BigAutoField"
