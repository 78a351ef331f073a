"""The full-text index of entries for the search across sessions (see treeview/search.py): an FTS5 table and
its triggers on SQLite, a GIN expression index on PostgreSQL. Each step does nothing on the other database."""

from django.db import migrations

from treeview.search import install_index, remove_index


class Migration(migrations.Migration):
    dependencies = [("treeview", "0001_initial")]

    operations = [migrations.RunPython(install_index, remove_index)]
