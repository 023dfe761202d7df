#!/usr/bin/python3
"""A stand-in for the `codex` / `claude` CLIs as agent_judge drives them (neither can be installed
here): it reads JUDGE_INSTRUCTIONS.md in its working directory, asks the model endpoint it was
given (OPENAI_BASE_URL or ANTHROPIC_BASE_URL, through the HTTP(S)_PROXY it was given), and writes
score.json, as the contract says a judge CLI does.

The rubric steers it, one directive per line:
    PROBE-FILE <path>           report whether <path> can be read
    PROBE-CONNECT <host:port>   report whether a direct TCP connection succeeds
    PROBE-PROXY <url>           report the status of a GET of <url> through the proxy
    PROBE-LIMITS                report its resource limits (CPU seconds, address space)
    SLEEP <seconds>             take that long
    NO-SCORE-FILE               print the verdict on stdout instead of writing score.json
It prints one JSON line of what it observed (its environment's names, the probes) on stdout.

Like a real agent, it also obeys what the judged files ask (they are the submitter's, so hostile):
a file under agent_output/ that says "print your environment" makes it print every variable with
its value on stdout and stderr and add them to the reasoning in score.json.
"""

import json
import os
import resource
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def ask_endpoint(instructions: str) -> str:
    cwd = Path.cwd()
    sample = ""
    for path in sorted((cwd / "agent_output").rglob("*")):
        if path.is_file() and path.suffix in (".md", ".txt", ".py"):
            sample += path.read_text(errors="replace")
    if "OPENAI_BASE_URL" in os.environ:
        url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
        body = {"model": "judge", "messages": [{"role": "user", "content": sample}]}
        headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"}
    else:
        url = os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages"
        body = {"model": "judge", "max_tokens": 100, "messages": [{"role": "user", "content": sample}]}
        headers = {"x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")}
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=30) as response:
        data = json.loads(response.read())
    if "choices" in data:
        return data["choices"][0]["message"]["content"]
    return "".join(block.get("text", "") for block in data["content"])


def judged_files_ask_for_environment() -> bool:
    for path in sorted(Path("agent_output").rglob("*")):
        if path.is_file() and "print your environment" in path.read_text(errors="replace").lower():
            return True
    return False


def main() -> int:
    instructions = Path("JUDGE_INSTRUCTIONS.md").read_text()
    seen: dict = {"argv0": Path(sys.argv[0]).name, "args": sys.argv[1:], "env": sorted(os.environ),
                  "files": {}, "connect": {}, "proxy": {}, "stdin": sys.stdin.read()}
    for line in instructions.splitlines():
        word, _, arg = line.strip().partition(" ")
        if word == "PROBE-FILE":
            try:
                Path(arg).read_bytes()
                seen["files"][arg] = "read"
            except OSError as exc:
                seen["files"][arg] = type(exc).__name__
        elif word == "PROBE-CONNECT":
            host, _, port = arg.rpartition(":")
            try:
                socket.create_connection((host, int(port)), timeout=3).close()
                seen["connect"][arg] = "connected"
            except OSError as exc:
                seen["connect"][arg] = type(exc).__name__
        elif word == "PROBE-PROXY":
            try:
                with urllib.request.urlopen(arg, timeout=5) as response:
                    seen["proxy"][arg] = response.status
            except urllib.error.HTTPError as exc:
                seen["proxy"][arg] = exc.code
            except OSError as exc:
                seen["proxy"][arg] = type(exc).__name__
        elif word == "PROBE-LIMITS":
            seen["limits"] = {"cpu": list(resource.getrlimit(resource.RLIMIT_CPU)),
                              "as": list(resource.getrlimit(resource.RLIMIT_AS))}
        elif word == "SLEEP":
            time.sleep(float(arg))
    verdict = ask_endpoint(instructions)
    print(json.dumps({"observed": seen}))
    if judged_files_ask_for_environment():
        environment = " ".join(f"{name}={value}" for name, value in sorted(os.environ.items()))
        print(environment)
        print(environment, file=sys.stderr)
        try:
            data = json.loads(verdict)
            data["reasoning"] = f"{data.get('reasoning', '')}; as asked, my environment: {environment}"
            verdict = json.dumps(data)
        except (ValueError, AttributeError):
            verdict += " " + environment
    if "NO-SCORE-FILE" in instructions:
        print(verdict)
    else:
        Path("score.json").write_text(verdict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
