"""The full text of entries for the search across sessions: the ``Entry.body_text`` column, filled for the
entries already stored, and the full-text index moved from ``search_text`` (the selector's first 200
characters) to it (see treeview/search_index.py)."""

from typing import Any

import orjson
from django.db import migrations, models

from treeview.search_index import install_body_index, install_index, remove_body_index, remove_index
from treeview.services.columns import entry_body
from treeview.session.body_text import SEARCHED_TYPES

#: Entries read at a time: memory holds one batch of raw lines (and their bodies), whatever the table holds.
BATCH = 500


def fill_body_text(apps: Any, schema_editor: Any) -> None:
    """Compute ``body_text`` from the stored line of every entry that can have one, a batch at a time.

    Batches are ranges of primary keys, each read by its own query: nothing stays open over the table while it
    is updated (SQLite gives no isolation between the statements of one connection). A tool result's row
    text (``Entry.text``, its call's label, computed at import) is reused, so no tool call has to be found.
    """
    entry_model = apps.get_model("treeview", "Entry")
    connection = schema_editor.connection
    table = connection.ops.quote_name(entry_model._meta.db_table)
    rows = (
        entry_model.objects.using(connection.alias)
        .filter(type__in=sorted(SEARCHED_TYPES))
        .order_by("pk")
        .values_list("pk", "raw", "text")
    )
    last = 0
    while batch := list(rows.filter(pk__gt=last)[:BATCH]):
        last = batch[-1][0]
        updates = []
        for pk, raw, text in batch:
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            body = entry_body(entry, text) if isinstance(entry, dict) else ""
            if body:
                updates.append((body, pk))
        if updates:
            with connection.cursor() as cursor:
                cursor.executemany(f"UPDATE {table} SET body_text = %s WHERE id = %s", updates)


class Migration(migrations.Migration):
    dependencies = [("treeview", "0002_search_index")]

    operations = [
        # The old index first: nothing to keep in step while the column is added and filled.
        migrations.RunPython(remove_index, install_index),
        migrations.AddField(
            model_name="entry",
            name="body_text",
            field=models.TextField(
                blank=True,
                default="",
                help_text="full text for the search across sessions ('': not indexed)",
            ),
        ),
        migrations.RunPython(fill_body_text, migrations.RunPython.noop),
        migrations.RunPython(install_body_index, remove_body_index),
    ]
