"""The two ready-made staff groups, "study viewer" and "study manager" (raters.permissions)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP_PERMISSIONS = {
    "study viewer": ["view_study_dashboard"],
    "study manager": ["view_study_dashboard", "manage_study", "moderate_raters", "export_study"],
}


def groups_create(apps, schema_editor):
    # Permissions are normally created after all migrations have run; this one needs them now.
    raters_config = apps.get_app_config("raters")
    raters_config.models_module = True
    create_permissions(raters_config, apps=apps, verbosity=0)
    raters_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUP_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label="raters", codename__in=codenames)
        )


def groups_delete(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUP_PERMISSIONS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("raters", "0006_staff_permissions_and_audit"),
    ]

    operations = [migrations.RunPython(groups_create, groups_delete)]
