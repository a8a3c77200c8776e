"""Reads about an account. Never imports services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from allauth.account.models import EmailAddress


@dataclass(frozen=True)
class Me:
    username: str
    email: str
    email_verified: bool
    date_joined: datetime


def me(*, user) -> Me:
    """The account as its owner sees it: `email` is the primary address (allauth's
    EmailAddress, else the user row's), `email_verified` whether its link was opened."""
    primary = EmailAddress.objects.filter(user=user, primary=True).first()
    email = primary.email if primary else (user.email or "")
    verified = bool(primary and primary.verified) or (
        bool(email) and EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists())
    return Me(username=user.username, email=email, email_verified=verified, date_joined=user.date_joined)


def export(*, user) -> dict:
    """Everything kept about `user`, as one JSON-ready dict: the profile, their comments in
    every storage strategy (with their topic, status and text), the comments they like, who
    they follow and who follows them, the discussions they follow, and their e-mail
    preferences. Each app reads its own part (its selectors)."""
    from comments import selectors as comment_selectors
    from notifications import selectors as notification_selectors
    from social import selectors as social_selectors

    profile = me(user=user)
    comments = []
    for item in comment_selectors.comments_by_author(user=user):
        c, topic = item.comment, item.topic
        comments.append({
            "topic": topic.slug if topic else None, "topic_title": topic.title if topic else None,
            "storage": item.storage, "id": c.id, "parent": c.parent, "posted": c.posted.isoformat(),
            "edited": c.edited.isoformat() if c.edited else None, "status": c.status, "text": c.text,
            "likes": c.likes, "url": f"/t/{topic.slug}/c/{c.id}/" if topic else None,
        })
    likes = [{"topic": topic.slug if topic else None, "comment": comment_id,
              "liked": liked.isoformat() if hasattr(liked, "isoformat") else None}
             for topic, comment_id, liked in comment_selectors.likes_by_user(user=user)]
    discussions = notification_selectors.followed_discussions(user=user)
    from django.apps import apps

    topics = apps.get_model("topics", "Topic").objects.in_bulk(discussions)
    return {
        "profile": {"username": profile.username, "email": profile.email, "email_verified": profile.email_verified,
                    "date_joined": profile.date_joined.isoformat(),
                    "emails": [{"email": a.email, "verified": a.verified, "primary": a.primary}
                               for a in EmailAddress.objects.filter(user=user).order_by("id")]},
        "comments": comments,
        "likes": likes,
        "follows": social_selectors.follow_names(user=user),
        "followed_discussions": [topics[d].slug for d in discussions if d in topics],
        "notification_preferences": {"email": notification_selectors.email_preferences(user=user)},
    }
