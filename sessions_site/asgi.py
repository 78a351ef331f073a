"""ASGI entry point: `daphne sessions_site.asgi:application`."""

import os

from sessions_site.handler import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessions_site.settings")
# Set up Django (settings, app registry) before importing anything that touches models, such as channels.auth.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from treeview.ingest.asgi import BodyLimit  # noqa: E402
from treeview.memory import limit_arenas  # noqa: E402
from treeview.origin import SameOriginValidator  # noqa: E402
from treeview.routing import websocket_urlpatterns  # noqa: E402
from treeview.warmup import prewarm_sessions, warm_up  # noqa: E402

# Before the request threads start: they share ARBOR_MALLOC_ARENAS allocator arenas (treeview/memory.py).
limit_arenas(settings.ARBOR_MALLOC_ARENAS)
# Load what the first request would otherwise load: the URLconf with every view, Pygments' lexer table, the
# templates compiled, the Markdown renderer (treeview/warmup.py).
warm_up()
# The most recently opened big sessions read into the explorer's caches, in a thread (ARBOR_PREWARM_SESSIONS);
# daphne listens once their first pages are ready, or after ARBOR_PREWARM_WAIT seconds at most.
prewarm_sessions(wait=settings.ARBOR_PREWARM_WAIT)

# Django's static handler only while DEBUG is on; the production profile has WhiteNoise (settings.py).
serve_static = settings.ARBOR_SERVE_STATIC and settings.DEBUG
http_application = ASGIStaticFilesHandler(django_asgi_app) if serve_static else django_asgi_app
# An ingest request declaring too large a body is refused before it is read (treeview/ingest/asgi.py).
http_application = BodyLimit(http_application)

application = ProtocolTypeRouter(
    {
        "http": http_application,
        # Only this site's own pages (scheme, host, port) may open a socket: nothing else drives navigation.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
