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


@register(Tags.security, deploy=True)
def shared_rate_limits_check(app_configs, **kwargs):
    """Rate limits count in the default cache (core/throttling.py). Django's local-memory cache is
    one per process, so behind several workers (`make serve` starts 2) each counts on its own and
    a limit lets through as many requests as there are workers times the limit: a cache the
    workers share (CACHE_URL, Redis) keeps one count."""
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if getattr(settings, "RATE_LIMITS_ENABLED", True) and backend.endswith("locmem.LocMemCache"):
        return [Warning("Rate limits are counted in each worker process's own memory: with N workers a "
                        "limit lets N times its requests through.",
                        hint="Set CACHE_URL to a Redis URL the workers share, e.g. redis://127.0.0.1:6379/1.",
                        id="core.W003")]
    return []
