"""The project package. The Celery app is imported here so that `shared_task` binds to it."""

from cms_site.celery import app as celery_app

__all__ = ("celery_app",)
