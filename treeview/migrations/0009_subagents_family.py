# Subagent transcripts (treeview/session/subagents.py): where each sits, and the session that spawned it. The
# sessions imported before are placed once here (an unchanged file is not read again by sync).

import os
from pathlib import Path

import django.db.models.deletion
import orjson
from django.conf import settings
from django.db import migrations, models

from treeview.session.subagents import subagent_place


def place_imported(apps, schema_editor):
    """Place the transcripts already imported from the agents' directories, then tie them to their sessions
    (same owner only, as sync does)."""
    AgentSession = apps.get_model("treeview", "AgentSession")
    own = [Path(d).resolve() for d in (settings.ARBOR_DATA_DIR, settings.ARBOR_UPLOAD_DIR)]
    rows = AgentSession.objects.exclude(source_path="").only(
        "pk", "source_path", "header_raw", "title", "title_slot_raw"
    )
    placed = []
    for row in rows.iterator():
        source = Path(row.source_path)
        if any(source == d or source.is_relative_to(d) for d in own):
            continue  # uploads, pushed files, forks: no artifacts folder
        try:
            header = orjson.loads(row.header_raw)
        except orjson.JSONDecodeError:
            continue
        place = subagent_place(row.source_path, header if isinstance(header, dict) else {}, os.path.exists)
        if place is None:
            continue
        placed.append((row.pk, place))
        fields = {
            "subagent_kind": place.kind,
            "agent_key": place.agent_id[:200],
            "spawned_from_path": place.parent_path,
        }
        derived = row.title.startswith("Fork of ") and "title" not in header and not row.title_slot_raw
        if derived and place.kind != "clone":
            fields["title"] = ""  # sync titled it as a fork; a subagent's title is its first prompt, its task
        AgentSession.objects.filter(pk=row.pk).update(**fields)
    for pk, place in placed:
        owner = AgentSession.objects.filter(pk=pk).values_list("owner_id", flat=True).first()
        parent = (
            AgentSession.objects.filter(source_path=place.parent_path, owner_id=owner)
            .exclude(pk=pk)
            .values_list("pk", flat=True)
            .first()
        )
        if parent is not None:
            AgentSession.objects.filter(pk=pk).update(subagent_of_id=parent)


class Migration(migrations.Migration):
    dependencies = [
        ("treeview", "0008_merge_search_sharing_rights"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="agent_key",
            field=models.CharField(
                blank=True,
                help_text="the subagent's id: its file stem (Anna, Anna.Bob, __advisor)",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="spawned_from_path",
            field=models.TextField(
                blank=True, help_text="the session file whose artifacts folder holds this transcript"
            ),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="subagent_kind",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "session"),
                    ("task", "subagent"),
                    ("advisor", "advisor"),
                    ("clone", "/tan clone"),
                ],
                help_text="empty: a session of its own",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="subagent_of",
            field=models.ForeignKey(
                blank=True,
                help_text="the imported session that spawned it (empty when that session is not imported)",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="subagents",
                to="treeview.agentsession",
            ),
        ),
        migrations.AddIndex(
            model_name="agentsession",
            index=models.Index(fields=["spawned_from_path"], name="session_spawned_from_path"),
        ),
        migrations.RunPython(place_imported, migrations.RunPython.noop),
    ]
