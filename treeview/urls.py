from django.urls import path

from treeview import views
from treeview.views import comments as comment_views
from treeview.views import review as review_views
from treeview.views import share as share_views
from treeview.views import teams
from treeview.views.accounts import set_session_visibility
from treeview.views.rights import session_rights
from treeview.views.rules import set_session_rules

app_name = "treeview"

urlpatterns = [
    path("", views.session_list, name="session_list"),
    path("upload/", views.upload, name="upload"),
    path("search/", views.search, name="search"),
    path("search/open/", views.search_open, name="search_open"),
    path("s/<str:session_id>/", views.session_detail, name="session_detail"),
    path("s/<str:session_id>/context/", views.session_context, name="session_context"),
    path("s/<str:session_id>/label/", views.set_label, name="set_label"),
    path("s/<str:session_id>/rows/", views.tree_rows, name="session_rows"),
    path("s/<str:session_id>/entry/<str:entry_id>/block/<int:index>/", views.entry_block, name="entry_block"),
    path(
        "s/<str:session_id>/entry/<str:entry_id>/comments/",
        comment_views.entry_comments,
        name="entry_comments",
    ),
    path(
        "s/<str:session_id>/entry/<str:entry_id>/comments/<int:pk>/edit/",
        comment_views.edit_comment,
        name="comment_edit",
    ),
    path(
        "s/<str:session_id>/entry/<str:entry_id>/comments/<int:pk>/delete/",
        comment_views.delete_comment,
        name="comment_delete",
    ),
    path(
        "s/<str:session_id>/entry/<str:entry_id>/comments/<int:pk>/resolve/",
        comment_views.resolve_thread,
        name="comment_resolve",
    ),
    path(
        "s/<str:session_id>/entry/<str:entry_id>/comments/<int:pk>/reopen/",
        comment_views.reopen_thread,
        name="comment_reopen",
    ),
    path("s/<str:session_id>/download.jsonl", views.download_session, name="download_session"),
    path("s/<str:session_id>/branch/<str:entry_id>.jsonl", views.download_branch, name="download_branch"),
    path("s/<str:session_id>/persist-position/", views.persist_position, name="persist_position"),
    path("s/<str:session_id>/fork/", views.fork_session, name="fork_session"),
    path("s/<str:session_id>/branch-picker/", views.branch_picker, name="branch_picker"),
    path("s/<str:session_id>/visibility/", set_session_visibility, name="set_visibility"),
    path("s/<str:session_id>/rights/", session_rights, name="session_rights"),
    path("s/<str:session_id>/rules/", set_session_rules, name="set_rules"),
    path("teams/", teams.team_list, name="team_list"),
    path("teams/<int:team_pk>/secrets/", teams.add_secret, name="add_team_secret"),
    path(
        "teams/<int:team_pk>/secrets/<int:secret_pk>/remove/", teams.remove_secret, name="remove_team_secret"
    ),
    # Review (treeview/views/review.py): a branch's status, and the Review page.
    path("s/<str:session_id>/review/", review_views.set_review_status, name="set_review_status"),
    path("review/", review_views.review_page, name="review"),
    # Share links (treeview/views/share.py): the form, the public branch and its downloads, Shared links.
    path("s/<str:session_id>/share/", share_views.share_create, name="share_create"),
    path("share/<str:token>/", share_views.share_view, name="share_view"),
    path("share/<str:token>/branch.jsonl", share_views.share_jsonl, name="share_jsonl"),
    path("share/<str:token>/branch.md", share_views.share_markdown, name="share_markdown"),
    path("shared/", share_views.shared_links, name="shared_links"),
    path("shared/<int:pk>/revoke/", share_views.revoke_link, name="revoke_link"),
    path("shared/sharing/", share_views.sharing_switch, name="sharing_switch"),
]
