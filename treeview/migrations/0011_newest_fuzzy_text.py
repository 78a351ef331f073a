"""A message's search text as written where oh-my-pi's search splits its words by case (``Entry.fuzzy_text``;
``search_text`` is lowercased), filled for the messages already stored."""

from typing import Any

import orjson
from django.db import migrations, models

from treeview.services.columns import fuzzy_text

#: Entries read at a time: memory holds one batch of raw lines, whatever the table holds.
BATCH = 500


def fill_fuzzy_text(apps: Any, schema_editor: Any) -> None:
    """Compute ``fuzzy_text`` from the stored line of every message, a batch of primary keys at a time (as
    0003 does: nothing stays open over the table while it is updated)."""
    entry_model = apps.get_model("treeview", "Entry")
    connection = schema_editor.connection
    table = connection.ops.quote_name(entry_model._meta.db_table)
    rows = (
        entry_model.objects.using(connection.alias)
        .filter(type="message")
        .order_by("pk")
        .values_list("pk", "raw")
    )
    last = 0
    while batch := list(rows.filter(pk__gt=last)[:BATCH]):
        last = batch[-1][0]
        updates = []
        for pk, raw in batch:
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(entry, dict):
                continue
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"  # as the import migrated it (v2 files)
            text = fuzzy_text(entry)
            if text:
                updates.append((text, pk))
        if updates:
            with connection.cursor() as cursor:
                cursor.executemany(f"UPDATE {table} SET fuzzy_text = %s WHERE id = %s", updates)


class Migration(migrations.Migration):
    dependencies = [("treeview", "0010_merge_subagents_agentrules")]

    operations = [
        migrations.AddField(
            model_name="entry",
            name="fuzzy_text",
            field=models.TextField(
                blank=True,
                default="",
                help_text="message search text as written where oh-my-pi splits words by case ('': none)",
            ),
        ),
        migrations.RunPython(fill_fuzzy_text, migrations.RunPython.noop),
    ]
