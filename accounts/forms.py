from allauth.account.forms import LoginForm as AllauthLoginForm
from allauth.account.forms import ResetPasswordForm as AllauthResetPasswordForm
from django import forms
from django.contrib.auth import forms as auth_forms
from django.contrib.auth.forms import UserChangeForm, UserCreationForm

from accounts.models import User
from accounts.selectors import email_owner
from accounts.usernames import username_clean, username_unavailable
from core.errors import InvalidInput


def _clean_username(form, *, exclude_pk=None) -> str:
    """The shared username rules (accounts/usernames.py) as a form field's clean step."""
    try:
        name = username_clean(form.cleaned_data.get("username"))
    except InvalidInput as exc:
        raise forms.ValidationError(exc.message, code="invalid") from None
    if refusal := username_unavailable(name, exclude_pk=exclude_pk):
        raise forms.ValidationError(refusal, code="unique")
    return name


class SignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def clean_username(self):
        return _clean_username(self)


class AdminUserCreationForm(auth_forms.AdminUserCreationForm):
    """The admin's "add user" form, with the same username rules as sign-up."""

    class Meta(auth_forms.AdminUserCreationForm.Meta):
        model = User

    def clean_username(self):
        return _clean_username(self)


class AdminUserChangeForm(UserChangeForm):
    class Meta(UserChangeForm.Meta):
        model = User

    def clean_username(self):
        if "username" not in self.changed_data:
            return self.cleaned_data.get("username")
        return _clean_username(self, exclude_pk=self.instance.pk)


class DeleteAccountForm(forms.Form):
    comments = forms.ChoiceField(widget=forms.RadioSelect, initial="tombstone", choices=[
        ("tombstone", "Keep them as deleted comments by \u201ca deleted account\u201d, so the replies to them still make sense"),
        ("remove", "Remove them: each leaves only a \u201cremoved\u201d placeholder"),
    ])
    password = forms.CharField(widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}), max_length=4096)
    confirm = forms.BooleanField(label="I understand that my account cannot be restored.")


class LoginForm(AllauthLoginForm):
    """allauth's log-in form with the site's words: one field takes a username or an e-mail."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "Username or e-mail"
        if "remember" in self.fields:
            self.fields["remember"].label = "Keep me logged in"


class ResetPasswordForm(AllauthResetPasswordForm):
    """allauth's reset form, for the address's owner only (accounts.selectors.email_owner): allauth
    mails a link for every account holding the address, and other accounts may hold it unconfirmed."""

    def clean_email(self):
        email = super().clean_email()
        owner = email_owner(email)
        self.users = [owner] if owner is not None and owner.is_active else []
        return email
