"""Settings for the test suite: the project's settings with test-only defaults."""

import os

os.environ.setdefault("SECRET_KEY", "insecure-key-for-tests-only")

from cms_site.settings import *  # noqa: E402,F403

# Fast password hashing; nothing here is a real credential.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests use a fresh MongoDB database each (tests/conftest.py); this is only the prefix.
MONGODB_DB = "test"
# No old snapshot to import (tests/docstore/test_snapshot_import.py imports one itself).
MONGODB_SNAPSHOT = ""
# The embedded engine: a temporary store (a file per test database, removed with it);
# no fsync (a test database does not outlive the run).
MONGODB_EMBEDDED_PATH = ""
MONGODB_EMBEDDED_SYNCHRONOUS = "OFF"
# No scheduler thread in the suite (tests/background/test_scheduler.py starts its own).
BACKGROUND_SCHEDULER = False
# Rate limits are off for the suite; tests/core/test_throttling.py turns them on.
RATE_LIMITS_ENABLED = False

# Tests render pages with DEBUG off and no collectstatic: plain static storage, and
# WhiteNoise serves the source files (the smoke test checks the collected ones).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
# The duplicate-text spam check is off too (tests post the same text on purpose);
# tests/moderation/test_spam.py turns it on.
SPAM_DUPLICATE_WINDOW = 0
# The automatic move of a full embedded discussion is off (tests check the 409 of a full one);
# tests/comments/test_moves.py turns it on. Short grace: writers in tests take milliseconds.
COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 0
COMMENTS_MIGRATE_GRACE_SECONDS = 1.0
