"""The ingest API (``/api/v1/``) and the API tokens page (``/accounts/tokens/``)."""

from django.urls import path

from treeview.ingest.views import api, tokens

api_patterns = [
    path("me", api.me, name="api_me"),
    path("sources", api.sources, name="api_sources"),
    path("sources/<str:key>/append", api.append, name="api_append"),
    path("sources/<str:key>/slot", api.slot, name="api_slot"),
    path("sources/<str:key>/rewrite", api.rewrite, name="api_rewrite"),
]

token_patterns = [
    path("", tokens.token_list, name="tokens"),
    path("<int:pk>/revoke/", tokens.revoke, name="token_revoke"),
    path("defaults/", tokens.defaults, name="push_defaults"),
]
