"""PostgreSQL: the full-text search reads a stored ``body_tsv`` column (GIN-indexed) instead of an expression
index on ``body_text``, so a query can test an entry without parsing its text again (see
treeview/search_index.py). Rewrites ``treeview_entry`` once. Nothing changes on SQLite."""

from django.db import migrations

from treeview.search_index import install_tsv_index, remove_tsv_index


class Migration(migrations.Migration):
    dependencies = [("treeview", "0006_invite_team")]

    operations = [migrations.RunPython(install_tsv_index, remove_tsv_index)]
