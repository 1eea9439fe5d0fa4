"""The operating system's wall around the baseline's child: bubblewrap, a seccomp filter, an
unprivileged user, and only what the child needs to see.

The sandbox (:mod:`kernelgen.baseline.sandbox`) starts the child through ``bwrap``
(bubblewrap, from the distribution: ``apt-get install bubblewrap``) with:

* **its own user, mount, PID, network, IPC and UTS namespaces** (``--unshare-user
  --unshare-pid --unshare-net ...``, ``--disable-userns``): it sees only its own processes (no
  ``/proc/<parent>``: not the harness's environment, memory, working directory or command
  line), has no network but a loopback that is down, and cannot join or make namespaces;
* **an unprivileged user**: uid 65534 inside; when kernelgen runs as root, ``bwrap`` itself is
  started as uid 65534 (nobody) too, so that the child is nobody outside as well (no file of
  root's is its own); where the system refuses a user namespace to nobody, ``bwrap`` runs as
  root and the child is a user without any capability (:data:`Wall.who` says which);
* **a seccomp filter** (:func:`seccomp_filter`, classic BPF passed with ``--seccomp FD``): no
  ``setns``, ``unshare``, ``ptrace``, ``process_vm_*``, ``mount`` and its kin, ``bpf``,
  ``perf_event_open``, ``keyctl``, ``io_uring``, kernel modules, clocks or ``reboot``; no
  ``clone`` with a namespace flag, no ``clone3``; in Triton's interpreter (CPU mode) no new
  processes at all (threads only); on a GPU, processes stay allowed (Triton runs ``ptxas``
  and ``gcc``) inside the PID namespace;
* **only what it needs, read-only**: ``/usr`` and the system's library links, a handful of
  files of ``/etc`` (the loader's cache, ``passwd``, ``alternatives``, ...), Python's
  prefixes, the import roots of torch, Triton and NumPy, and kernelgen's package folder (not
  the checkout: no ``.env``, no results, no ``~/.cache/kernelgen``); ``/proc`` of its own PID
  namespace, a minimal ``/dev`` (plus the NVIDIA device nodes on a GPU), ``/sys`` read-only,
  an empty ``/tmp`` of 64 MiB, the rest of its root read-only; the **job folder is the only
  thing on disk it can write**, mounted at ``/job``;
* **every descendant killed when the case ends**: the PID namespace's init (bwrap's reaper)
  takes every process of the namespace with it; the parent kills it at the end of every case
  (``--info-fd`` gives its pid), and ``--die-with-parent`` does the same if the harness dies.

Limits (address space or data, file size, CPU seconds, processes) are hard rlimits the child
sets on itself before the answer is imported (lowering a hard limit cannot be undone without
``CAP_SYS_RESOURCE`` in the initial user namespace, which nothing in the sandbox has). No
cgroup is used: neither the CI machine (cgroup v1, a v2 hierarchy without the memory or pids
controller) nor a plain ``docker run`` delegates one.

:func:`find_wall` probes once per process whether ``bwrap`` can start such a sandbox here;
where it cannot, the baseline refuses to run (one line saying why) unless the run asked for
``--unsafe-sandbox`` (a developer's own machine), which keeps the child in a plain process with
the audit hook only.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from kernelgen.errors import KernelgenError

SANDBOX_UID = 65534  # nobody
JOB_MOUNT = "/job"  # where the child sees its job folder
TMP_BYTES = 64 << 20  # /tmp is a tmpfs of this size (memory: a file there is not on disk)
INSTALL_HINT = "apt-get install -y bubblewrap"
UNSAFE_FLAG = "--unsafe-sandbox"

# Files and folders of /etc the child sees (the rest of /etc stays out: shadow, ssl keys, ...).
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone", "passwd",
               "group", "nsswitch.conf", "hosts", "os-release", "nvidia")
# Top-level system folders (or, on merged-/usr systems, links into /usr) the child sees.
SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Variables naming files or folders the GPU toolchain needs, bound read-only where set.
TOOL_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
                  "TRITON_LIBCUDA_PATH", "TRITON_LIBDEVICE_PATH")


class SandboxUnavailable(KernelgenError):
    """bubblewrap cannot start the sandbox here, and the run did not ask for --unsafe-sandbox."""

    stage = "sandbox"


@dataclasses.dataclass(frozen=True)
class Wall:
    """How the child is walled in: ``bwrap``'s path and version, and ``as_user``, the uid
    ``bwrap`` is started as (None: kernelgen's own)."""

    bwrap: str
    version: str
    as_user: int | None

    @property
    def who(self) -> str:
        if self.as_user is not None:
            return f"uid {self.as_user} outside and inside"
        if os.geteuid() == 0:
            return "uid 65534 inside, root without capabilities outside"
        return f"uid 65534 inside, uid {os.geteuid()} outside"

    def describe(self) -> str:
        return (f"bubblewrap {self.version} (user, mount, pid, network, ipc, uts namespaces; seccomp; {self.who})")


# ---------------------------------------------------------------------------------------------
# The seccomp filter

# Syscall numbers: x86_64 (asm/unistd_64.h) and the generic table of aarch64 (asm-generic/unistd.h).
_DENIED_SYSCALLS: dict[str, tuple[int | None, int | None]] = {
    "ptrace": (101, 117), "setns": (308, 268), "unshare": (272, 97), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "bpf": (321, 280), "perf_event_open": (298, 241), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218), "userfaultfd": (323, 282), "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264), "swapon": (167, 224), "swapoff": (168, 225), "reboot": (169, 142),
    "settimeofday": (164, 170), "clock_settime": (227, 112), "adjtimex": (159, 171), "clock_adjtime": (305, 266),
    "acct": (163, 89), "quotactl": (179, 60), "syslog": (103, 116), "iopl": (172, None), "ioperm": (173, None),
    "kcmp": (312, 272), "lookup_dcookie": (212, 18), "uselib": (134, None), "open_tree": (428, 428),
    "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432),
    "fspick": (433, 433), "mount_setattr": (442, 442), "pidfd_getfd": (438, 438), "process_madvise": (440, 440),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
}
_PROCESS_SYSCALLS = {"fork": (57, None), "vfork": (58, None)}
_CLONE, _CLONE3 = (56, 220), (435, 435)
_ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7), "arm64": (1, 0xC00000B7)}
_CLONE_NAMESPACES = 0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 \
    | 0x40000000  # NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_THREAD = 0x00010000
