"""Settings, all from the environment.

Relational data (users, topics, sessions, admin) lives in the Django database
(`DATABASE_URL`, SQLite by default). Comments, the follow graph and feeds live in
MongoDB (`MONGODB_URI` / `MONGODB_DB`; with no URI the embedded engine `docstore/`,
see `core/mongo.py`).
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


DEBUG = env_bool("DEBUG", False)

# The key: SECRET_KEY, else the file SECRET_KEY_FILE (default `.secret_key` beside manage.py,
# which `make run` and `make serve` write on first use, outside git), so an operator's
# `.venv/bin/python manage.py COMMAND` signs with the key the site serves with; a development
# key only with DEBUG on and neither given.
SECRET_KEY_FILE = Path(os.environ.get("SECRET_KEY_FILE") or BASE_DIR / ".secret_key")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY and SECRET_KEY_FILE.is_file():
    SECRET_KEY = SECRET_KEY_FILE.read_text(encoding="utf-8").strip()
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(f"SECRET_KEY must be set when DEBUG is off: set SECRET_KEY, keep one in "
                                   f"{SECRET_KEY_FILE} (make run and make serve write it), or use DEBUG=1 for a "
                                   "development site.")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sitemaps",
    "django.contrib.humanize",  # naturaltime: "now", "3 minutes ago"
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "cms_site",  # the project wiring; its migrations are the history of models that moved to the apps
    "core",  # shared infrastructure: its MongoDB commands (mongo_indexes, mongo_shard, mongo_copy)
    "accounts",  # before allauth: its templates (accounts/templates) restyle allauth's pages
    "allauth",
    "allauth.account",
    "allauth.socialaccount",  # its providers are added below, each when its keys are set
    "topics",
    "search",
    "comments",
    "social",
    "background",
    "notifications",
    "moderation",
    "integrity",  # `manage.py integrity`: the cross-app check of derived views; no models, no URLs
    "demo",  # `manage.py load_demo` and `rundemo`: the demo content; no models, no URLs
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "core.serving.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "core.clients.ClientMiddleware",
    "core.throttling.RateLimitMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "topics.middleware.TopicSlugRedirectMiddleware",
    "social.middleware.PresenceMiddleware",
    # A view's PermissionDenied is the 403 page, logged in one line, not with a traceback.
    "core.serving.RefusalMiddleware",
    # Last, so it sees a view's exception first: a MongoDB outage becomes a 503.
    "core.serving.MongoOutageMiddleware",
]

ROOT_URLCONF = "cms_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "notifications.context_processors.unread",
            ],
        },
    },
]

WSGI_APPLICATION = "cms_site.wsgi.application"

# Persistent connections (Django's CONN_MAX_AGE): each worker thread keeps its connection for
# that many seconds instead of opening one per request; CONN_HEALTH_CHECKS makes Django check a
# kept connection before the request that reuses it and reconnect if it went away (a database
# restart). SQLite: WAL journal (readers do not block the writer nor it them, the mode a
# multi-threaded server wants; https://www.sqlite.org/wal.html), set by Django's `init_command`
# on each new connection, and a busy timeout instead of an immediate "database is locked".
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 600),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL;", timeout=20)

# Django's user with its name's keys (unique ignoring case and width), on the same auth_user table.
AUTH_USER_MODEL = "accounts.User"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
# DEBUG off: WhiteNoise serves what `collectstatic` wrote, names hashed (cached forever)
# and pre-compressed (core/staticfiles.py: WhiteNoise's storage, each URL worked out once).
# DEBUG on: the development server serves the source files.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage" if DEBUG
                    else "core.staticfiles.StaticFilesStorage"},
}

# --- Production hardening ---------------------------------------------------------
# HTTPS=1 when a TLS-terminating proxy is in front (docs/deploy.md): https redirect
# (not /healthz, for plain-HTTP health checks), secure cookies, HSTS, and trust of the
# proxy's X-Forwarded-Proto. `make serve` serves plain HTTP on the loopback: off there.
HTTPS = env_bool("HTTPS", False)
SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", HTTPS)
if env_bool("TRUST_X_FORWARDED_PROTO", HTTPS):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# --- Accounts (django-allauth; accounts/) -------------------------------------------
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",  # the admin, the token API
    "accounts.backends.AuthenticationBackend",  # log-in by username or e-mail (allauth's, an address naming its owner)
]
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"  # the site's username rules (accounts/usernames.py)
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_FORMS = {"login": "accounts.forms.LoginForm", "reset_password": "accounts.forms.ResetPasswordForm"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email", "password1*", "password2*"]  # e-mail optional
ACCOUNT_EMAIL_VERIFICATION = "optional"  # an address is verified by the link e-mailed to it
ACCOUNT_CONFIRM_EMAIL_ON_GET = False  # the link opens a page with a Confirm button (mail scanners open links)
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = False
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[Commons] "
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "https" if HTTPS else "http"
ACCOUNT_CHANGE_EMAIL = True  # one address per account: adding another replaces it once verified
# An address belongs to one account (its owner: accounts.selectors.email_owner), and no page says
# whether an address is in use. allauth's "strict" enumeration prevention is the mode for optional
# verification: a sign-up or added address that another account has goes through and answers as for a
# free one (with True, uniqueness wins and sign-up says "A user is already registered with this email
# address"); accounts/adapter.py then sends its link only for the owner (the owner gets the "account
# already exists" mail instead), refuses anyone else's confirmation and logs in by it only the owner.
ACCOUNT_PREVENT_ENUMERATION = "strict"
ACCOUNT_UNIQUE_EMAIL = True  # one verified row per address (allauth's unique_verified_email constraint)
ACCOUNT_RATE_LIMITS = False  # one table of limits for the whole site: RATE_LIMIT_RATES below (per address too)
# A password reset for an address no account has sends nothing (allauth's "Unknown Account" mail let
# the form mail anyone); the page answers as for a known address.
ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = False
SOCIALACCOUNT_ADAPTER = "accounts.adapter.SocialAccountAdapter"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # a provider's address never logs into an existing account
SOCIALACCOUNT_STORE_TOKENS = False
# Log-in with GitHub / Google: each is offered only when both its keys are set.
SOCIALACCOUNT_PROVIDERS = {}
for _provider, _prefix, _scope in (("github", "GITHUB", ["read:user", "user:email"]),
                                   ("google", "GOOGLE", ["profile", "email"])):
    _id, _secret = os.environ.get(f"{_prefix}_CLIENT_ID", ""), os.environ.get(f"{_prefix}_CLIENT_SECRET", "")
    if _id and _secret:
        SOCIALACCOUNT_PROVIDERS[_provider] = {"APPS": [{"client_id": _id, "secret": _secret}], "SCOPE": _scope}
        INSTALLED_APPS.append(f"allauth.socialaccount.providers.{_provider}")  # its URLs exist only then

# --- MongoDB -------------------------------------------------------------------
# With no MONGODB_URI the project runs on its embedded engine (docstore/, below): for
# development and single-machine sites. Point MONGODB_URI at a replica set or mongos
# when a site outgrows one machine.
MONGODB_URI = os.environ.get("MONGODB_URI", "")
MONGODB_DB = os.environ.get("MONGODB_DB", "cms")
# Read preference for reads that may be stale (listing pages, feeds, follower pages).
# Writes and read-your-own-write paths always use the primary. seeds/004_d286869db7b63c27.txt reads from
# secondaries: set "secondaryPreferred" on a replica set.
MONGODB_STALE_READ_PREFERENCE = os.environ.get("MONGODB_STALE_READ_PREFERENCE", "primary")
# Write concern "w" for every write: "majority", or a number of members.
MONGODB_WRITE_CONCERN = os.environ.get("MONGODB_WRITE_CONCERN", "majority")
MONGODB_WRITE_TIMEOUT_MS = env_int("MONGODB_WRITE_TIMEOUT_MS", 10_000)
# An outage must answer fast (a 503 within about 2 s), not hold requests for pymongo's
# default 30 s; pymongo keeps monitoring, so the site recovers by itself.
MONGODB_SERVER_SELECTION_TIMEOUT_MS = env_int("MONGODB_SERVER_SELECTION_TIMEOUT_MS", 2_000)
MONGODB_CONNECT_TIMEOUT_MS = env_int("MONGODB_CONNECT_TIMEOUT_MS", 2_000)
# Longer than the write timeout: a slow majority write ends as a write-concern timeout (the
# server's answer), never as a network timeout whose retry doubles the wait (core/mongo.py
# also keeps it above MONGODB_WRITE_TIMEOUT_MS + 5 s whatever is set).
MONGODB_SOCKET_TIMEOUT_MS = env_int("MONGODB_SOCKET_TIMEOUT_MS", 20_000)
# maxTimeMS of the page reads of requests (comments, feeds, notifications): the server stops a
# read nobody waits for any more. 0: no limit.
MONGODB_MAX_TIME_MS = env_int("MONGODB_MAX_TIME_MS", 5_000)
# The embedded engine (no MONGODB_URI): docstore/, one SQLite file in WAL mode for the
# database MONGODB_DB (other databases sit beside it); several processes (workers,
# management commands) share it. Empty: a temporary directory removed at exit (tests).
MONGODB_EMBEDDED_PATH = os.environ.get("MONGODB_EMBEDDED_PATH", str(BASE_DIR / "var" / "embedded-mongo.sqlite3"))
# SQLite's synchronous mode: NORMAL keeps every acknowledged write across a crash of the
# process (kill -9, OOM); FULL also across power loss, with an fsync per write.
MONGODB_EMBEDDED_SYNCHRONOUS = os.environ.get("MONGODB_EMBEDDED_SYNCHRONOUS", "NORMAL")
# Plan queries on collections with a declared shard key as one shard of a cluster plans them
# (docstore/query/cluster.py: a SHARDING_FILTER that needs the shard-key fields, skip applied
# after the merge), so explain shows what a page costs on a cluster. Read at each query.
MONGODB_EMBEDDED_SHARD_MODEL = env_bool("MONGODB_EMBEDDED_SHARD_MODEL", False)
# The change feed that watch() reads (docstore/storage/changes.py), bounded as a server's oplog:
# changes older than this many hours, or beyond this many MiB counted from the newest, are
# trimmed; a change stream resuming from before them fails with 286 ChangeStreamHistoryLost.
MONGODB_EMBEDDED_CHANGE_RETENTION_HOURS = env_int("MONGODB_EMBEDDED_CHANGE_RETENTION_HOURS", 24)
MONGODB_EMBEDDED_CHANGE_RETENTION_MB = env_int("MONGODB_EMBEDDED_CHANGE_RETENTION_MB", 256)
# The previous embedded engine's snapshot: imported once at start if present (then kept
# as <file>.imported), so a demo site keeps its data; empty: never import.
MONGODB_SNAPSHOT = os.environ.get("MONGODB_SNAPSHOT", str(BASE_DIR / "var" / "embedded-mongo.bson"))

# --- Comments ------------------------------------------------------------------
COMMENTS_BUCKET_SIZE = env_int("COMMENTS_BUCKET_SIZE", 100)  # hybrid strategy, seeds/003_0f57851d2e8bac42.txt
COMMENTS_MAX_DEPTH = env_int("COMMENTS_MAX_DEPTH", 8)  # levels; depth runs 0..MAX-1, deeper replies attach at the last
COMMENTS_MAX_TEXT = env_int("COMMENTS_MAX_TEXT", 10_000)  # characters, after stripping
COMMENTS_EDIT_WINDOW = env_int("COMMENTS_EDIT_WINDOW", 900)  # seconds after posting during which the author may edit
COMMENTS_POLL_SECONDS = env_int("COMMENTS_POLL_SECONDS", 30)  # a topic page asks for new comments this often (0: never)
# A topic page receives new comments, edits, removals and like counts over Server-Sent Events
# (/t/<slug>/live/, docs/comments.md "Live updates"); polling stays the fallback (0: polling only).
COMMENTS_LIVE = env_bool("COMMENTS_LIVE", True)
# The embedded strategy keeps one document per discussion; refuse comments well
# below MongoDB's 16 MB document limit.
COMMENTS_EMBEDDED_MAX_BYTES = env_int("COMMENTS_EMBEDDED_MAX_BYTES", 8 * 1024 * 1024)
# Moving discussions between storage strategies (comments/moves.py, docs/mongodb.md "Moving a discussion").
# An embedded discussion that reaches this many comments is moved to bucketed storage by a task (0: never);
# below the ~15,000 comments of 8 MiB, so it moves before posts could answer "discussion full".
# An embedded post rewrites the whole discussion document: past about 500 comments it costs more
# than 1.5x a document-strategy post into a discussion of the same size (bench/post_cost.py,
# docs/configuration.md), so the discussion moves then.
COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = env_int("COMMENTS_EMBEDDED_AUTO_MIGRATE_AT", 500)
# comments a move copies per batch; a new move of a discussion one batch takes copies it sealed
COMMENTS_MIGRATE_BATCH = env_int("COMMENTS_MIGRATE_BATCH", 1000)
# longer than one write takes: writers that routed before a step finish
COMMENTS_MIGRATE_GRACE_SECONDS = env_int("COMMENTS_MIGRATE_GRACE_SECONDS", 2)
# a writer waits this long for a sealed discussion to switch, then 503; a sealed move's lease is twice this
COMMENTS_MIGRATE_WAIT_SECONDS = env_int("COMMENTS_MIGRATE_WAIT_SECONDS", 10)

# --- Moderation (docs/moderation.md) ---------------------------------------------
# Open flags that hide a comment pending review; how many of a new user's first
# comments are held for review (0: none).
MODERATION_FLAG_THRESHOLD = env_int("MODERATION_FLAG_THRESHOLD", 3)
MODERATION_NEW_USER_COMMENTS = env_int("MODERATION_NEW_USER_COMMENTS", 0)

# --- Social graph and feeds ----------------------------------------------------
SOCIAL_IDS_PER_DOC = env_int("SOCIAL_IDS_PER_DOC", 1000)  # ids per followers/following document
FEED_STRATEGY = os.environ.get("FEED_STRATEGY", "write")  # read | write | bucket
FEED_BUCKET_SIZE = env_int("FEED_BUCKET_SIZE", 50)  # seeds/001_94fc363f03dca98a.txt: 50 activities per bucket

# Hybrid fan-out: an author with more followers than this is not pushed to their
# followers; readers pull that author's activities from the author log at read time.
FEED_PUSH_LIMIT = env_int("FEED_PUSH_LIMIT", 10_000)
FEED_FOLLOW_BACKFILL = env_int("FEED_FOLLOW_BACKFILL", 20)  # a new follow brings this many recent activities
# Pushes skip followers not seen for this many days; their feed is rebuilt when they return.
FEED_ACTIVE_DAYS = env_int("FEED_ACTIVE_DAYS", 30)
# Pushed feed copies (fan-out on write, and a bucket from its last push) expire after this many
# days (a TTL index); `manage.py integrity` expects nothing older in a feed (docs/deploy.md).
FEED_ITEM_DAYS = env_int("FEED_ITEM_DAYS", 90)

# --- Background work (Celery) ----------------------------------------------------
# Production: a Redis broker and `celery -A cms_site worker`. With no broker the tasks run
# in the web process (eagerly), so `make run` needs nothing else.
_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not _BROKER_URL
# An eager task's arguments still go through a producer of the broker (Celery's apply_async
# serialises them as a send would): with no broker, kombu's in-memory transport, which connects
# to nothing. The URL names a host, which that transport ignores: kombu logs "No hostname was
# supplied" for a URL without one (Celery's default amqp:// too), in every command that runs a task.
CELERY_BROKER_URL = _BROKER_URL or "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = False  # a failed side effect is recorded, never the request's error
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True  # a worker that dies mid-task leaves it to be redelivered (tasks are idempotent)
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_MAX_RETRIES = env_int("CELERY_TASK_MAX_RETRIES", 5)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Scheduled topics: announce the ones whose publish_at has passed; posts left pending (the
# broker refused their tasks, the process died): send what follows them again past their grace.
# Both idempotent; without beat, run `manage.py topics_publish_due` and `manage.py
# comments_posts_finish` from cron instead.
# Without a broker (eager tasks) the web process runs this schedule itself, in one thread per
# process (background/scheduler.py, started by cms_site/wsgi.py); BACKGROUND_SCHEDULER=0 turns it off.
BACKGROUND_SCHEDULER = os.environ.get("BACKGROUND_SCHEDULER", "1") != "0"
# The posts' consequences that thread runs together (background/batch.py) wait in a bounded queue:
# above this many calls waiting a post runs its consequences in its own request (back-pressure).
BACKGROUND_BATCH_QUEUE_MAX = env_int("BACKGROUND_BATCH_QUEUE_MAX", 500)
CELERY_BEAT_SCHEDULE = {
    "topics-publish-due": {"task": "topics.publish_due", "schedule": 60.0},
    "comments-posts-finish": {"task": "comments.posts_finish", "schedule": 60.0},
    "social-follows-finish": {"task": "social.follows_finish", "schedule": 60.0},
}

# --- E-mail ----------------------------------------------------------------------
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend" if DEBUG
                               else "django.core.mail.backends.smtp.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Commons <noreply@localhost>")
# The SMTP relay of the smtp backend (Django's defaults: a local MTA on port 25).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")  # masked in error reports (a PASS setting)
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
# The directory of Django's file backend (EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend):
# one file per message.
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH") or str(BASE_DIR / "var" / "mail")
# The site's public address: the links and the name in every e-mail (notifications, allauth's account
# mails: accounts/adapter.py) and in exports. Production must set it; `make run` and `make serve` set it
# to http://HOST when it is not set.
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000")
# More e-mails than this to one person within NOTIFICATIONS_DIGEST_WINDOW seconds are held and sent as one digest.
NOTIFICATIONS_DIGEST_AFTER = env_int("NOTIFICATIONS_DIGEST_AFTER", 3)
NOTIFICATIONS_DIGEST_WINDOW = env_int("NOTIFICATIONS_DIGEST_WINDOW", 3600)
# An e-mail's one-click unsubscribe link works this many seconds after it was sent (60 days).
NOTIFICATIONS_UNSUBSCRIBE_MAX_AGE = env_int("NOTIFICATIONS_UNSUBSCRIBE_MAX_AGE", 60 * 86_400)

# --- Cache and rate limits (core/throttling.py) -----------------------------
# Rate-limit counters live in Django's cache. The default, local memory, is PER PROCESS:
# behind several workers set CACHE_URL=redis://host:6379/1 so they share the counts.
CACHE_URL = os.environ.get("CACHE_URL", "")
if CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
elif CACHE_URL:
    raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL (or empty for local memory), got {CACHE_URL.split(':')[0]}:...")
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "commons"}}

RATE_LIMITS_ENABLED = os.environ.get("RATE_LIMITS", "on").strip().lower() not in {"off", "0", "false", "no"}
# Behind N trusted reverse proxies, the client address is N hops from the right of X-Forwarded-For.
RATE_LIMIT_NUM_PROXIES = env_int("RATE_LIMIT_NUM_PROXIES", 0)
# scope -> who (user, ip, account) -> one or more windows "N/period".
RATE_LIMIT_RATES = {
    "comment": {"user": ["5/min", "60/hour"], "ip": ["20/min", "300/hour"]},
    "preview": {"user": ["30/min"], "ip": ["120/min"]},  # a Preview is never counted as a comment
    "edit": {"user": ["10/min"], "ip": ["30/min"]},
    "like": {"user": ["30/min"], "ip": ["60/min"]},
    "flag": {"user": ["10/min", "50/day"], "ip": ["30/min"]},
    "follow": {"user": ["20/min", "300/day"], "ip": ["60/min"]},
    # "address": per e-mail address written to (core/throttling.py), however many clients ask.
    "register": {"ip": ["5/hour", "20/day"], "address": ["3/hour", "10/day"]},
    "email": {"user": ["5/hour"], "ip": ["10/hour", "50/day"], "address": ["3/hour", "10/day"]},
    "login": {"account": ["10/15min"], "ip": ["30/15min"]},
    "write": {"user": ["30/min"], "ip": ["60/min"]},
}

# --- Spam checks (moderation/spam.py) -------------------------------------------
SPAM_MAX_LINKS = env_int("SPAM_MAX_LINKS", 3)  # more links: held for review; more than twice as many: rejected
SPAM_DUPLICATE_WINDOW = env_int("SPAM_DUPLICATE_WINDOW", 3600)  # seconds; the same text again by one user is rejected
SPAM_DUPLICATE_MIN_LENGTH = env_int("SPAM_DUPLICATE_MIN_LENGTH", 30)  # shorter texts: duplicates within one topic only
AKISMET_API_KEY = os.environ.get("AKISMET_API_KEY", "")  # empty: no Akismet check
AKISMET_URL = os.environ.get("AKISMET_URL", "")  # empty: https://{key}.rest.akismet.com
AKISMET_SITE_URL = os.environ.get("AKISMET_SITE_URL", SITE_URL)  # Akismet's "blog"
AKISMET_TIMEOUT = env_int("AKISMET_TIMEOUT", 3)  # seconds; on timeout the comment goes through

# --- API -----------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first: an anonymous write is a 401 with `WWW-Authenticate: Token` (DRF takes
    # the header from the first class); a logged-in user who may not act gets 403. The token's
    # class is DRF's, reading the user's bans in the same query (moderation/authentication.py).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "moderation.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # JSON bodies are bounded in depth (core/parsers.py); oversized bodies are a JSON 400.
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "core.api_errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "core.paging.PageNumberPagination",
    # Every unsafe method, per user and per IP, scope from the view's `throttle_scope`.
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.WriteRateThrottle"],
    "PAGE_SIZE": 20,
}

SPECTACULAR_SETTINGS = {
    # Swagger UI and ReDoc from drf-spectacular-sidecar (static files, no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "TopicStatusEnum": "topics.models.TopicStatus",
        "TopicStateEnum": "topics.models.Topic.STATES",  # live, draft, scheduled (search hits' topic_status)
        "CommentStatusEnum": "comments.managers.base.COMMENT_STATUSES",  # the one list of statuses
    },
    "TITLE": "CMS comments and social API",
    "DESCRIPTION": (
        "Topics with MongoDB-backed comment threads (three storage strategies), "
        "a follow graph with tbc continuation documents, and activity feeds."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Every operation documents its error responses (core/openapi.py).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "core.openapi.document_error_responses"],
}

# Error reports mask secrets inside values too (URI passwords), not only secret-named settings.
DEFAULT_EXCEPTION_REPORTER_FILTER = "core.error_reports.SecretMaskingReporterFilter"
DEFAULT_EXCEPTION_REPORTER = "core.error_reports.SecretMaskingExceptionReporter"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # Tasks run in the web process without a broker: one "Task ... succeeded" line per feed
    # delivery would bury the server's own output (hundreds while `make run` loads the demo).
    # Failures still log (ERROR); with a broker the worker logs every task as usual.
    "loggers": {"celery.app.trace": {"level": "WARNING"}} if CELERY_TASK_ALWAYS_EAGER else {},
}

# The password of every demo user (`load_demo`, `make run`); never used outside the demo content.
DEMO_PASSWORD = "commons-demo"
