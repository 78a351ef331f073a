# Joins three migrations written side by side (search index, share link masks, rights grants); they touch
# different tables, so their order does not matter.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("treeview", "0007_rights_grants"),
        ("treeview", "0007_search_body_tsv"),
        ("treeview", "0007_sharing_link_masks"),
    ]

    operations = []
