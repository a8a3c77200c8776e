"""Deliveries that finally failed: one row per failed task, visible to editors in the admin
and replayed by `python manage.py tasks_replay` (or the admin action).

A row is kept in the Django database, not MongoDB, because what fails most is MongoDB
itself: the record must not depend on the store whose outage it reports.
"""

from django.db import models


class FailedTask(models.Model):
    task = models.CharField(max_length=200, db_index=True)
    task_id = models.CharField(max_length=255, blank=True)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    retries = models.PositiveIntegerField(default=0)
    failed_at = models.DateTimeField(auto_now_add=True, db_index=True)
    replayed_at = models.DateTimeField(null=True, blank=True)
    replay_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-failed_at", "-id"]
        indexes = [models.Index(fields=["replayed_at", "id"], name="failed_pending")]

    def __str__(self):
        return f"{self.task}{tuple(self.args)!r}"
