"""Account pages under /accounts/: allauth's (log-in by username or e-mail, sign-up, password
reset and change, e-mail with verification, GitHub and Google) under the site's names, and
the account page and account deletion."""

from allauth.account import views as allauth_views
from django.urls import include, path
from django.views.generic import RedirectView

from accounts import views

urlpatterns = [
    # The names the site's templates and tests use, first, so they win the match.
    path("login/", allauth_views.login, name="login"),
    path("logout/", allauth_views.logout, name="logout"),
    path("signup/", allauth_views.signup, name="signup"),
    path("", views.account, name="account"),
    path("delete/", views.account_delete, name="account_delete"),
    # Django's own address for the reset page, which people and password managers try.
    path("password_reset/", RedirectView.as_view(pattern_name="account_reset_password", permanent=True)),
    path("", include("allauth.urls")),
]
