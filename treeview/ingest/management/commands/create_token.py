"""``manage.py create_token USERNAME [--name NAME] [--expires DAYS]``: a personal API token, printed once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from treeview.ingest.tokens import create_token


class Command(BaseCommand):
    help = (
        "Create a personal API token for USERNAME (for ./arbor push) and print it; it is shown only this "
        "once (only its hash is stored)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for (shown on the API tokens page)")
        parser.add_argument(
            "--expires", type=int, metavar="DAYS", help="days until it expires (default: never)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        if not user.is_active:
            raise CommandError(f"the account {options['username']!r} is disabled")
        days = options["expires"]
        if days is not None and not 1 <= days <= 3650:
            raise CommandError("--expires must be between 1 and 3650 days")
        _, token = create_token(user, options["name"], days)
        self.stdout.write(token)
