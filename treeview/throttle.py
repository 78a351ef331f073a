"""Sign-in throttling: a password is not checked once too many sign-ins failed for the same username, or from
the same address, within a window (settings ``ARBOR_LOGIN_FAILURES``, ``ARBOR_LOGIN_WINDOW_SECONDS``).

Counts live in Django's cache: Redis, shared by every worker, in a team deployment; the process's memory for
``./arbor run``. A window starts at its first failure and is not extended by refused attempts, so an
attacker cannot keep a person locked out forever by retrying, and the person gets in once it ends.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.contrib.auth.views import LoginView, PasswordChangeView
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

#: One address may fail this many times the per-username limit (a shared office address signs in a lot).
ADDRESS_FACTOR = 4
LOCKED_MESSAGE = "Too many failed sign-ins. Wait {minutes} minutes, then try again."


def _keys(username: str, address: str) -> tuple[str, str]:
    name = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
    return f"login-fail:user:{name}", f"login-fail:addr:{address}"


def client_address(request: HttpRequest | None) -> str:
    return str(request.META.get("REMOTE_ADDR") or "unknown") if request is not None else "unknown"


def locked_out(username: str, address: str) -> bool:
    user_key, address_key = _keys(username, address)
    counts = cache.get_many([user_key, address_key])
    limit = settings.ARBOR_LOGIN_FAILURES
    return counts.get(user_key, 0) >= limit or counts.get(address_key, 0) >= limit * ADDRESS_FACTOR


def record_failure(username: str, address: str) -> None:
    for key in _keys(username, address):
        # add() starts the window (no-op when it runs); incr() is atomic on Redis.
        cache.add(key, 0, timeout=settings.ARBOR_LOGIN_WINDOW_SECONDS)
        try:
            cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.add(key, 1, timeout=settings.ARBOR_LOGIN_WINDOW_SECONDS)


def clear(username: str) -> None:
    cache.delete(_keys(username, "")[0])


def _locked_error() -> ValidationError:
    minutes = max(1, round(settings.ARBOR_LOGIN_WINDOW_SECONDS / 60))
    return ValidationError(LOCKED_MESSAGE.format(minutes=minutes), code="throttled")


class ThrottledLoginMixin:
    """For an ``AuthenticationForm``: refuse unchecked while locked out, count failures, forget them on
    success."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]
    throttled = False

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        address = client_address(self.request)
        if locked_out(username, address):
            self.throttled = True
            raise _locked_error()
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            if self.cleaned_data.get("password"):
                record_failure(username, address)
            raise
        clear(username)
        return cleaned


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


class ThrottledLoginView(LoginView):
    """The sign-in page; a refused attempt answers 429 Too Many Requests."""

    form_class = ThrottledAuthenticationForm
    redirect_authenticated_user = True

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "throttled", False):
            response.status_code = 429
        return response


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """The old password is a password guess too: counted against the signed-in user's name."""

    def clean_old_password(self) -> str:
        username = self.user.get_username()
        address = "password-change"  # the username limit applies; addresses are counted by the sign-in form
        if locked_out(username, address):
            raise _locked_error()
        try:
            old_password: str = super().clean_old_password()
        except ValidationError:
            record_failure(username, address)
            raise
        return old_password


class ThrottledPasswordChangeView(PasswordChangeView):
    form_class = ThrottledPasswordChangeForm
