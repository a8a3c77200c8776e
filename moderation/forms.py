"""Moderation forms: they carry strings to the services, which hold every rule."""

from django import forms

from comments.ids import is_comment_id
from moderation.services import ACTIONS, AUTHOR_ACTIONS, FLAG_REASONS, NOTE_MAX

ACTION_LABELS = {"approve": "Approve", "reject": "Reject", "remove": "Remove", "hide": "Hide", "restore": "Restore",
                 "pin": "Pin", "unpin": "Unpin", "clear_flags": "Clear flags", "ban_author": "Ban the author",
                 "shadow_ban_author": "Shadow-ban the author", "premoderate_author": "Pre-moderate the author"}
ACTION_CHOICES = [(a, ACTION_LABELS[a]) for a in ACTIONS]


def changed_message(action: str, done: int) -> str:
    """What an action did, in the words every page that takes actions uses."""
    if action in AUTHOR_ACTIONS:
        return f"{ACTION_LABELS[action]}: {done} user{'s' if done != 1 else ''}."
    return f"{ACTION_LABELS[action]}: {done} comment{'s' if done != 1 else ''}."

REASON_LABELS = {"spam": "Spam", "abuse": "Abusive", "off_topic": "Off topic", "other": "Other"}


class FlagForm(forms.Form):
    reason = forms.ChoiceField(choices=[(r, REASON_LABELS[r]) for r in FLAG_REASONS])
    note = forms.CharField(required=False, max_length=NOTE_MAX, widget=forms.TextInput(attrs={"placeholder": "Note (optional)"}))
    next = forms.CharField(widget=forms.HiddenInput, required=False)


class EntryIdsField(forms.MultipleChoiceField):
    """Queue entry ids (24 hex digits); the service parses them again."""

    def valid_value(self, value):
        return isinstance(value, str) and len(value) == 24 and all(c in "0123456789abcdef" for c in value)


class QueueActionForm(forms.Form):
    action = forms.ChoiceField(choices=ACTION_CHOICES)
    entries = EntryIdsField(error_messages={"required": "Select at least one comment."})


class CommentIdsField(forms.MultipleChoiceField):
    """Several comment ids (stored, or a held submission's); each well formed (comments.ids.is_comment_id)."""

    def valid_value(self, value):
        return is_comment_id(value)


class CommentActionForm(forms.Form):
    """The per-topic admin page's bulk actions."""

    action = forms.ChoiceField(choices=ACTION_CHOICES)
    comments = CommentIdsField(error_messages={"required": "Select at least one comment."})


class MenuActionForm(forms.Form):
    """One action from a comment's moderation menu on the topic page."""

    action = forms.ChoiceField(choices=ACTION_CHOICES)
    next = forms.CharField(widget=forms.HiddenInput, required=False)


class BanForm(forms.Form):
    username = forms.CharField(max_length=150, strip=False)  # as typed: the service refuses "alice\n"
    until = forms.DateTimeField(required=False, help_text="Empty: for good (UTC, YYYY-MM-DD HH:MM).")
    shadow = forms.BooleanField(required=False, help_text="Keep their comments, shown only to them.")
    reason = forms.CharField(required=False, max_length=500)

    def clean_until(self):
        # ASCII digits only: Django's date parsing matches any script's digits (`٢٠٣٠` is 2030).
        raw = self.data.get(self.add_prefix("until"), "")
        if isinstance(raw, str) and not raw.isascii():
            raise forms.ValidationError("Use ASCII digits (0-9): YYYY-MM-DD HH:MM.")
        return self.cleaned_data.get("until")


class UserActionForm(forms.Form):
    username = forms.CharField(max_length=150, strip=False)  # as typed: the service refuses "alice\n"
    action = forms.ChoiceField(choices=[("unban", "Lift ban"), ("premoderate", "Pre-moderate"),
                                        ("unpremoderate", "Stop pre-moderating")])
