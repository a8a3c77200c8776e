"""The test settings as they were before the custom user model: django.contrib.auth's own user
(`auth.User`) and no accounts app, so `migrate` builds the database a site made before then
(tests/accounts/test_user_model.py migrates such a database to the current schema)."""

from tests.settings import *  # noqa: F403

AUTH_USER_MODEL = "auth.User"
INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "accounts"]  # noqa: F405
