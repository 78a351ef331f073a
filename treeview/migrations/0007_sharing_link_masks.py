"""Share links keep the team strings in force when they were made (issue 11, finding 4): existing links get
their creator's and their session's team strings as they are now."""

from django.db import migrations, models
from django.db.models import Q


def backfill(apps, schema_editor):  # type: ignore[no-untyped-def]
    ShareLink = apps.get_model("treeview", "ShareLink")
    TeamSecret = apps.get_model("treeview", "TeamSecret")
    for link in ShareLink.objects.all().iterator():
        mine = Q(team__memberships__user=link.created_by_id) if link.created_by_id else Q(pk__in=[])
        values = TeamSecret.objects.filter(mine | Q(team__sessions=link.session_id)).values_list(
            "value", flat=True
        )
        link.masked_strings = sorted({value for value in values if value})
        link.save(update_fields=["masked_strings"])


class Migration(migrations.Migration):
    dependencies = [
        ("treeview", "0006_invite_team"),
    ]

    operations = [
        migrations.AddField(
            model_name="sharelink",
            name="masked_strings",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="team strings in force when the link was made: always masked, whatever memberships become",
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
