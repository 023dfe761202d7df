"""The guided flow's step forms. They only shape input; services apply the rules."""

from django import forms

from contracts.task_files import MULTI_TURN_AGENTS
from scoring.engine.static_checks import STANDARD_DOMAINS
from scoring.models import Task

ID_HELP = "domain.task_name — lowercase letters, digits and underscores, e.g. astronomy.toy_transit_fit"


class IdentityForm(forms.Form):
    task_id = forms.CharField(max_length=120, label="Task id", help_text=ID_HELP)
    name = forms.CharField(max_length=200, label="Name")
    domain = forms.CharField(max_length=50, help_text=f"Standard: {', '.join(STANDARD_DOMAINS)}")
    subdomain = forms.CharField(max_length=200, required=False)


class ObjectiveForm(forms.Form):
    objective = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), label="Scientific objective",
                                help_text="What scientific question does the task answer?")
    core_method = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Core method")
    source_paper = forms.CharField(max_length=500, required=False, label="Source paper")
    source_repo = forms.CharField(max_length=500, required=False, label="Source repository")


class IoForm(forms.Form):
    inputs = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label="Inputs",
                             help_text="The files the generator writes under data/, one per line.")
    outputs = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label="Outputs",
                              help_text="The files the agent must produce, one per line.")


class PromptsForm(forms.Form):
    prompt_b1 = forms.CharField(widget=forms.Textarea(attrs={"rows": 8}), label="B1 — science, method and recipe")
    prompt_b2 = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), label="B2 — method and constraints")
    prompt_b3 = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), label="B3 — goal, inputs, outputs")
    prompt_b4 = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), label="B4 — B3 plus distractions")


class ScoringForm(forms.Form):
    task_eval = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}),
                                label="task_eval.yaml", help_text="Gates, weighted scorers and generation.")
    scoring_notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False,
                                    label="Scoring rules in words")


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def clean(self, data: object, initial: object = None) -> object:
        if isinstance(data, (list, tuple)):
            return [super(MultipleFileField, self).clean(item, initial) for item in data]
        return super().clean(data, initial)


class FilesForm(forms.Form):
    """Rendered only: the view reads every selected file from request.FILES."""

    folder = forms.CharField(max_length=200, required=False, label="Into folder",
                             help_text="Optional, e.g. solution or data/nested")
    upload = MultipleFileField(label="Files", required=False)


AGENT_CHOICES = [("", "—")] + [(a, a) for a in sorted(MULTI_TURN_AGENTS)]


class TestingForm(forms.Form):
    local_testing_done = forms.BooleanField(required=False, label="I tested this task locally with real agents")
    test_provider = forms.CharField(max_length=120, required=False, label="Provider")
    test_model = forms.CharField(max_length=120, required=False, label="Model")
    test_agent = forms.ChoiceField(choices=AGENT_CHOICES, required=False, label="Agent harness")
    test_sandbox = forms.ChoiceField(choices=[("os", "os (Docker)")], required=False, label="Sandbox")
    score_b1 = forms.FloatField(required=False, min_value=0, max_value=100, label="B1 score")
    score_b2 = forms.FloatField(required=False, min_value=0, max_value=100, label="B2 score")
    score_b3 = forms.FloatField(required=False, min_value=0, max_value=100, label="B3 score")
    score_b4 = forms.FloatField(required=False, min_value=0, max_value=100, label="B4 score")


class DecisionForm(forms.Form):
    revision = forms.IntegerField(widget=forms.HiddenInput)
    decision = forms.ChoiceField(choices=[("request_changes", "Request changes"), ("accept", "Accept"),
                                          ("reject", "Reject")])
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))


class PublishForm(forms.Form):
    datasets = forms.MultipleChoiceField(choices=[("seed42", "seed42 (official)"), ("seed31415", "seed31415")],
                                         widget=forms.CheckboxSelectMultiple, initial=["seed42", "seed31415"])
    status = forms.ChoiceField(choices=[(s, f"{s} — {Task.STATUS_MEANINGS[s]}") for s in ("final", "sample")],
                               initial="final", label="Catalog status")


class CommentForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="Comment")
