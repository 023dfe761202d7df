from django import forms


class CliTokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where will you use it? e.g. 'laptop' or 'cluster'.")
    expires_in_days = forms.TypedChoiceField(
        choices=[("", "Never"), ("30", "30 days"), ("90", "90 days"), ("365", "1 year")],
        coerce=int,
        empty_value=None,
        required=False,
        label="Expires",
    )


class DeviceCodeForm(forms.Form):
    code = forms.CharField(max_length=12, label="Code shown in your terminal")


class DeviceDecisionForm(forms.Form):
    code = forms.CharField(max_length=12, widget=forms.HiddenInput)
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("deny", "Deny")])
