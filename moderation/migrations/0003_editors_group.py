"""The moderation permission and the Editors group that holds it.

Before this migration every staff user could moderate; from here on moderation needs the
`moderation.moderate_comments` permission (core.permissions). So that a site that
upgrades keeps its editors, every existing staff user is put in the Editors group. Staff
users made later are not: give them the group (or the permission) in the admin.
"""

from django.conf import settings
from django.db import migrations

GROUP = "Editors"
NAME = "Can moderate comments (queue, actions, bans, the topic page's menu)"
# (app label, model, codename, name): moderation, and seeing in the admin what it moderates.
PERMISSIONS = [
    ("moderation", "usermoderation", "moderate_comments", NAME),
    ("moderation", "usermoderation", "view_usermoderation", "Can view user moderation"),
    ("topics", "topic", "view_topic", "Can view topic"),
]


def create_editors(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    User = apps.get_model(settings.AUTH_USER_MODEL)
    group, _ = Group.objects.get_or_create(name=GROUP)
    for app_label, model, codename, name in PERMISSIONS:
        # Permissions are otherwise made after the migrations (post_migrate): made here so the group can hold them.
        content_type, _ = ContentType.objects.get_or_create(app_label=app_label, model=model)
        permission, _ = Permission.objects.get_or_create(content_type=content_type, codename=codename,
                                                         defaults={"name": name})
        group.permissions.add(permission)
    Membership = User.groups.through
    staff = User.objects.filter(is_staff=True).values_list("pk", flat=True)
    Membership.objects.bulk_create([Membership(user_id=pk, group_id=group.pk) for pk in staff], ignore_conflicts=True)


class Migration(migrations.Migration):

    dependencies = [
        ("moderation", "0002_spam_words"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("topics", "0002_topic_publishing_tags"),  # the Topic content type moved to topics there
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="usermoderation",
            options={
                "permissions": [("moderate_comments", NAME)],
                "verbose_name": "user moderation",
                "verbose_name_plural": "user moderation (bans, pre-moderation)",
            },
        ),
        migrations.RunPython(create_editors, migrations.RunPython.noop),
    ]
