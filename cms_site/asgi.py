"""The site as an ASGI application: what `make serve` runs (gunicorn with uvicorn's worker class,
docs/deploy.md). Pages and the API are Django's sync views, run in threads as under WSGI; a topic
page's live stream (/t/<slug>/live/, Server-Sent Events) is an async view whose open streams hold
no thread, so 1,000 readers leave the workers to the pages."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
application = get_asgi_application()

from cms_site.startup import start  # noqa: E402  after Django is set up

start()
