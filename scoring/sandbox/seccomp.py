"""The seccomp filter bwrap installs on every sandboxed command (`bwrap --seccomp FD`).

Denied with EPERM (the kernel surface an unprivileged, capability-less process can still
reach and that scoring, generation and agents never need):
- bpf: loads programs into the kernel (a frequent privilege-escalation path);
- keyctl, add_key, request_key: the kernel keyring, shared beyond the sandbox's namespaces;
- userfaultfd: lets an exploit stall the kernel mid-copy to win races;
- perf_event_open: hardware counters and kernel-pointer side channels;
- io_uring_setup/enter/register: a large, bug-prone interface that bypasses this filter for
  the operations it queues (runtimes such as libuv fall back to threads on EPERM);
- kexec_load, kexec_file_load, init_module, finit_module, delete_module: kernel loading;
- ptrace, process_vm_readv, process_vm_writev, kcmp: inspecting other processes.
The mount family, unshare/setns and pivot_root are not repeated: bwrap drops every
capability and disables nested user namespaces, so they already fail.

Hand-assembled classic BPF, not libseccomp: Debian's python3-seccomp is built for the system
interpreter (the venv's Python cannot import it) and the PyPI wrappers are thin and little
kept; the program is a dozen instructions and tested by calling each syscall in the sandbox.
Fails closed: a syscall of another ABI (i386 `int 0x80`, x32) never reaches the table, and on
a host this table has no numbers for, building the filter raises.
"""

from __future__ import annotations

import errno
import platform
import struct

from .base import BackendUnavailable

# Syscall numbers from the kernel's arch/x86/entry/syscalls/syscall_64.tbl.
DENIED_X86_64: dict[str, int] = {
    "ptrace": 101,
    "init_module": 175,
    "delete_module": 176,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "perf_event_open": 298,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
}

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
# struct seccomp_data: int nr; __u32 arch; ...
_OFFSET_NR, _OFFSET_ARCH = 0, 4
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000


class SeccompUnsupported(BackendUnavailable):
    pass


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes:
    """The compiled filter (struct sock_filter[]) for this host, as bwrap reads it from an fd."""
    machine = machine or platform.machine()
    if machine != "x86_64":
        raise SeccompUnsupported(f"no seccomp syscall table for {machine}; the bwrap sandbox needs x86_64")
    numbers = sorted(DENIED_X86_64.values())
    deny = _RET_ERRNO | errno.EPERM
    count = len(numbers)
    program = [
        _insn(_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        _insn(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _OFFSET_NR),
        # x32 calls share the arch value with their own numbers (nr | 0x40000000): deny them all.
        _insn(_JGE_K, count + 1, 0, _X32_SYSCALL_BIT),
    ]
    # Instruction i of the table jumps over the rest of the table and the ALLOW to the DENY.
    program += [_insn(_JEQ_K, count - i, 0, nr) for i, nr in enumerate(numbers)]
    program += [_insn(_RET_K, 0, 0, _RET_ALLOW), _insn(_RET_K, 0, 0, deny)]
    return b"".join(program)
