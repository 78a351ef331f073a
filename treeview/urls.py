from django.urls import path

from treeview import views
from treeview.views.accounts import set_session_visibility

app_name = "treeview"

urlpatterns = [
    path("", views.session_list, name="session_list"),
    path("upload/", views.upload, name="upload"),
    path("search/", views.search, name="search"),
    path("search/open/", views.search_open, name="search_open"),
    path("s/<str:session_id>/", views.session_detail, name="session_detail"),
    path("s/<str:session_id>/context/", views.session_context, name="session_context"),
    path("s/<str:session_id>/label/", views.set_label, name="set_label"),
    path("s/<str:session_id>/entry/<str:entry_id>/block/<int:index>/", views.entry_block, name="entry_block"),
    path("s/<str:session_id>/download.jsonl", views.download_session, name="download_session"),
    path("s/<str:session_id>/branch/<str:entry_id>.jsonl", views.download_branch, name="download_branch"),
    path("s/<str:session_id>/persist-position/", views.persist_position, name="persist_position"),
    path("s/<str:session_id>/fork/", views.fork_session, name="fork_session"),
    path("s/<str:session_id>/branch-picker/", views.branch_picker, name="branch_picker"),
    path("s/<str:session_id>/visibility/", set_session_visibility, name="set_visibility"),
]
