from django.apps import AppConfig


class CmsSiteConfig(AppConfig):
    name = "cms_site"
    verbose_name = "CMS"
