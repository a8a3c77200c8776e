"""Where e-mail goes and what address it names, as the environment sets it."""

import os
import subprocess
import sys

from django.conf import settings


def test_email_file_path_is_read_from_the_environment(tmp_path):
    """EMAIL_BACKEND=...filebased.EmailBackend writes each message into EMAIL_FILE_PATH."""
    code = ("import django; django.setup(); from django.core.mail import send_mail; "
            "send_mail('Subject here', 'Body here', None, ['someone@example.com'])")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "DEBUG": "1",
           "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend", "EMAIL_FILE_PATH": str(tmp_path / "mail")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=settings.BASE_DIR, capture_output=True)
    [written] = list((tmp_path / "mail").iterdir())
    assert "Subject here" in written.read_text()


def test_make_run_and_serve_name_the_address_they_serve_on_unless_site_url_is_set():
    def site_url_of(target, **env):
        out = subprocess.run(["make", "-n", target], capture_output=True, text=True, check=True, cwd=settings.BASE_DIR,
                             env={"PATH": "/usr/bin:/bin", **env}).stdout
        line = next(line for line in out.splitlines() if "rundemo" in line or "gunicorn" in line)
        return next(word.split("=", 1)[1] for word in line.split() if word.startswith("SITE_URL="))

    assert site_url_of("run") == "http://127.0.0.1:8000"
    assert site_url_of("run", HOST="127.0.0.1:8400") == "http://127.0.0.1:8400"
    assert site_url_of("serve", HOST="0.0.0.0:8080", SITE_URL="https://commons.example") == "https://commons.example"


def test_check_deploy_warns_while_site_url_is_the_development_default(settings):
    from io import StringIO

    from django.core.management import call_command

    def warnings_of(site_url, https=False):
        settings.SITE_URL, settings.HTTPS = site_url, https
        out, err = StringIO(), StringIO()
        call_command("check", "--deploy", stdout=out, stderr=err)
        return {code for code in ("core.W001", "core.W002") if code in out.getvalue() + err.getvalue()}

    assert warnings_of("http://127.0.0.1:8000") == {"core.W001"}
    assert warnings_of("http://commons.example.org", https=True) == {"core.W002"}
    assert warnings_of("https://commons.example.org", https=True) == set()


def test_check_deploy_warns_while_rate_limits_are_counted_per_worker(settings):
    """Local-memory caches are per process: behind `make serve`'s two workers a per-address limit of
    3 mails let 6 through. The deployment check says so until CACHE_URL names a shared cache."""
    from io import StringIO

    from django.core.management import call_command

    def warned(backend):
        settings.CACHES = {"default": {"BACKEND": backend, "LOCATION": "redis://127.0.0.1:1/1"}}
        out, err = StringIO(), StringIO()
        call_command("check", "--deploy", stdout=out, stderr=err)
        return "core.W003" in out.getvalue() + err.getvalue()

    settings.SITE_URL, settings.RATE_LIMITS_ENABLED = "https://commons.example.org", True  # the tests run without limits
    assert warned("django.core.cache.backends.locmem.LocMemCache")
    assert not warned("django.core.cache.backends.redis.RedisCache")
    settings.RATE_LIMITS_ENABLED = False
    assert not warned("django.core.cache.backends.locmem.LocMemCache")
