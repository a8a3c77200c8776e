import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
application = get_wsgi_application()

from cms_site.startup import start  # noqa: E402  after Django is set up

start()
