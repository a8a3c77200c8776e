import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
application = get_wsgi_application()

# The embedded engine opens its file (and imports an old snapshot once) when the worker starts.
from core.mongo import get_db, is_embedded  # noqa: E402

if is_embedded():
    get_db()

# Without a broker nothing sends Celery beat's periodic tasks: this process runs them in a thread
# (background/scheduler.py; off with BACKGROUND_SCHEDULER=0, and wherever a broker is set).
from background.scheduler import start as start_scheduler  # noqa: E402

start_scheduler()

# What the worker loaded to start (Django, the apps, the URL conf, the templates' code) lives as long
# as it does: moved out of the collector's reach (Python's gc.freeze), a full collection no longer
# walks it again each time a request allocates many objects (a large page's decoded comments).
import gc  # noqa: E402

gc.collect()
gc.freeze()
