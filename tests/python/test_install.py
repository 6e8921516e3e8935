"""The installed wheel: the console command runs the shipped executable, and the extension and
the executable load only libraries inside the wheel plus the system's C and C++ runtime."""

import os
import subprocess
import sys

import lazyattn
from lazyattn import _cli, _lazyattn

# What a manylinux wheel may take from the system (glibc, libstdc++, libgcc_s, the loader).
SYSTEM = ("linux-vdso", "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "libpthread.so",
          "libdl.so", "librt.so")


def resolved_libraries(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        line = line.strip()
        assert "not found" not in line, f"{path}: {line}"
        name = line.split()[0]
        target = line.split("=>", 1)[1].split("(")[0].strip() if "=>" in line else name
        libs.append((name, target))
    return libs


def test_only_wheel_and_system_runtime_libraries():
    package = os.path.dirname(lazyattn.__file__)
    wheel_libs = os.path.realpath(os.path.join(package, os.pardir, "lazyattn.libs"))
    for binary in (_lazyattn.__file__, _cli.executable()):
        bundled = 0
        for name, target in resolved_libraries(binary):
            inside = os.path.realpath(target).startswith(wheel_libs + os.sep)
            bundled += inside
            system = os.path.basename(name).startswith(SYSTEM)
            assert inside or system, f"{os.path.basename(binary)} loads {name} from {target}"
        assert bundled > 0, f"{binary}: no library of the wheel (not repaired?)"


def test_console_command_runs_every_subcommand():
    command = os.path.join(os.path.dirname(sys.executable), "lazyattn")
    help_text = subprocess.run([command, "--help"], capture_output=True, text=True, check=True).stdout
    for sub in ("serve", "generate", "precompute", "bench", "info", "tokenize", "demo"):
        assert sub in help_text
    info = subprocess.run([command, "info"], capture_output=True, text=True, check=True).stdout
    assert "smollm" in info.lower()
