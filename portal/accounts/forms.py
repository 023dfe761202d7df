from allauth.account.forms import ChangePasswordForm, ResetPasswordKeyForm
from django import forms

from portal.accounts.services import SUBMIT_SCOPE, TOKEN_SCOPES, cli_tokens_revoke_all


class CliTokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where will you use it? e.g. 'laptop' or 'cluster'.")
    expires_in_days = forms.TypedChoiceField(
        choices=[("", "Never"), ("30", "30 days"), ("90", "90 days"), ("365", "1 year")],
        coerce=int,
        empty_value=None,
        required=False,
        label="Expires",
    )
    scope = forms.ChoiceField(choices=list(TOKEN_SCOPES.items()), initial=SUBMIT_SCOPE, required=False, label="Scope")

    def clean_scope(self) -> str:
        return self.cleaned_data.get("scope") or SUBMIT_SCOPE


class DeviceCodeForm(forms.Form):
    code = forms.CharField(max_length=12, label="Code shown in your terminal")


class DeviceDecisionForm(forms.Form):
    code = forms.CharField(max_length=12, widget=forms.HiddenInput)
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("deny", "Deny")])


class _RevokeCliTokensOnSave(forms.Form):
    """A new password may mean the old one leaked, and CLI tokens outlive sessions: offer to end them."""

    revoke_cli_tokens = forms.BooleanField(
        required=False, initial=True, label="Also revoke all my CLI tokens (log every asibench client out)"
    )

    def save(self) -> None:
        super().save()  # type: ignore[misc]
        if self.cleaned_data.get("revoke_cli_tokens"):
            cli_tokens_revoke_all(user=self.user)  # type: ignore[attr-defined]


class PasswordChangeWithTokensForm(_RevokeCliTokensOnSave, ChangePasswordForm):
    pass


class PasswordResetWithTokensForm(_RevokeCliTokensOnSave, ResetPasswordKeyForm):
    pass
