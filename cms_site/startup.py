"""What a web process does once it has loaded the site: cms_site/wsgi.py (runserver, gunicorn's
sync workers) and cms_site/asgi.py (`make serve`: gunicorn with uvicorn's worker class) both call it."""


def start() -> None:
    # The embedded engine opens its file (and imports an old snapshot once) when the worker starts.
    from core.mongo import get_db, is_embedded

    if is_embedded():
        get_db()

    # Without a broker nothing sends Celery beat's periodic tasks: this process runs them in a thread
    # (background/scheduler.py; off with BACKGROUND_SCHEDULER=0, and wherever a broker is set).
    from background.scheduler import start as start_scheduler

    start_scheduler()

    # What the worker loaded to start (Django, the apps, the URL conf, the templates' code) lives as long
    # as it does: moved out of the collector's reach (Python's gc.freeze), a full collection no longer
    # walks it again each time a request allocates many objects (a large page's decoded comments).
    # Under ASGI the open live streams are frozen the same way in batches, and an unfreeze (once half
    # of them closed) takes this back too until the next full collection freezes its survivors again
    # (comments.live.keep_streams_out_of_collections).
    import gc

    gc.collect()
    gc.freeze()
