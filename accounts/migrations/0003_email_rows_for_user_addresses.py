"""Every account whose user row carries an e-mail address gets allauth's EmailAddress row for it
(unverified, primary if it has none), so the address's claim is recorded where the ownership
rule reads it (accounts.selectors.email_owner: a confirmed address, else the oldest row).

An account made before allauth saw its address (the admin, `create_user`, an adopted
`auth_user` table) holds it only on its user row: another account could add a row for it, and
once the first account added its own row (to confirm the address, which notification e-mail
now requires) that later row lost to the other account's older one, which was then sent the
link that confirms it. Recording these claims now puts them ahead of any row added later.
"""

from django.db import migrations


def record_user_row_addresses(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    EmailAddress = apps.get_model("account", "EmailAddress")
    for user in User.objects.exclude(email="").order_by("pk").iterator():
        email = user.email.strip().lower()  # as allauth stores an address
        rows = EmailAddress.objects.filter(user_id=user.pk)
        if not email or rows.filter(email__iexact=email).exists():
            continue
        EmailAddress.objects.create(user_id=user.pk, email=email, verified=False,
                                    primary=not rows.filter(primary=True).exists())


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_username_keys"),
        ("account", "0009_emailaddress_unique_primary_email"),
    ]

    operations = [migrations.RunPython(record_user_row_addresses, migrations.RunPython.noop)]
