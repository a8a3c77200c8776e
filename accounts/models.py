"""The site's user: Django's user with its name's keys, on the table `auth_user` it always had.

`username_key` (NFKC, case-folded: accounts/usernames.py) carries a UNIQUE constraint, so two
accounts whose names differ only by case or width cannot both exist, whatever door writes
them (forms, the API, the admin, `create_user`, `bulk_create`, a race between two sign-ups).
`username_skeleton` (the TR39 look-alike key) is indexed, not unique: sign-up refuses a new
look-alike, but older accounts may share one. Both are written from `username` on every save
and by `bulk_create`; nothing else sets them.

A saved change of an existing user's password (a new one, or password log-in turned off),
whatever door changed it, deletes the user's API tokens in the same transaction as the new
password: there is no moment, and no crash, after which the new password is stored and a
token taken with the old one still works. The first password of a new user and the rehash of
an unchanged one at log-in keep them.

Sites from before this model keep their rows: accounts/migrations/0001 describes the existing
table (and creates it only on a new database), 0002 adds and fills the keys.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.contrib.auth.models import UserManager as DjangoUserManager
from django.db import models, router, transaction

from accounts.usernames import LEGACY_MARK, username_key, username_skeleton


class UserQuerySet(models.QuerySet):
    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        for user in objs:
            user.fill_username_keys()
        return super().bulk_create(objs, *args, **kwargs)


class UserManager(DjangoUserManager.from_queryset(UserQuerySet)):
    pass


class User(AbstractUser):
    username_key = models.CharField(
        max_length=None, editable=False,
        help_text="The username NFKC-normalised and case-folded: unique, so names differing only by case or "
                  "width are one name.")
    username_skeleton = models.CharField(
        max_length=None, editable=False, db_index=True,
        help_text="The username's Unicode TR39 skeleton: sign-up refuses a name that looks like an existing one.")

    objects = UserManager()

    class Meta(AbstractUser.Meta):
        db_table = "auth_user"  # the table django.contrib.auth's user had: existing sites keep their rows
        constraints = [models.UniqueConstraint(fields=["username_key"], name="auth_user_username_key_unique")]

    def fill_username_keys(self) -> None:
        """Set the keys from `username`. A key that the migration marked (an account that shared its
        key with an older one) stays while the username is unchanged, so that account keeps saving."""
        key = username_key(self.username or "")
        if (self.username_key or "").split(LEGACY_MARK, 1)[0] != key:
            self.username_key = key
        self.username_skeleton = username_skeleton(self.username or "")

    def set_unusable_password(self):
        super().set_unusable_password()
        self._password_disabled = True

    def save(self, *args, **kwargs):
        update_fields = kwargs.get("update_fields")
        if update_fields is None or "username" in update_fields:
            self.fill_username_keys()
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "username_key", "username_skeleton"}
        # `_password` is Django's own mark of a password set since the last save (the one its
        # validators' `password_changed` hooks read; a rehash at log-in leaves it empty).
        password_changed = (
            not self._state.adding and (update_fields is None or "password" in update_fields)
            and (self._password is not None or getattr(self, "_password_disabled", False)))
        self._password_disabled = False
        if not password_changed:
            super().save(*args, **kwargs)
            return
        from rest_framework.authtoken.models import Token

        with transaction.atomic(using=kwargs.get("using") or router.db_for_write(type(self), instance=self)):
            super().save(*args, **kwargs)
            Token.objects.filter(user=self).delete()  # a token taken with the old password dies with it
