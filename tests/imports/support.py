"""Helpers of the import tests: run the commands, read a topic's comments back whole."""

from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from comments.managers import manager_for
from core.paging import PageRequest

FIXTURES = Path(__file__).parent / "fixtures"


def run_import(fmt, source, *args, **options) -> str:
    out = StringIO()
    call_command("comments_import", fmt, str(source) if source is not None else None, *args, stdout=out, **options)
    return out.getvalue()


def stored(topic) -> list:
    """Every stored comment of the topic (any status, unmasked), in chronological (seq) order."""
    manager, number, items = manager_for(topic.comment_storage), 1, []
    threaded = topic.comment_order == "threaded"
    while True:
        page = manager.page(discussion_id=topic.pk, order="chronological", request=PageRequest(page=number, page_size=100),
                            threaded=threaded)
        items.extend(page.items)
        if not page.items or number >= page.num_pages:
            return items
        number += 1


def shape(topic) -> list[tuple]:
    """(text, author name, guest?, status, posted, parent's text, likes) per comment, in posting order:
    what an import must reproduce, whatever ids it drew."""
    comments = stored(topic)
    by_id = {c.id: c for c in comments}
    return [(c.text, c.author.name, c.author.guest, c.status, c.posted,
             by_id[c.parent].text if c.parent else None, c.likes) for c in comments]


def confirm_email(user, email: str | None = None):
    """Give `user` a verified address (allauth's `EmailAddress`), as opening the confirmation
    link does: the importer matches authors on confirmed addresses only. Returns the user."""
    from allauth.account.models import EmailAddress

    EmailAddress.objects.create(user=user, email=email or user.email, primary=True, verified=True)
    return user


def utc(*parts) -> datetime:
    return datetime(*parts, tzinfo=UTC)
