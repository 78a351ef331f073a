from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from treeview import errors
from treeview.ingest import urls as ingest_urls
from treeview.throttle import (
    ThrottledAdminAuthenticationForm,
    ThrottledLoginView,
    ThrottledPasswordChangeView,
)
from treeview.views import accounts

# The admin's own sign-in form is throttled like the site's.
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("", include("treeview.urls")),
    # Browsers ask for /favicon.ico by themselves (pages link the SVG): the same icon, no 404 in the log.
    path("favicon.ico", errors.favicon, name="favicon"),
    # Accounts (treeview/access.py decides who needs to be signed in).
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", ThrottledPasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/invites/", accounts.invite_create, name="invite_create"),
    path("accounts/invite/<str:token>/", accounts.invite_accept, name="invite_accept"),
    path("accounts/tokens/", include(ingest_urls.token_patterns)),
    # The ingest API (treeview/ingest): JSON, a personal token in Authorization: Bearer.
    path("api/v1/", include(ingest_urls.api_patterns)),
    path("admin/", admin.site.urls),
]

# Arbor's own error pages (treeview/errors.py), when DEBUG is off.
handler403 = "treeview.errors.permission_denied"
handler404 = "treeview.errors.page_not_found"
handler500 = "treeview.errors.server_error"
