"""The site's URLs with the load run's floor view (bench/floor.py) in front: cms_site/floor_settings.py's URLconf."""

from django.urls import path

from bench.floor import FLOOR_PATH, Floor
from cms_site.urls import urlpatterns as site_urlpatterns

urlpatterns = [path(FLOOR_PATH.strip("/") + "/", Floor.as_view()), *site_urlpatterns]
