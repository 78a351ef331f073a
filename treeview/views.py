from pathlib import Path

from django.conf import settings
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from treeview.session_files import list_session_files

# A placeholder page: enough rows to be useful without reading thousands of headers per request.
SESSION_LIST_LIMIT = 500


@require_GET
@vary_on_headers("HX-Request")
def session_list(request: HttpRequest) -> TemplateResponse:
    dirs = [Path(directory) for directory in settings.ARBOR_SESSION_DIRS]
    listing = list_session_files(dirs, limit=SESSION_LIST_LIMIT)
    template_name = "treeview/session_list.html"
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.history_restore_request:
        template_name += "#session-list"
    return TemplateResponse(request, template_name, {"listing": listing, "dirs": dirs})
