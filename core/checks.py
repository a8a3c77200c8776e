"""System checks of the site's own settings (`manage.py check --deploy`, Django's deployment checks)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Tags, Warning, register

LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


@register(Tags.security, deploy=True)
def site_url_check(app_configs, **kwargs):
    """SITE_URL is the address every e-mail names and links to (docs/configuration.md): in production
    it must be the site's public address, not the development default, and https behind TLS."""
    parts = urlsplit(settings.SITE_URL or "")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.hostname in LOOPBACK:
        return [Warning(f"SITE_URL is {settings.SITE_URL!r}: e-mails would name and link to it.",
                        hint="Set SITE_URL to the site's public address, e.g. https://commons.example.org.",
                        id="core.W001")]
    if getattr(settings, "HTTPS", False) and parts.scheme != "https":
        return [Warning(f"SITE_URL is {settings.SITE_URL!r} while HTTPS is on: e-mailed links would be plain http.",
                        hint="Give SITE_URL as https://.", id="core.W002")]
    return []
