"""Comment forms. They only carry strings to the services, which hold every rule (so the
pages, the API and the admin refuse the same inputs with the same messages)."""

from django import forms


class CommentForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False, strip=False, label="Your comment")
    parent = forms.CharField(widget=forms.HiddenInput, required=False)
    next = forms.CharField(widget=forms.HiddenInput, required=False)


class LikeForm(forms.Form):
    action = forms.ChoiceField(choices=[("like", "Like"), ("unlike", "Unlike")])
    next = forms.CharField(widget=forms.HiddenInput, required=False)
