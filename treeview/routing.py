"""Websocket routes (``sessions_site/asgi.py`` mounts them)."""

from django.urls import path

from treeview.consumers import SessionConsumer, SessionListConsumer
from treeview.share_scan import ShareScanConsumer

websocket_urlpatterns = [
    path("ws/s/<str:session_id>/", SessionConsumer.as_asgi()),
    path("ws/sessions/", SessionListConsumer.as_asgi()),
    path("ws/share-scan/<str:session_id>/", ShareScanConsumer.as_asgi()),
]
