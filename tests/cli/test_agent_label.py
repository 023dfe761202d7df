"""The short label of a custom agent (contracts.agent_label): the client records it and
the Portal derives it the same way for older bundles."""

import pytest

from contracts.agent_label import agent_label, short_command, shown_label

NAIVE = "/home/me/asibench/.venv/bin/python /home/me/asibench/examples/agents/naive_agent.py --workspace {workspace}"


@pytest.mark.parametrize(("cmd", "label"), [
    (NAIVE, "python naive_agent.py"),
    ("python -m my_agents.solver --workspace {workspace}", "python -m my_agents.solver"),
    ("OPENAI_API_KEY=x /opt/bin/run-agent.sh {workspace}", "run-agent.sh"),
    ("env FOO=1 node /srv/agent/index.js --ws {workspace}", "node index.js"),
    ("codex exec --full-auto", "codex"),
    ("'unbalanced", "'unbalanced"),
])
def test_a_command_is_shortened_to_program_and_script(cmd, label):
    assert short_command(cmd) == label


def test_the_configured_name_wins_over_the_command():
    for key in ("agent", "agent_name", "name"):
        assert agent_label(cmd_template=NAIVE, config={key: " My Agent "}) == "My Agent"
    assert agent_label(cmd_template=NAIVE, config={"model": "m"}) == "python naive_agent.py"
    assert agent_label(agent_name="recorded", cmd_template=NAIVE, config={"name": "x"}) == "recorded"


def test_labels_stored_by_older_drafts_are_shown_short():
    assert shown_label(f"agent-cmd: {NAIVE}"[:130]) == "python naive_agent.py"
    assert shown_label("claude-code") == "claude-code"
    assert len(agent_label(config={"name": "n" * 500})) <= 60
