import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
application = get_wsgi_application()

# The embedded engine opens its file (and imports an old snapshot once) when the worker starts.
from core.mongo import get_db, is_embedded  # noqa: E402

if is_embedded():
    get_db()
