"""The API docs (Swagger UI and ReDoc from drf-spectacular-sidecar) in Chromium: every request
the page makes goes to this site (the live server on loopback), and the Content-Security-Policy refuses nothing."""

from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import DESKTOP, PHONE, csp_refusals

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
@pytest.mark.parametrize("path,ready", [("/api/redoc/", ".menu-content"), ("/api/docs/", ".swagger-ui .info")])
def test_the_api_docs_request_nothing_off_site(open_page, site, shots, viewport, name, path, ready):
    page = open_page(viewport=viewport)
    requested, refused = [], csp_refusals(page)
    page.on("request", lambda request: requested.append(request.url))
    response = page.goto(path)
    assert response.status == 200
    page.wait_for_selector(ready, state="attached")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(shots / f"api-docs{path.replace('/', '-')}{name}.png"), full_page=False)
    off_site = [url for url in requested
                if urlsplit(url).scheme not in ("data", "blob") and urlsplit(url).netloc != urlsplit(site).netloc]
    assert not off_site, off_site
    assert not refused, refused