_X32_BIT = 0x40000000
_EPERM, _ENOSYS = 1, 38

# Classic BPF (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000


def seccomp_filter(processes: bool, machine: str | None = None) -> bytes:
    """The seccomp program (``struct sock_filter[]``, as ``bwrap --seccomp`` reads it) for this
    machine's architecture: the denied system calls fail with EPERM, ``clone3`` with ENOSYS
    (so that the C library falls back to ``clone``, whose flags a filter can read), ``clone``
    with a namespace flag with EPERM, and without ``processes`` also ``fork``, ``vfork`` and
    any ``clone`` that makes a process rather than a thread. Another architecture's calls are
    killed (their numbers differ)."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise SandboxUnavailable(f"the sandbox's seccomp filter knows no system calls of {machine}",
                                 code="sandbox_unavailable")
    column, audit_arch = _ARCHES[machine]
    program: list[tuple[int, object, object, int]] = []  # (code, jump if true, jump if false, k)

    def emit(code: int, k: int, true: object = 0, false: object = 0) -> None:
        program.append((code, true, false, k))

    emit(_LD_W_ABS, 4)  # seccomp_data.arch
    emit(_JEQ_K, audit_arch, 0, "kill")
    emit(_LD_W_ABS, 0)  # seccomp_data.nr
    if column == 0:
        emit(_JGE_K, _X32_BIT, "enosys", 0)  # the x32 ABI's numbers would slip past the checks
    denied = dict(_DENIED_SYSCALLS, **({} if processes else _PROCESS_SYSCALLS))
    for numbers in denied.values():
        if numbers[column] is not None:
            emit(_JEQ_K, numbers[column], "eperm", 0)
    emit(_JEQ_K, _CLONE3[column], "enosys", 0)
    emit(_JEQ_K, _CLONE[column], "clone", 0)
    emit(_RET_K, _RET_ALLOW)
    labels = {"clone": len(program)}
    emit(_LD_W_ABS, 16)  # the low word of args[0], clone's flags (little-endian)
    emit(_JSET_K, _CLONE_NAMESPACES, "eperm", 0)
    if not processes:
        emit(_JSET_K, _CLONE_THREAD, 0, "eperm")
    emit(_RET_K, _RET_ALLOW)
    labels.update(eperm=len(program), enosys=len(program) + 1, kill=len(program) + 2)
    emit(_RET_K, _RET_ERRNO | _EPERM)
    emit(_RET_K, _RET_ERRNO | _ENOSYS)
    emit(_RET_K, _RET_KILL_PROCESS)

    def offset(at: int, target: object) -> int:
        if isinstance(target, int):
            return target
        jump = labels[str(target)] - at - 1
        assert 0 <= jump < 256, jump
        return jump

    return b"".join(struct.pack("<HBBI", code, offset(i, true), offset(i, false), k)
                    for i, (code, true, false, k) in enumerate(program))


# ---------------------------------------------------------------------------------------------
# What the child sees


@dataclasses.dataclass
class Mounts:
    """The sandbox's file system as bwrap arguments, with the descriptors they name: sources
    are opened here (``O_PATH``) and bound by descriptor, so that ``bwrap`` running as nobody
    needs no right to walk to them (a Python under ``/root``)."""

    args: list[str] = dataclasses.field(default_factory=list)
    fds: list[int] = dataclasses.field(default_factory=list)
    bound: list[str] = dataclasses.field(default_factory=list)

    def bind(self, source: str, target: str | None = None, *, writable: bool = False) -> None:
        fd = os.open(source, os.O_PATH | os.O_CLOEXEC)
        self.fds.append(fd)
        self.args += ["--bind-fd" if writable else "--ro-bind-fd", str(fd), target or source]
        self.bound.append(target or source)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def _covered(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def on_gpu(device: str) -> bool:
    """Whether a sandbox device's tensors live on the GPU: ``cuda``, or ``cuda_interpreter``
    (Triton's interpreter on CUDA tensors); not ``interpreter``."""
    return device != "interpreter"


def readonly_sources(device: str, environ: Mapping[str, str]) -> list[str]:
    """The folders and files bound read-only besides the system's (``/usr``, ``/etc``'s few
    entries): Python's prefixes, the import roots, kernelgen's package folder and, on a GPU,
    the CUDA toolchain's. A path that holds the checkout, the home folder, the caches or the
    temporary folder is never bound whole (it would show ``.env``, results, cached records)."""
    import kernelgen

    package = Path(kernelgen.__file__).resolve().parent
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)), str(package)]
    candidates += _module_roots()
    if on_gpu(device):
        for name in TOOL_VARIABLES:
            value = environ.get(name, "")
            if value:
                candidates.append(value if os.path.isdir(value) else os.path.dirname(value))
        candidates += [p for p in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    from kernelgen.env import cache_root

    protected = [str(package.parent), str(Path.home()), str(cache_root()), tempfile.gettempdir()]
    chosen: list[str] = []
    for candidate in candidates:
        path = os.path.realpath(candidate)
        if not os.path.exists(path) or path == "/" or _covered(path, ["/usr", *chosen]):
            continue
        if any(_covered(p, [path]) for p in protected):  # it would hold the checkout, ~, a cache
            continue
        chosen = [c for c in chosen if not _covered(c, [path])] + [path]
    return chosen


def _module_roots() -> list[str]:
    """The folders torch, Triton and NumPy are imported from (found without importing them)."""
    import importlib.util

    roots = []
    for module in ("torch", "triton", "numpy"):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            roots.append(str(Path(spec.origin).resolve().parent))
    return roots


def system_mounts(mounts: Mounts) -> None:
    for root in SYSTEM_ROOTS:
        if os.path.islink(root):
            mounts.args += ["--symlink", os.readlink(root), root]
        elif os.path.isdir(root):
            mounts.bind(root)
    for entry in ETC_ENTRIES:
        path = os.path.join("/etc", entry)
        if os.path.exists(path):
            mounts.bind(path)


def gpu_device_nodes() -> list[str]:
    """The NVIDIA device nodes (``/dev/nvidia0``, ``nvidiactl``, ``nvidia-uvm``, ...)."""
    return sorted(p for p in glob.glob("/dev/nvidia*") if os.path.exists(p))


def wall_command(wall: Wall, *, job_dir: Path, device: str, command: Sequence[str], environ: Mapping[str, str],
                 seccomp_fd: int, info_fd: int, extra_readonly: Sequence[str] = ()) -> tuple[list[str], Mounts]:
    """The ``bwrap`` command line running ``command`` (whose paths are the child's view: the
    job folder at :data:`JOB_MOUNT`), and the mounts whose descriptors it needs passed."""
    mounts = Mounts()
    try:
        system_mounts(mounts)
        for source in readonly_sources(device, environ):
            mounts.bind(source)
        for path in extra_readonly:  # the GPU turn's lock file
            if os.path.exists(path):
                mounts.bind(path)
        mounts.bind(str(job_dir), JOB_MOUNT, writable=True)
    except BaseException:
        mounts.close()
        raise
    args = [wall.bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--hostname", "sandbox", "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev",
            "--size", str(TMP_BYTES), "--tmpfs", "/tmp", *mounts.args]
    if os.path.isdir("/sys"):
        args += ["--ro-bind", "/sys", "/sys"]
    if on_gpu(device):
        for node in gpu_device_nodes():
            args += ["--dev-bind", node, node]
    args += ["--remount-ro", "/", "--chdir", JOB_MOUNT, "--seccomp", str(seccomp_fd), "--info-fd", str(info_fd),
             "--", *command]
    return args, mounts


def unnamed_file() -> int:
    """A descriptor of a new regular file with no name in the temporary folder (what it holds
    can be written through the descriptor, never swapped for a link or a FIFO)."""
    directory = tempfile.gettempdir()
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except (OSError, AttributeError):  # a file system without O_TMPFILE
        fd, path = tempfile.mkstemp(dir=directory)
        os.unlink(path)
        return fd


def seccomp_file(processes: bool) -> int:
    """A descriptor of an unnamed file holding the seccomp program, at its start."""
    fd = unnamed_file()
    os.write(fd, seccomp_filter(processes))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# ---------------------------------------------------------------------------------------------
# Whether the wall can stand here


@functools.lru_cache(maxsize=1)
def find_wall() -> Wall | str:
    """The wall this machine allows, or why there is none (one line). Probed once per process:
    ``bwrap`` starts ``true`` with the namespaces and the filter of a CPU-mode case, first as
    nobody (when kernelgen is root), then as kernelgen's own user."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}"
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.split()[-1]
    except (OSError, subprocess.TimeoutExpired, IndexError) as error:
        return f"{bwrap} --version failed: {error}"
    # nobody outside only where it may open the GPU's device nodes (they are often 0666, not always)
    nobody = os.geteuid() == 0 and all(os.stat(node).st_mode & 0o006 == 0o006 for node in gpu_device_nodes()
                                       if not os.path.isdir(node))
    candidates = [SANDBOX_UID, None] if nobody else [None]
    why = ""
    for as_user in candidates:
        wall = Wall(bwrap, version, as_user)
        why = _probe(wall)
        if not why:
            return wall
    return f"bubblewrap {version} cannot start the sandbox here: {why}"


def _probe(wall: Wall) -> str:
    """'' when ``wall`` runs a process in its sandbox, else bwrap's complaint."""
    job = Path(tempfile.mkdtemp(prefix="kernelgen-wall-probe-"))
    seccomp = seccomp_file(processes=False)
    info_read, info_write = os.pipe()
    mounts = None
    try:
        if wall.as_user is not None:
            os.chown(job, wall.as_user, wall.as_user)
        command, mounts = wall_command(wall, job_dir=job, device="interpreter", command=["/bin/true"],
                                       environ={"PATH": "/usr/bin:/bin"}, seccomp_fd=seccomp, info_fd=info_write)
        run = subprocess.run(command, capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"},
                             pass_fds=(seccomp, info_write, *mounts.fds), **user_options(wall))
        if run.returncode == 0:
            return ""
        return (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
    except (OSError, subprocess.SubprocessError, SandboxUnavailable) as error:
        return str(error)
    finally:
        for fd in (seccomp, info_read, info_write):
            os.close(fd)
        if mounts is not None:
            mounts.close()
        shutil.rmtree(job, ignore_errors=True)


def user_options(wall: Wall) -> dict[str, object]:
    """``subprocess.Popen`` options that start ``bwrap`` as ``wall.as_user`` (set after fork in
    C, safe with threads)."""
    if wall.as_user is None:
        return {}
    return {"user": wall.as_user, "group": wall.as_user, "extra_groups": []}


def require_wall(unsafe: bool) -> Wall | None:
    """The wall, or None with ``unsafe`` (the audit hook alone); raises
    :class:`SandboxUnavailable` with one line when there is none and ``unsafe`` is false."""
    found = find_wall()
    if isinstance(found, Wall):
        return found
    if unsafe:
        return None
    raise SandboxUnavailable(f"the baseline runs model code only inside its sandbox, and {found} "
                             f"(on your own machine, {UNSAFE_FLAG} runs it without one)", code="sandbox_unavailable")
