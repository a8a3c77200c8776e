"""Moderation forms: they carry strings to the services, which hold every rule."""

from django import forms

from moderation.services import ACTIONS, FLAG_REASONS, NOTE_MAX

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
    action = forms.ChoiceField(choices=[(a, a.capitalize()) for a in ACTIONS])
    entries = EntryIdsField(error_messages={"required": "Select at least one comment."})


class BanForm(forms.Form):
    username = forms.CharField(max_length=150, strip=False)  # as typed: the service refuses "alice\n"
    until = forms.DateTimeField(required=False, help_text="Empty: for good (UTC, YYYY-MM-DD HH:MM).")
    shadow = forms.BooleanField(required=False, help_text="Keep their comments, shown only to them.")
    reason = forms.CharField(required=False, max_length=500)


class UserActionForm(forms.Form):
    username = forms.CharField(max_length=150, strip=False)  # as typed: the service refuses "alice\n"
    action = forms.ChoiceField(choices=[("unban", "Lift ban"), ("premoderate", "Pre-moderate"),
                                        ("unpremoderate", "Stop pre-moderating")])
