#!/usr/bin/env python3
"""Makes PyPI's Linux torch wheel import and run on the CPU without its CUDA libraries.

PyPI ships one Linux x86-64 torch build, linked against CUDA, whose CUDA libraries come as
separate `nvidia-*` / `cuda-toolkit` packages (several GiB). The fine-tuning recipe runs on the
CPU here, so scripts/finetune/install.sh installs torch with `--no-deps` and this script writes,
into torch/lib (the last entry of torch's own RPATH, so these stubs are found only when the real
libraries are absent from the nvidia/ folders the wheel looks in first), one small shared
library per CUDA library torch links against. Each exports, with the symbol versions torch
asks for, every function torch imports from it; every stub returns an error (the CUDA runtime's
cudaErrorNoDevice, 100), cudaGetDeviceCount reports zero devices and the error-string
functions return a message, so `torch.cuda.is_available()` is False and any CUDA call fails
cleanly. CPU kernels never touch them.

A GPU host installs the real libraries instead (install.sh --device cuda) and has no stubs.

  torch_cpu_stubs.py TORCH_LIB_DIR        write the stubs (idempotent)
  torch_cpu_stubs.py TORCH_LIB_DIR --check  exit 1 if a CUDA library would be missing
"""
import os
import re
import subprocess
import sys
import tempfile

# Unversioned imports are assigned to a library by prefix (the versioned ones name theirs).
PREFIX_LIB = [
    (re.compile(r"^cusparseLt"), "libcusparseLt.so.0"),
    (re.compile(r"^cuFile"), "libcufile.so.0"),
    (re.compile(r"^nccl"), "libnccl.so.2"),
    (re.compile(r"^nvshmem"), "libnvshmem_host.so.3"),
    (re.compile(r"^cu[A-Z]"), "libcuda.so.1"),
]
CUDA_SONAME = re.compile(r"^lib(cu|nccl|nvrtc|nvshmem|nvToolsExt|nvJitLink|nvjitlink)")
MARKER = ".lazyattn-cpu-stub"


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def needed(path):
    out = run(["readelf", "-dW", path])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", out)


def symbols(path, defined):
    flag = "--defined-only" if defined else "--undefined-only"
    try:
        out = run(["nm", "-D", flag, path])
    except subprocess.CalledProcessError:
        return []
    return [line.split()[-1] for line in out.splitlines() if line.strip()]


def resolvable(soname, lib_dir):
    """True when the loader finds soname somewhere other than our own stubs."""
    if os.path.exists(os.path.join(lib_dir, soname)) and not os.path.exists(
            os.path.join(lib_dir, soname + MARKER)):
        return True
    site = os.path.dirname(os.path.dirname(lib_dir))
    for root, _dirs, files in os.walk(os.path.join(site, "nvidia")):
        if soname in files:
            return True
    return False


def c_body(name):
    if name == "cudaGetDeviceCount":
        return "int %s(int *n) { if (n) *n = 0; return 100; }" % name
    if re.search(r"Get(Error|Status)(String|Name)$", name):
        return 'const char *%s(void) { return "CUDA is not installed (CPU-only torch)"; }' % name
    return "long %s(void) { return 100; }" % name


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lib_dir = os.path.abspath(sys.argv[1])
    check = "--check" in sys.argv[2:]
    libs = [os.path.join(lib_dir, f) for f in sorted(os.listdir(lib_dir))
            if ".so" in f and not os.path.exists(os.path.join(lib_dir, f + MARKER))]
    pkg = os.path.dirname(lib_dir)
    libs += [os.path.join(pkg, f) for f in os.listdir(pkg) if f.endswith(".so")]

    missing = sorted({s for lib in libs for s in needed(lib)
                      if CUDA_SONAME.match(s) and not resolvable(s, lib_dir)})
    if check:
        stubbed = [s for s in missing if os.path.exists(os.path.join(lib_dir, s + MARKER))]
        sys.exit(0 if len(stubbed) == len(missing) else 1)
    if not missing:
        print("[torch_cpu_stubs] every CUDA library torch links against is present: no stubs")
        return

    defined = set()
    for lib in libs:
        defined.update(s.split("@")[0] for s in symbols(lib, True))
    per_lib = {s: set() for s in missing}
    versions = {s: None for s in missing}
    for lib in libs:
        for sym in symbols(lib, False):
            name, _, ver = sym.partition("@")
            ver = ver.lstrip("@")
            if ver in per_lib:
                per_lib[ver].add(name)
                versions[ver] = ver
            elif not ver and name not in defined:
                for pat, soname in PREFIX_LIB:
                    if pat.match(name) and soname in per_lib:
                        per_lib[soname].add(name)
                        break
    # Some versioned libraries tag their symbols with a node other than the soname (NVSHMEM).
    for lib in libs:
        for sym in symbols(lib, False):
            name, _, ver = sym.partition("@")
            ver = ver.lstrip("@")
            if ver and ver not in per_lib and not ver.startswith(("GLIBC", "GCC", "CXXABI", "OMP",
                                                                   "GOMP", "QUADMATH", "GFORTRAN")):
                for pat, soname in PREFIX_LIB:
                    if pat.match(name) and soname in per_lib:
                        per_lib[soname].add(name)
                        versions.setdefault(soname + "#extra", set()).add(ver)
                        break

    with tempfile.TemporaryDirectory() as tmp:
        for soname in missing:
            names = sorted(per_lib[soname])
            src = os.path.join(tmp, "stub.c")
            with open(src, "w") as f:
                f.write("/* CPU-only stand-in for %s (scripts/finetune/torch_cpu_stubs.py) */\n" % soname)
                for n in names:
                    f.write(c_body(n) + "\n")
            cmd = ["cc", "-shared", "-fPIC", "-O1", "-fno-builtin", "-w", "-o",
                   os.path.join(tmp, soname), src, "-Wl,-soname," + soname]
            nodes = []
            if versions.get(soname):
                nodes.append(versions[soname])
            nodes += sorted(versions.get(soname + "#extra", ()))
            if nodes:
                vs = os.path.join(tmp, "ver.map")
                with open(vs, "w") as f:
                    for node in nodes:
                        f.write("%s { global: *; };\n" % node)
                cmd.append("-Wl,--version-script=" + vs)
            subprocess.run(cmd, check=True)
            os.replace(os.path.join(tmp, soname), os.path.join(lib_dir, soname))
            open(os.path.join(lib_dir, soname + MARKER), "w").close()
            print("[torch_cpu_stubs] %s: %d functions" % (soname, len(names)))


if __name__ == "__main__":
    main()
