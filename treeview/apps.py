from django.apps import AppConfig


class TreeviewConfig(AppConfig):
    name = "treeview"
    verbose_name = "Arbor tree view"
