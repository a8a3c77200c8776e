"""Settings for the peer: django-comments-xtd on SQLite, in its own process.

Used only by `bench/xtd_peer.py`, which `bench/peer.py` starts as a subprocess with
DJANGO_SETTINGS_MODULE=bench.xtd_settings: django-comments-xtd never becomes an app
of the product (cms_site/settings.py does not list it). The commented object is a
flat page (django.contrib.flatpages), so the peer needs no model of ours.

The database is a SQLite file in a temporary directory (BENCH_XTD_DB), like a small
production deployment of the peer; the process deletes it when done.
"""

import os
import tempfile
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent

DEBUG = False
SECRET_KEY = "bench-peer-only-not-a-secret"
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
SITE_ID = 1

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.sites",
    "django.contrib.flatpages",
    "django_comments_xtd",
    "django_comments",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]

ROOT_URLCONF = "bench.xtd_urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("BENCH_XTD_DB") or os.path.join(tempfile.gettempdir(), f"bench-xtd-{os.getpid()}.sqlite3"),
    }
}

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

COMMENTS_APP = "django_comments_xtd"
# Our discussions go 8 levels deep (COMMENTS_MAX_DEPTH): levels 0..7 here.
COMMENTS_XTD_MAX_THREAD_LEVEL = 7
COMMENTS_XTD_CONFIRM_EMAIL = False
COMMENTS_XTD_LIST_ORDER = ("thread_id", "order")  # the default: threaded order
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# xtd's comments API pages like ours: 20 per page, by page number (DRF's defaults otherwise).
REST_FRAMEWORK = {"DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination", "PAGE_SIZE": 20}
