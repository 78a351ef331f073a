# Joins two migrations written side by side (subagent families, the per-session agent rules); they add
# different columns, so their order does not matter.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("treeview", "0009_agentrules_agent_rules"),
        ("treeview", "0009_subagents_family"),
    ]

    operations = []
