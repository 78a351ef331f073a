from django.apps import AppConfig


class TreeviewConfig(AppConfig):
    name = "treeview"
    verbose_name = "Arbor tree view"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.core import checks
        from django.db.models.signals import post_delete, post_migrate, post_save, pre_delete

        from treeview import daphne_flow
        from treeview.extensions import check_extensions
        from treeview.models import Membership, SessionGrant
        from treeview.search import ensure_index_after_migrate
        from treeview.services import share
        from treeview.services.visibility import membership_changed

        # ARBOR_EXTENSIONS that cannot be imported show at `manage.py check` and at startup.
        checks.register(check_extensions)
        # Django remakes a SQLite table for many schema changes, dropping the search triggers: put them back.
        post_migrate.connect(ensure_index_after_migrate, sender=self)
        # Open session sockets check their user again when a team's members change.
        post_save.connect(membership_changed, sender=Membership, dispatch_uid="arbor-membership-saved")
        post_delete.connect(membership_changed, sender=Membership, dispatch_uid="arbor-membership-deleted")
        # Share links die with their creator's right to make them: deactivated or deleted accounts, a team
        # left, "can write" taken back (and whatever else, when served: treeview/services/share/).
        user_model = get_user_model()
        post_save.connect(share.user_saved, sender=user_model, dispatch_uid="arbor-share-user-saved")
        pre_delete.connect(share.user_deleted, sender=user_model, dispatch_uid="arbor-share-user-deleted")
        post_delete.connect(
            share.membership_removed, sender=Membership, dispatch_uid="arbor-share-membership"
        )
        post_delete.connect(share.grant_removed, sender=SessionGrant, dispatch_uid="arbor-share-grant")
        # Streamed downloads at the client's pace, cut off visibly when they fail (treeview/daphne_flow.py).
        daphne_flow.install()
