"""Who sent the request: the client address (for rate limits and spam checks) and, for the
length of one request, the client's details as the spam checks see them.

- `client_ip(request)`: REMOTE_ADDR, or behind `RATE_LIMIT_NUM_PROXIES` trusted reverse
  proxies the address that many hops from the right of X-Forwarded-For (the left part
  of that header is the client's to forge); IPv6 grouped by /64 (one host holds a /64).
- `ClientMiddleware` sets `current_client` (address, user agent, referrer and, on page
  form posts, the honeypot field) for the request; services read it without taking a
  request argument (comments.services stays free of HTTP).
"""

from __future__ import annotations

import ipaddress
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings

HONEYPOT_FIELD = "website"  # on page forms, hidden from people (static/css/site.css .hp)


@dataclass(frozen=True)
class Client:
    ip: str = ""
    user_agent: str = ""
    referrer: str = ""
    honeypot: str | None = None  # None: the request had no honeypot field (the API)


current_client: ContextVar[Client] = ContextVar("current_client", default=Client())  # noqa: B039 (frozen)


def client_ip(request) -> str:
    """The client's address as a key: REMOTE_ADDR, or the trusted proxy's view of it."""
    address = request.META.get("REMOTE_ADDR", "") or ""
    hops = getattr(settings, "RATE_LIMIT_NUM_PROXIES", 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if hops and forwarded:
        chain = [part.strip() for part in forwarded.split(",") if part.strip()]
        if chain:
            address = chain[-min(hops, len(chain))]
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "unknown"
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False).network_address) + "/64"
    return str(ip)


class ClientMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        honeypot = None
        if request.method == "POST" and not request.path.startswith("/api/"):
            honeypot = request.POST.get(HONEYPOT_FIELD, None)
        token = current_client.set(Client(
            ip=client_ip(request), user_agent=request.META.get("HTTP_USER_AGENT", "")[:500],
            referrer=request.META.get("HTTP_REFERER", "")[:500], honeypot=honeypot,
        ))
        try:
            return self.get_response(request)
        finally:
            current_client.reset(token)
